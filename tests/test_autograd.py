"""mx.autograd and mx.contrib.autograd: imperative gradients of NDArray operators (the
tape of ndarray/tape.py), and custom operators that use them inside forward/backward."""

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError
from mxmod.contrib import autograd as contrib_autograd


def test_backward_writes_or_adds_into_grad():
    x = mx.nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    assert x.grad.asnumpy().tolist() == [0, 0, 0]
    with mx.autograd.record():
        y = (x * x + 2 * x)[1:]  # indexing and arithmetic are recorded
        z = mx.nd.sum(mx.nd.exp(y) / 10)
    assert mx.autograd.is_recording() is False
    z.backward()
    e = np.exp([4.0 + 4.0, 9.0 + 6.0])
    want = [0.0] + list(e * (2 * np.array([2.0, 3.0]) + 2) / 10)
    np.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-5)

    with mx.autograd.record():
        y = x * 3
    y.backward(mx.nd.array([1.0, 0.0, 2.0]))  # head gradient; grad_req 'write' replaces
    assert x.grad.asnumpy().tolist() == [3, 0, 6]

    w = mx.nd.array([[1.0, 2.0], [3.0, 4.0]])
    w.attach_grad(grad_req="add")
    for _ in range(2):
        with mx.autograd.record():
            loss = mx.nd.dot(w, w).sum()
        loss.backward()
    one = np.ones((2, 2))
    want = one @ w.asnumpy().T + w.asnumpy().T @ one
    np.testing.assert_allclose(w.grad.asnumpy(), 2 * want)


def test_grad_returns_gradients_and_leaves_buffers():
    x = mx.nd.array([0.5, -1.0])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.relu(x) * mx.nd.sigmoid(x)
    (g,) = mx.autograd.grad([y], [x])
    s = 1 / (1 + np.exp(-0.5))
    np.testing.assert_allclose(g.asnumpy(), [s + 0.5 * s * (1 - s), 0.0], rtol=1e-6)
    assert x.grad.asnumpy().tolist() == [0, 0]
    with pytest.raises(MXNetError, match="does not depend on a marked variable"):
        mx.nd.ones((2,)).backward()


def test_record_runs_operators_in_training_mode():
    ones = mx.nd.ones((2000,))
    with mx.autograd.record():
        dropped = mx.nd.Dropout(ones, p=0.5)
        assert mx.autograd.is_training()
        with mx.autograd.pause():
            kept = mx.nd.Dropout(ones, p=0.5)
    assert 0.4 < float((dropped.asnumpy() == 0).mean()) < 0.6
    assert (kept.asnumpy() == 1).all()
    with mx.autograd.train_mode():
        assert not mx.autograd.is_recording() and mx.autograd.is_training()
    assert (mx.nd.Dropout(ones, p=0.5).asnumpy() == 1).all()  # inference outside


def test_function_with_a_hand_written_backward():
    class Sigmoid(mx.autograd.Function):
        def forward(self, x):
            y = 1 / (1 + mx.nd.exp(-x))
            self.save_for_backward(y)
            return y

        def backward(self, dy):
            (y,) = self.saved_tensors
            return dy * y * (1 - y) * 10  # scaled: proves this backward ran

    x = mx.nd.array([0.0, 1.0])
    x.attach_grad()
    with mx.autograd.record():
        y = Sigmoid()(x) * 2
    y.backward()
    s = 1 / (1 + np.exp(-np.array([0.0, 1.0])))
    np.testing.assert_allclose(x.grad.asnumpy(), 20 * s * (1 - s), rtol=1e-6)


def test_contrib_autograd_interface():
    x = mx.nd.array([1.0, 2.0])
    g = mx.nd.zeros((2,))
    contrib_autograd.mark_variables([x], [g])
    with contrib_autograd.train_section():
        y = x * x
    contrib_autograd.compute_gradient([y])
    assert g.asnumpy().tolist() == [2, 4]

    grads, out = contrib_autograd.grad_and_loss(lambda a, b: a * b + a)(x, mx.nd.array([3.0, 4.0]))
    assert [gr.asnumpy().tolist() for gr in grads] == [[4, 5], [1, 2]]
    assert out.asnumpy().tolist() == [4, 10]


def test_every_namespace_function_is_recorded():
    x = mx.nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.contrib.boolean_mask(x * 2, x > 1).sum() + mx.nd.maximum(x, 2.5).sum()
    y.backward()
    assert x.grad.asnumpy().tolist() == [0, 2, 3]
    with mx.autograd.record():
        outs = [x.relu(), x.sigmoid(), x.T, x[1:], x.reshape((3, 1)), mx.nd.linalg.sumlogdiag(
            mx.nd.diag(x).expand_dims(0))]  # fmt: skip
    assert all(o._tape is not None for o in outs)


class _PACT(mx.operator.CustomOp):
    """resnet.mxnet's PACT quantizer: recorded in forward, differentiated in backward."""

    def forward(self, is_train, req, in_data, out_data, aux):
        self.data, self.gamma = in_data[0].copy(), in_data[1].copy()
        self.data.attach_grad()
        self.gamma.attach_grad()
        with mx.autograd.record():
            clipped = mx.nd.minimum(mx.nd.relu(self.data), self.gamma.broadcast_to(self.data.shape))
            scale = 15 / self.gamma
            rounded = mx.nd.round(clipped * scale) / scale
            self.output = clipped + mx.nd.stop_gradient(rounded - clipped)
        self.assign(out_data[0], req[0], self.output)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.output.backward(out_grad[0])
        self.assign(in_grad[0], req[0], self.data.grad)
        self.assign(in_grad[1], req[1], self.gamma.grad)


@mx.operator.register("test_autograd_pact")
class _PACTProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def list_arguments(self):
        return ["data", "gamma"]

    def infer_shape(self, in_shape):
        return [in_shape[0], [1]], [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return _PACT()


def _train(quantizer):
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=6, name="fc")
    q = quantizer(fc, mx.sym.Variable("gamma", shape=(1,)))
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(q, num_hidden=3, name="fc2"), name="softmax")
    mod = mx.mod.Module(net)
    mod.bind([("data", (4, 5))], [("softmax_label", (4,))])
    rng = np.random.RandomState(0)
    params = {
        "fc_weight": rng.rand(6, 5) - 0.5,
        "fc_bias": np.zeros(6),
        "gamma": np.array([0.8]),
        "fc2_weight": rng.rand(3, 6) - 0.5,
        "fc2_bias": np.zeros(3),
    }
    mod.init_params(arg_params={k: mx.nd.array(v) for k, v in params.items()})
    mod.init_optimizer(optimizer_params={"learning_rate": 0.5})
    rng = np.random.RandomState(1)
    for _ in range(3):
        batch = mx.io.DataBatch(
            [mx.nd.array(rng.rand(4, 5) * 3)], [mx.nd.array(rng.randint(0, 3, 4))]
        )
        mod.forward_backward(batch)
        mod.update()
    return {k: v.asnumpy() for k, v in mod.get_params()[0].items()}


def test_custom_operator_recording_inside_trains_as_the_same_graph_of_symbols():
    """MXNet 1.9.1 trains this network to gamma 0.371052 (same script, its autograd)."""

    def symbolic(x, gamma):
        clipped = mx.sym.broadcast_minimum(mx.sym.relu(x), mx.sym.reshape(gamma, (1, 1)))
        scale = mx.sym.broadcast_div(mx.sym.ones((1, 1)) * 15, mx.sym.reshape(gamma, (1, 1)))
        rounded = mx.sym.broadcast_div(mx.sym.round(mx.sym.broadcast_mul(clipped, scale)), scale)
        return clipped + mx.sym.BlockGrad(rounded - clipped)

    custom = _train(lambda x, gamma: mx.sym.Custom(x, gamma, op_type="test_autograd_pact"))
    graph = _train(symbolic)
    for name in graph:
        np.testing.assert_allclose(custom[name], graph[name], rtol=1e-5, atol=1e-6)
    assert custom["gamma"][0] == pytest.approx(0.371052, abs=1e-5)


def test_inplace_writes_and_whole_copies_inside_record_as_in_mxnet():
    x = mx.nd.zeros((3,))
    y = mx.nd.ones((2,))
    y.attach_grad()
    with mx.autograd.record():
        with pytest.raises(MXNetError, match=r"Inplace operations \(\+=, -=, x\[:\]=, etc\)"):
            x[1:] = y  # a partial write: MXNet's target is input and output
        z = y * 2
        with pytest.raises(MXNetError, match="Inplace operations"):
            z += 1
        x[:] = 5  # nothing recorded on either side
        buf = mx.nd.zeros((2,))
        buf[:] = y * y * 3  # a whole-array copy is recorded
        total = buf.sum()
    assert x.asnumpy().tolist() == [5, 5, 5]
    total.backward()
    assert y.grad.asnumpy().tolist() == [6, 6] and y._fresh_grad


def test_backward_frees_the_graph_unless_retained():
    """As MXNet: a second backward through a freed graph raises, and its results become
    constants (an RNN's state carried to the next batch stops the gradient there)."""
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        h = x * x
    h.backward(retain_graph=True)
    h.backward()  # retained once: allowed, then freed
    with pytest.raises(MXNetError, match="graph was freed"):
        h.backward()
    with mx.autograd.record():
        z = h * x  # h is a constant now
    z.backward()
    assert x.grad.asnumpy().tolist() == [1, 4]


def test_out_arguments_and_grad_conventions():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    relu_out, exp_out = mx.nd.zeros((2,)), mx.nd.zeros((2,))
    with mx.autograd.record():
        mx.nd.relu(x * 3, out=relu_out)  # an operator of the table
        mx.nd.exp(x, out=exp_out)  # a hand-written mx.nd function
        total = relu_out + exp_out
    total.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 3 + np.exp([1.0, 2.0]), rtol=1e-6)
    unused = mx.nd.ones((2,))
    unused.attach_grad()
    with mx.autograd.record():
        y = x * 2
    grads = mx.autograd.grad(y, x, retain_graph=True)
    assert isinstance(grads, list) and grads[0].asnumpy().tolist() == [2, 2]
    with pytest.raises(MXNetError, match="variable 0 .* is unreachable from the heads"):
        mx.autograd.grad(y, [unused])
    frozen = mx.nd.ones((2,))
    frozen.attach_grad(grad_req="null")
    assert frozen.grad is None


def test_star_imports_give_mxnets_names():
    names: dict = {}
    exec("from mxmod.autograd import *\nfrom mxmod.contrib.autograd import *", names)
    for name in ("NDArray", "record", "Function", "train_section", "zeros_like", "array"):
        assert name in names


def test_batchnorm_moves_its_running_statistics_in_backward():
    """MXNet's BatchNorm updates moving_mean/moving_var in its backward pass: recorded and
    differentiated they move (momentum 0.5: half the batch statistics); a forward alone,
    in training or inference mode, leaves them."""
    x = mx.nd.array(np.arange(24, dtype=np.float32).reshape(4, 3, 2))
    gamma, beta = mx.nd.ones(3), mx.nd.zeros(3)
    mean, var = mx.nd.zeros(3), mx.nd.ones(3)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.BatchNorm(x, gamma, beta, mean, var, momentum=0.5)
        loss = (y * y).sum()
    np.testing.assert_array_equal(mean.asnumpy(), 0.0)
    loss.backward()
    data = x.asnumpy().transpose(1, 0, 2).reshape(3, -1)
    np.testing.assert_allclose(mean.asnumpy(), 0.5 * data.mean(axis=1), rtol=1e-6)
    np.testing.assert_allclose(var.asnumpy(), 0.5 + 0.5 * data.var(axis=1), rtol=1e-6)
    before = mean.asnumpy().copy()
    with mx.autograd.train_mode():
        mx.nd.BatchNorm(x, gamma, beta, mean, var, momentum=0.5)
    np.testing.assert_array_equal(mean.asnumpy(), before)
