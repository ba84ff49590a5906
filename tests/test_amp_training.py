"""Training AMP-converted networks through Module (float32 master weights with
multi_precision), and the dynamic loss scaler (MXNet's rule, host and device forms)."""

import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mxmod as mx
from mxmod.contrib import amp
from mxmod.contrib.amp import loss_scaler as ls
from mxmod.executor import loss_scale

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))
from amp_nets import NETS  # noqa: E402

RS = np.random.RandomState(0)
X = RS.randn(64, 6).astype("f4")
Y = (X[:, 0] > 0).astype("f4")


def _mlp():
    with mx.name.NameManager():
        return NETS["mlp"](mx)


def _train(sym, arg=None, aux=None, multi_precision=False):
    it = mx.io.NDArrayIter(X, Y, batch_size=16)
    mod = mx.mod.Module(sym, context=mx.cpu())
    mod.bind(it.provide_data, it.provide_label)
    mx.random.seed(1)
    mod.init_params(mx.init.Xavier(), arg_params=arg, aux_params=aux, allow_missing=True)
    mod.init_optimizer(
        optimizer="sgd", optimizer_params={"learning_rate": 0.5, "multi_precision": multi_precision}
    )
    metric = mx.metric.create("acc")
    for _ in range(3):
        it.reset()
        metric.reset()
        for b in it:
            mod.forward_backward(b)
            mod.update()
            mod.update_metric(metric, b.label)
    return mod, metric.get()[1]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_converted_symbol_trains_like_float32(dtype):
    _, acc32 = _train(_mlp())
    mod, acc = _train(amp.convert_symbol(_mlp(), dtype))
    assert acc >= acc32 - 0.05 and acc > 0.9
    arg, _ = mod.get_params()
    assert {np.dtype(v.dtype).name for v in arg.values()} == {"float32"}


def test_float16_parameters_keep_float32_masters():
    mod = mx.mod.Module(_mlp())
    mod.bind([("data", (16, 6))], [("softmax_label", (16,))])
    mod.init_params(mx.init.Xavier())
    arg, aux = mod.get_params()
    sym, arg16, aux16 = amp.convert_model(
        _mlp(), dict(arg), dict(aux), "float16", cast_optional_params=True
    )
    assert {np.dtype(v.dtype).name for v in arg16.values()} == {"float16"}
    mod, acc = _train(sym, arg16, aux16, multi_precision=True)
    assert acc > 0.9
    got, _ = mod.get_params()
    assert {np.dtype(v.dtype).name for v in got.values()} == {"float16"}
    leaves = jax.tree_util.tree_leaves(mod._exec_group.state.opt.state)
    assert any(leaf.dtype == jnp.float32 and leaf.shape == (16, 6) for leaf in leaves)


def test_host_loss_scaler_follows_mxnet():
    s = amp.LossScaler()
    assert s.loss_scale == 2.0**16
    assert s.has_overflow([np.array([1.0, np.inf])]) is True
    assert s.loss_scale == 2.0**16  # the new scale applies one step late, as MXNet's
    assert s.has_overflow([np.ones(2)]) is False
    assert s.loss_scale == 2.0**15
    s._scale_seq_len = 3
    for _ in range(2):  # the third finite step in a row doubles the next scale
        s.has_overflow([np.ones(2)])
    assert s.loss_scale == 2.0**15 and s._next_loss_scale == 2.0**16
    s.has_overflow([np.ones(2)])
    assert s.loss_scale == 2.0**16 and s._unskipped == 1


def test_device_rule_equals_host_rule(monkeypatch):
    monkeypatch.setattr(loss_scale, "WINDOW", 3)  # the device rule's module
    host = amp.LossScaler()
    host._scale_seq_len = 3
    state = ls.init_state()
    flags = [True, False, True, True, True, True, False, False, True, True, True, True]
    for finite in flags:
        host.has_overflow([np.ones(1) if finite else np.array([np.nan])])
        state = ls.next_state(state, jnp.bool_(finite))
        assert (float(state["scale"]), float(state["next"]), int(state["unskipped"])) == (
            host._loss_scale,
            host._next_loss_scale,
            host._unskipped,
        )
    twin = amp.LossScaler()
    twin.load_state(state)
    assert twin.loss_scale == host.loss_scale


def test_scaled_update_unscales_and_skips_overflow():
    def sgd(params, grads, opt_state, hyper):
        return (
            {k: params[k] - hyper["lr"] * grads[k] for k in params},
            {k: opt_state[k] + 1 for k in opt_state},
        )

    step = jax.jit(lambda p, g, o, h, s: ls.scaled_update(sgd, p, g, o, h, s))
    params = {"w": jnp.array([1.0, 2.0])}
    opt = {"w": jnp.zeros(())}
    state = ls.init_state()
    scale = float(state["scale"])
    grads = {"w": jnp.array([0.5, -1.0]) * scale}
    p2, o2, s2, finite = step(params, grads, opt, {"lr": 0.1}, state)
    assert bool(finite)
    np.testing.assert_allclose(p2["w"], [0.95, 2.1], rtol=1e-6)
    assert float(o2["w"]) == 1.0 and int(s2["unskipped"]) == 1
    bad = {"w": jnp.array([jnp.inf, 1.0])}
    p3, o3, s3, finite = step(p2, bad, o2, {"lr": 0.1}, s2)
    assert not bool(finite)
    np.testing.assert_array_equal(p3["w"], p2["w"])
    assert float(o3["w"]) == 1.0 and float(s3["next"]) == scale / 2


def _fit_scaled(sym, start=None, steps_per_dispatch=1, metric="acc"):
    it = mx.io.NDArrayIter(X, Y, batch_size=16)
    fixed = ["amp_loss_scale"] if "amp_loss_scale" in sym.list_arguments() else None
    mod = mx.mod.Module(sym, fixed_param_names=fixed)
    mod.bind(it.provide_data, it.provide_label)
    scaler = amp.init_trainer(mod) if fixed else None
    if start is not None:
        scaler._loss_scale = scaler._next_loss_scale = start
    mx.random.seed(1)
    mod.init_params(mx.init.Xavier())
    init = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
    mod.fit(
        it,
        num_epoch=3,
        optimizer_params={"learning_rate": 0.5},
        eval_metric=metric,
        steps_per_dispatch=steps_per_dispatch,
    )
    arg = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
    return mod, scaler, init, arg


@pytest.mark.parametrize("n", [1, pytest.param(3, marks=pytest.mark.slow)])
def test_fit_with_loss_scaling_equals_unscaled_float32(n):
    # a power-of-two scale times float32 gradients, then divided out: bit for bit
    _, _, _, plain = _fit_scaled(_mlp())
    _, scaler, _, scaled = _fit_scaled(amp.insert_loss_scale(_mlp()), steps_per_dispatch=n)
    for k in plain:
        np.testing.assert_array_equal(plain[k], scaled[k], err_msg=k)
    assert scaled["amp_loss_scale"].tolist() == [1.0]  # the fed scale is not stored
    assert scaler.loss_scale == 2.0**16 and scaler._unskipped == 12


def test_fit_skips_overflowing_float16_steps_and_lowers_the_scale():
    sym = amp.insert_loss_scale(amp.convert_symbol(_mlp(), "float16"))
    _, scaler, init, arg = _fit_scaled(sym, start=2.0**40)
    assert scaler.loss_scale == 2.0**29 and scaler._unskipped == 0  # 12 skipped steps
    for k in init:
        np.testing.assert_array_equal(init[k], arg[k], err_msg=k)
    mod, scaler, _, arg = _fit_scaled(sym, start=2.0**20)
    assert scaler.loss_scale < 2.0**20 and scaler._unskipped > 0
    assert mod.score(mx.io.NDArrayIter(X, Y, batch_size=16), "acc")[0][1] > 0.9


def test_loss_scaling_errors():
    sym = amp.insert_loss_scale(_mlp())
    with pytest.raises(ValueError, match="already has an input 'amp_loss_scale'"):
        amp.insert_loss_scale(sym)
    with pytest.raises(ValueError, match="has no loss head"):
        amp.insert_loss_scale(mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden=2))
    with pytest.raises(ValueError, match="has no 'amp_loss_scale' argument"):
        amp.init_trainer(mx.mod.Module(_mlp()))
    with pytest.raises(ValueError, match=r"fixed_param_names=\['amp_loss_scale'\]"):
        amp.init_trainer(mx.mod.Module(sym))
    custom = mx.metric.CustomMetric(lambda label, pred: 0.0)
    with pytest.raises(
        ValueError,
        match="amp.init_trainer.module. scales the loss inside compiled steps.*CustomMetric",
    ):
        _fit_scaled(sym, metric=custom)


def test_hand_written_loop_with_loss_scaling_is_refused():
    # the scaler lives in fit's compiled steps: Module.update() says so instead of
    # training without scaling
    sym = amp.insert_loss_scale(_mlp())
    it = mx.io.NDArrayIter(X, Y, batch_size=16)
    mod = mx.mod.Module(sym, fixed_param_names=["amp_loss_scale"])
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer_params={"learning_rate": 0.5})
    amp.init_trainer(mod)
    before = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
    mod.forward_backward(next(iter(it)))
    with pytest.raises(mx.base.MXNetError, match=r"Module.update\(\).*train with module.fit"):
        mod.update()
    after = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
    for k in before:
        np.testing.assert_array_equal(before[k], after[k], err_msg=k)
    it.reset()
    mod.fit(it, num_epoch=1, optimizer_params={"learning_rate": 0.5})  # fit still trains
    scaler = mod._amp_scaler
    assert scaler.loss_scale == 2.0**16 and scaler._unskipped == 4


def test_loss_scaling_with_a_batch_of_another_shape():
    # a batch the block cannot take runs as a scaled block of one after the reshape
    class Iter(mx.io.NDArrayIter):  # the 3rd batch has 8 rows instead of 16
        def next(self):
            b = super().next()
            if self.cursor == 32:
                b = mx.io.DataBatch([b.data[0][:8]], [b.label[0][:8]], pad=0)
            return b

    got = []
    for sym in (_mlp(), amp.insert_loss_scale(_mlp())):
        scaled = "amp_loss_scale" in sym.list_arguments()
        mod = mx.mod.Module(sym, fixed_param_names=["amp_loss_scale"] if scaled else None)
        it = Iter(X, Y, batch_size=16)
        mod.bind(it.provide_data, it.provide_label)
        scaler = amp.init_trainer(mod) if scaled else None
        mx.random.seed(1)
        mod.init_params(mx.init.Xavier())
        mod.fit(it, num_epoch=2, optimizer_params={"learning_rate": 0.5}, steps_per_dispatch=2)
        got.append({k: v.asnumpy() for k, v in mod.get_params()[0].items()})
    for k in got[0]:
        # power-of-two scaling is exact; newer jax may fuse the unscale differently (1 ulp)
        np.testing.assert_allclose(got[0][k], got[1][k], rtol=1e-6, atol=0, err_msg=k)
    assert scaler.loss_scale == 2.0**16 and scaler._unskipped == 8
