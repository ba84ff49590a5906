"""SequentialModule, PythonModule and PythonLossModule: chaining, gradients through the
chain, take_labels/auto_wiring, a bare PythonModule on its own, and errors."""

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

BATCH = 8


def toy(n=64, d=6, classes=3, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.randn(n, d).astype("float32")
    return x, (x @ rng.randn(d, classes)).argmax(1).astype("float32")


def first_layer():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=10, name="fc1")
    return mx.mod.Module(mx.sym.Activation(net, act_type="relu", name="relu1"), label_names=None)


def head(data_name="data"):
    net = mx.sym.FullyConnected(mx.sym.Variable(data_name), num_hidden=3, name="fc2")
    return mx.mod.Module(mx.sym.SoftmaxOutput(net, name="softmax"), data_names=[data_name])


def whole():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=10, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc2")
    return mx.mod.Module(mx.sym.SoftmaxOutput(net, name="softmax"))


def softmax_grad(scores, labels):
    p = scores.asnumpy()
    p = np.exp(p - p.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    p[np.arange(len(p)), labels.asnumpy().astype(int)] -= 1
    return p


def start_params():
    rng = np.random.RandomState(1)
    return {
        "fc1_weight": mx.nd.array(rng.randn(10, 6) * 0.3),
        "fc1_bias": mx.nd.zeros((10,)),
        "fc2_weight": mx.nd.array(rng.randn(3, 10) * 0.3),
        "fc2_bias": mx.nd.zeros((3,)),
    }


def fit(mod, epochs=3):
    x, y = toy()
    it = mx.io.NDArrayIter(x, y, batch_size=BATCH)
    mod.fit(
        it,
        num_epoch=epochs,
        arg_params=start_params(),
        aux_params={},
        optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
    )
    return {k: v.asnumpy() for k, v in mod.get_params()[0].items()}


def test_two_modules_train_like_one():
    seq = mx.mod.SequentialModule()
    seq.add(first_layer()).add(head(), take_labels=True, auto_wiring=True)
    got, want = fit(seq), fit(whole())
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)
    assert seq.data_names == ["data"] and seq.output_names == ["softmax_output"]
    assert seq.output_shapes == [("softmax_output", (BATCH, 3))]
    assert seq.label_shapes[0][0] == "softmax_label"


def test_python_loss_module_at_the_end_trains_like_softmax_output():
    scores = mx.mod.Module(
        mx.sym.FullyConnected(
            mx.sym.Activation(
                mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=10, name="fc1"),
                act_type="relu",
            ),
            num_hidden=3,
            name="fc2",
        ),
        label_names=None,
    )
    seq = mx.mod.SequentialModule()
    seq.add(scores).add(
        mx.mod.PythonLossModule(grad_func=softmax_grad), take_labels=True, auto_wiring=True
    )
    got, want = fit(seq, epochs=2), fit(whole(), epochs=2)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-5, err_msg=name)


def test_bare_python_loss_module_fits_scores_and_predicts():
    x = np.random.RandomState(0).randn(16, 3).astype("float32")
    y = x.argmax(1).astype("float32")
    it = mx.io.NDArrayIter(x, y, batch_size=BATCH)
    mod = mx.mod.PythonLossModule(grad_func=softmax_grad)
    mod.fit(it, num_epoch=1, eval_metric="acc")
    assert mod.binded and mod.params_initialized and mod.optimizer_initialized
    assert mod.score(it, "acc") == [("accuracy", 1.0)]
    np.testing.assert_array_equal(mod.predict(it).asnumpy(), x)
    mod.forward(mx.io.DataBatch([mx.nd.array(x[:8])], [mx.nd.array(y[:8])]), is_train=True)
    mod.backward()
    np.testing.assert_allclose(
        mod.get_input_grads()[0].asnumpy(),
        softmax_grad(mx.nd.array(x[:8]), mx.nd.array(y[:8])),
        rtol=1e-6,
    )


def test_input_gradients_flow_to_the_first_layer():
    seq = mx.mod.SequentialModule()
    seq.add(first_layer()).add(head(), take_labels=True, auto_wiring=True)
    seq.bind([("data", (BATCH, 6))], [("softmax_label", (BATCH,))], inputs_need_grad=True)
    seq.init_params(arg_params=start_params())
    ref = whole()
    ref.bind([("data", (BATCH, 6))], [("softmax_label", (BATCH,))], inputs_need_grad=True)
    ref.init_params(arg_params=start_params())
    x, y = toy(BATCH)
    batch = mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)])
    for m in (seq, ref):
        m.forward(batch, is_train=True)
        m.backward()
    np.testing.assert_allclose(
        seq.get_input_grads()[0].asnumpy(), ref.get_input_grads()[0].asnumpy(), rtol=1e-5, atol=1e-7
    )
    np.testing.assert_allclose(
        seq.get_outputs()[0].asnumpy(), ref.get_outputs()[0].asnumpy(), rtol=1e-6
    )


def test_layers_without_take_labels_get_no_labels():
    seq = mx.mod.SequentialModule()
    seq.add(first_layer()).add(
        mx.mod.PythonLossModule(data_names=["relu1_output"]), auto_wiring=False
    )
    seq.bind([("data", (BATCH, 6))], [("softmax_label", (BATCH,))], for_training=False)
    assert seq.label_shapes is None
    seq.init_params(mx.init.One())
    x, y = toy(BATCH)
    metric = mx.metric.create("acc")
    seq.forward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]), is_train=False)
    seq.update_metric(metric, [mx.nd.array(y)])
    assert metric.num_inst == 0
    assert seq.get_outputs()[0].shape == (BATCH, 10)


def test_adding_a_module_resets_the_stages():
    seq = mx.mod.SequentialModule().add(whole(), take_labels=True)
    seq.bind([("data", (BATCH, 6))], [("softmax_label", (BATCH,))])
    seq.init_params()
    assert seq.binded and seq.params_initialized
    seq.add(mx.mod.PythonLossModule(data_names=["softmax_output"]))
    assert not seq.binded and not seq.params_initialized


# ------------------------------------------------------------------ errors
def test_sequential_errors():
    with pytest.raises(MXNetError, match='Unknown meta "take_label", a typo'):
        mx.mod.SequentialModule().add(whole(), take_label=True)
    with pytest.raises(TypeError, match="takes a module"):
        mx.mod.SequentialModule().add(mx.sym.Variable("x"))
    with pytest.raises(MXNetError, match="empty SequentialModule"):
        mx.mod.SequentialModule().bind([("data", (BATCH, 6))])
    seq = mx.mod.SequentialModule().add(first_layer()).add(head(), take_labels=True)
    with pytest.raises(MXNetError, match="inputs_need_grad=True needs for_training"):
        seq.bind([("data", (BATCH, 6))], for_training=False, inputs_need_grad=True)
    with pytest.raises(MXNetError, match="bind"):
        seq.init_params()
    dup = mx.mod.SequentialModule().add(whole()).add(whole(), take_labels=True, auto_wiring=True)
    with pytest.raises(MXNetError, match=r"(?s)Duplicated parameter names.*'fc1_weight'"):
        dup.bind([("data", (BATCH, 6))], [("softmax_label", (BATCH,))])
        dup.init_params()
    wiring = (
        mx.mod.SequentialModule()
        .add(first_layer())
        .add(
            mx.mod.Module(
                mx.sym.Group([mx.sym.Variable("a"), mx.sym.Variable("b")]),
                data_names=["a", "b"],
                label_names=None,
            ),
            auto_wiring=True,
        )
    )
    with pytest.raises(MXNetError, match=r"auto_wiring layer 1.*\['a', 'b'\].*1 outputs"):
        wiring.bind([("data", (BATCH, 6))])


def test_python_module_errors():
    with pytest.raises(MXNetError, match="exactly one data name"):
        mx.mod.PythonLossModule(data_names=("a", "b"))
    with pytest.raises(TypeError, match="grad_func must be callable"):
        mx.mod.PythonLossModule(grad_func=3)
    loss = mx.mod.PythonLossModule()
    with pytest.raises(MXNetError, match=r"data_names are \['data'\]"):
        loss.bind([("scores", (BATCH, 3))])
    with pytest.raises(NotImplementedError, match="grad_req='write'"):
        loss.bind([("data", (BATCH, 3))], grad_req="add")
    loss.bind([("data", (BATCH, 3))], [("softmax_label", (BATCH,))])
    loss.forward(mx.io.DataBatch([mx.nd.ones((BATCH, 3))], [mx.nd.zeros((BATCH,))]))
    with pytest.raises(NotImplementedError, match="without grad_func"):
        loss.backward()
    with pytest.raises(MXNetError, match="out_grads should be None"):
        loss.backward(out_grads=[mx.nd.ones((BATCH, 3))])
    with pytest.raises(RuntimeError, match="presliced"):
        loss.update_metric(mx.metric.create("acc"), [[mx.nd.zeros((BATCH,))]], pre_sliced=True)
    with pytest.raises(NotImplementedError, match="install_monitor"):
        loss.install_monitor(None)
    with pytest.raises(NotImplementedError, match="_compute_output_shapes"):
        mx.mod.PythonModule(["data"], None, ["out"]).bind([("data", (BATCH, 3))])
