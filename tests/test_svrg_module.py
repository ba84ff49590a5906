"""mx.contrib.svrg_optimization: SVRGModule against a numpy SVRG reference (several
full-gradient passes), on two devices, the optimizer wrapper, and errors."""

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError
from mxmod.contrib.svrg_optimization import SVRGModule, SVRGOptimizer

W0, B0 = np.array([[0.1, 0.2, -0.1]]), np.zeros(1)


def data(n=40, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.randn(n, 3).astype("float32")
    return x, (x @ np.array([1.0, -2.0, 0.5]) + 0.3).astype("float32")


def symbol():
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=1, name="fc")
    return mx.sym.LinearRegressionOutput(fc, mx.sym.Variable("lin_reg_label"), name="lro")


def fit(epochs, freq, context=None, lr=0.025, momentum=0.5, bs=8):
    x, y = data()
    it = mx.io.NDArrayIter(x, y, batch_size=bs, label_name="lin_reg_label")
    mod = SVRGModule(
        symbol(),
        data_names=["data"],
        label_names=["lin_reg_label"],
        update_freq=freq,
        context=context or mx.cpu(),
    )
    mod.fit(
        it,
        eval_metric="mse",
        optimizer="sgd",
        num_epoch=epochs,
        optimizer_params={"learning_rate": lr, "momentum": momentum},
        arg_params={"fc_weight": mx.nd.array(W0), "fc_bias": mx.nd.array(B0)},
    )
    return mod


def reference(epochs, freq, lr=0.025, momentum=0.5, bs=8):
    """SVRG in numpy: g(w) - g(w_snap) + mean over batches of g(w_snap); MXNet's SGD."""
    x, y = (a.astype("float64") for a in data())
    batches = [(x[i : i + bs], y[i : i + bs]) for i in range(0, len(x), bs)]

    def grad(w, b, xb, yb):
        r = xb @ w[0] + b[0] - yb
        return np.array([r @ xb]), np.array([r.sum()])

    w, b = W0.copy(), B0.copy()
    mw, mb = np.zeros_like(w), np.zeros_like(b)
    for epoch in range(epochs):
        if epoch % freq == 0:
            sw, sb = w.copy(), b.copy()
            fulls = [grad(sw, sb, xb, yb) for xb, yb in batches]
            fw = sum(f[0] for f in fulls) / len(batches)
            fb = sum(f[1] for f in fulls) / len(batches)
        for xb, yb in batches:
            gw, gb = grad(w, b, xb, yb)
            hw, hb = grad(sw, sb, xb, yb)
            gw, gb = gw - hw + fw, gb - hb + fb
            mw = momentum * mw - lr * gw / bs
            mb = momentum * mb - lr * gb / bs
            w, b = w + mw, b + mb
    return w, b


def test_matches_numpy_svrg_over_several_full_gradient_passes():
    mod = fit(epochs=4, freq=2)
    w, b = reference(epochs=4, freq=2)
    arg = mod.get_params()[0]
    np.testing.assert_allclose(arg["fc_weight"].asnumpy(), w, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(arg["fc_bias"].asnumpy(), b, rtol=1e-4, atol=1e-6)
    assert isinstance(mod._optimizer, SVRGOptimizer)
    assert mod._exec_group.state.opt.fused  # the wrapped SGD runs in the compiled step


def test_full_gradient_recomputed_every_update_freq_epochs(monkeypatch):
    calls = []
    orig = SVRGModule.update_full_grads
    monkeypatch.setattr(
        SVRGModule, "update_full_grads", lambda self, it: calls.append(1) or orig(self, it)
    )
    fit(epochs=5, freq=2)
    assert len(calls) == 3  # epochs 0, 2, 4


def test_two_devices_equal_one():
    one = fit(epochs=3, freq=2).get_params()[0]
    two = fit(epochs=3, freq=2, context=[mx.cpu(0), mx.cpu(1)]).get_params()[0]
    for name in one:
        np.testing.assert_allclose(
            two[name].asnumpy(), one[name].asnumpy(), rtol=1e-5, atol=1e-6, err_msg=name
        )


def test_optimizer_wrapper_routes_full_keys_to_assignment():
    opt = mx.optimizer.create(
        "_SVRGOptimizer",
        default_optimizer="sgd",
        learning_rate=0.5,
        param_idx2name={0: "w", 1: "w_full"},
    )
    w, g = mx.nd.ones((2,)), mx.nd.full((2,), 3.0)
    opt.update(1, w, g, opt.create_state(1, w))
    np.testing.assert_array_equal(w.asnumpy(), [3.0, 3.0])  # assigned
    opt.update(0, w, g, opt.create_state(0, w))
    np.testing.assert_allclose(w.asnumpy(), [1.5, 1.5])  # SGD step
    with pytest.raises(TypeError, match="default_optimizer"):
        mx.optimizer.create("_SVRGOptimizer", default_optimizer=3)
    with pytest.raises(KeyError, match="param_idx2name"):
        opt.update(7, w, g, None)


def test_errors():
    with pytest.raises(TypeError, match="update_freq in SVRGModule must be an integer"):
        SVRGModule(symbol(), label_names=["lin_reg_label"])
    with pytest.raises(ValueError, match="positive integer"):
        SVRGModule(symbol(), label_names=["lin_reg_label"], update_freq=0)
    mod = SVRGModule(symbol(), label_names=["lin_reg_label"], update_freq=1)
    with pytest.raises(MXNetError, match="bind"):
        mod.init_optimizer()
    mod.bind([("data", (8, 3))], [("lin_reg_label", (8,))], for_training=False)
    mod.init_params()
    with pytest.raises(MXNetError, match="update_full_grads.*init_optimizer"):
        mod.update_full_grads(mx.io.NDArrayIter(*data(), batch_size=8, label_name="lin_reg_label"))


def test_plain_forward_trains_the_snapshot_too_and_param_dict_holds_full_grads():
    x, y = data()
    it = mx.io.NDArrayIter(x, y, batch_size=8, label_name="lin_reg_label")
    mod = SVRGModule(symbol(), label_names=["lin_reg_label"], update_freq=2)
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(mx.init.One())
    mod.init_optimizer(optimizer_params={"learning_rate": 0.01})
    mod._mod_aux.set_params(*mod.get_params())
    batch = next(iter(it))
    mod.forward(batch)  # is_train=None: the module trains, so the snapshot runs as well
    mod.backward()
    mod.update()
    total = np.zeros((1, 3), "float32")
    it.reset()
    for b in it:
        mod.forward(b)
        mod.backward()
        total += mod._exec_group.grad_arrays[0][0].asnumpy()
    mod.update_full_grads(it)
    np.testing.assert_allclose(mod._param_dict[0]["fc_weight"].asnumpy(), total / 5, rtol=1e-5)


def test_accumulate_kvstore_sums_device_gradients_into_the_full_gradient():
    x, y = data()
    it = mx.io.NDArrayIter(x, y, batch_size=8, label_name="lin_reg_label")
    mod = SVRGModule(symbol(), label_names=["lin_reg_label"], update_freq=2)
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params()
    with pytest.raises(MXNetError, match="needs a kvstore"):
        mod.init_optimizer(kvstore="local")
        mod._accumulate_kvstore("fc_weight", [mx.nd.ones((1, 3))])
    mod.init_optimizer(kvstore=mx.kv.create("local"), force_init=True)
    parts = [mx.nd.ones((1, 3)) for _ in range(3)]
    mod._accumulate_kvstore("fc_weight", parts)
    assert parts[0].asnumpy().tolist() == [[3, 3, 3]]
    assert mod._param_dict[0]["fc_weight"].asnumpy().tolist() == [[3, 3, 3]]


def test_fit_is_basemodule_fit_with_an_epoch_hook():
    assert SVRGModule.fit is mx.mod.BaseModule.fit
    resets = []
    x, y = data()

    class CountingIter(mx.io.NDArrayIter):
        def reset(self):
            resets.append(1)
            super().reset()

    it = CountingIter(x, y, batch_size=8, label_name="lin_reg_label")
    resets.clear()  # the constructor's own reset
    mod = SVRGModule(symbol(), label_names=["lin_reg_label"], update_freq=2)
    mod.fit(it, eval_metric="mse", num_epoch=3, optimizer_params={"learning_rate": 0.01})
    # MXNet's SVRG loop: each epoch rewinds its data at the start; a full-gradient pass
    # (epochs 0 and 2) rewinds it once more before
    assert len(resets) == 2 + 1 + 2
