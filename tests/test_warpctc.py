"""WarpCTC, the loss head of MXNet's warp-ctc plugin (deepspeech.mxnet, CRNN OCR): softmax
forward, the CTC gradient of each sample's -log p(label) in backward (0 is the blank and is
dropped wherever it stands in a label row). Checked against contrib.ctc_loss, whose values
match MXNet 1.9.1 (tests/test_ctc*)."""

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

T, N, C, L = 6, 3, 5, 4


def _warpctc_grads(x, labels, head=None):
    s = mx.sym.WarpCTC(
        data=mx.sym.Variable("data"), label=mx.sym.Variable("label"),
        label_length=L, input_length=T,
    )  # fmt: skip
    assert s.infer_shape(data=(T * N, C))[0] == [(T * N, C), (N * L,)]
    ex = s.simple_bind(mx.cpu(), data=(T * N, C), label=(N * L,))
    ex.arg_dict["data"][:] = x
    ex.arg_dict["label"][:] = labels
    ex.forward(is_train=True)
    ex.backward(head)
    return ex.outputs[0].asnumpy(), ex.grad_dict["data"].asnumpy()


def test_softmax_forward_and_the_ctc_gradient_of_compacted_labels():
    rng = np.random.RandomState(0)
    x = rng.randn(T * N, C).astype(np.float32)
    labels = np.array([1, 2, 0, 0, 3, 0, 3, 4, 0, 0, 0, 2])  # 0s anywhere are dropped
    out, grad = _warpctc_grads(x, labels)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5)
    # the same sequences as rows padded at the end, through contrib.ctc_loss (T, N, C)
    padded = np.array([[1, 2, 0], [3, 3, 4], [2, 0, 0]])
    loss = mx.sym.MakeLoss(
        mx.sym.sum(mx.sym.contrib.ctc_loss(mx.sym.Variable("d"), mx.sym.Variable("l")))
    )
    ex = loss.simple_bind(mx.cpu(), d=(T, N, C), l=(N, 3))
    ex.arg_dict["d"][:] = x.reshape(T, N, C)
    ex.arg_dict["l"][:] = padded
    ex.forward(is_train=True)
    ex.backward()
    np.testing.assert_allclose(grad, ex.grad_dict["d"].asnumpy().reshape(T * N, C), atol=1e-6)
    # a loss head: the incoming gradient is not read
    _, again = _warpctc_grads(x, labels, mx.nd.full((T * N, C), 7.0))
    np.testing.assert_array_equal(again, grad)


def test_training_through_module_lowers_the_ctc_loss():
    data = mx.sym.Variable("data")  # (N, T, 8) features
    x = mx.sym.Reshape(mx.sym.transpose(data, axes=(1, 0, 2)), shape=(-3, 0))
    pred = mx.sym.FullyConnected(x, num_hidden=C, name="fc")
    label = mx.sym.Reshape(mx.sym.Variable("label"), shape=(-1,))
    net = mx.sym.WarpCTC(data=pred, label=label, label_length=L, input_length=T)
    rng = np.random.RandomState(1)
    feats = rng.rand(N, T, 8).astype(np.float32)
    labels = np.array([[1, 2, 0, 0], [3, 3, 4, 0], [2, 0, 0, 0]], dtype=np.float32)
    mod = mx.mod.Module(net, data_names=["data"], label_names=["label"])
    mod.bind([("data", (N, T, 8))], [("label", (N, L))])
    mx.random.seed(3)  # the same start whatever ran before in this process
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer="adam", optimizer_params={"learning_rate": 0.05})
    batch = mx.io.DataBatch([mx.nd.array(feats)], [mx.nd.array(labels)])

    def nll():
        mod.forward(batch, is_train=False)
        probs = mod.get_outputs()[0].asnumpy().reshape(T, N, C)
        s = mx.sym.contrib.ctc_loss(mx.sym.Variable("d"), mx.sym.Variable("l"))
        ex = s.simple_bind(mx.cpu(), d=(T, N, C), l=(N, L))
        ex.arg_dict["d"][:] = np.log(probs)
        ex.arg_dict["l"][:] = labels
        return float(ex.forward()[0].asnumpy().sum())

    before = nll()
    for _ in range(80):
        mod.forward_backward(batch)
        mod.update()
    assert nll() < 0.5 * before  # 0.17-0.31 over initial seeds


def test_geometry_errors():
    d, lab = mx.sym.Variable("data"), mx.sym.Variable("label")
    with pytest.raises(MXNetError, match="input_length > 0 and label_length > 0"):
        mx.sym.WarpCTC(data=d, label=lab, label_length=2).infer_shape(data=(6, 3))
    with pytest.raises(MXNetError, match="not a multiple of input_length=4"):
        mx.sym.WarpCTC(data=d, label=lab, label_length=2, input_length=4).infer_shape(data=(6, 3))
