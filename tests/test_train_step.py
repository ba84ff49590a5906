"""The one training step (mxmod/executor/step.py) without a Module: a hand-made StepState
stepped by the jitted train_step gives Module.fit's parameters; the same step scanned over
several batches and with 2-bit compression as its reduction."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mxmod as mx
from mxmod.executor import compiled_for
from mxmod.executor.placement import OneDevice
from mxmod.executor.programs import Programs
from mxmod.executor.step import SUM, Batch, StepState, TwoBit, optimizer_rule

RS = np.random.RandomState(7)
X = RS.randn(48, 6).astype("f4")
Y = RS.randint(0, 3, 48).astype("f4")
BATCH = 16


def _net():
    with mx.name.NameManager():
        d = mx.sym.Variable("data")
        h = mx.sym.FullyConnected(d, num_hidden=8, name="fc1")
        h = mx.sym.Activation(h, act_type="tanh")
        h = mx.sym.FullyConnected(h, num_hidden=3, name="fc2")
        return mx.sym.SoftmaxOutput(h, name="softmax")


def _init_params(sym):
    shapes, _, _ = sym.infer_shape(data=(BATCH, 6), softmax_label=(BATCH,))
    rs = np.random.RandomState(1)
    return {
        n: (rs.randn(*s) * 0.3).astype("f4")
        for n, s in zip(sym.list_arguments(), shapes)
        if n not in ("data", "softmax_label")
    }


def _module_fit(sym, init, num_epoch=1, kvstore="local"):
    mod = mx.mod.Module(sym, context=mx.cpu())
    mod.fit(
        mx.io.NDArrayIter(X, Y, batch_size=BATCH),
        num_epoch=num_epoch,
        optimizer="sgd",
        optimizer_params={"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-3},
        arg_params={n: mx.nd.array(v) for n, v in init.items()},
        kvstore=kvstore,
    )
    return {n: v.asnumpy() for n, v in mod.get_params()[0].items()}


def _programs(sym):
    graph = compiled_for(sym).graph
    diff = [n for n in sym.list_arguments() if n not in ("data", "softmax_label")]
    axes = {"data": 0, "softmax_label": 0}
    return Programs(graph, OneDevice(jax.devices()[0]), axes, [0], diff, ["softmax_label"])


def _optimizer(init, sym):
    # as Module.init_optimizer makes it: names not ending in _weight/_gamma get wd_mult 0
    opt = mx.optimizer.create(
        "sgd",
        sym=sym,
        param_idx2name=dict(enumerate(init)),
        learning_rate=0.1,
        momentum=0.9,
        wd=1e-3,
        rescale_grad=1.0 / BATCH,
    )
    return opt, opt.fused_init({n: jnp.asarray(v) for n, v in init.items()})


def _batches():
    return [
        {"data": jnp.asarray(X[i : i + BATCH]), "softmax_label": jnp.asarray(Y[i : i + BATCH])}
        for i in range(0, len(X), BATCH)
    ]


def test_jitted_train_step_on_a_hand_made_state_gives_module_fit_numbers():
    sym = _net()
    init = _init_params(sym)
    want = _module_fit(sym, init)

    opt, opt_state = _optimizer(init, sym)
    step = _programs(sym).train_step(("data", "softmax_label"), optimizer_rule(opt))
    state = StepState({n: jnp.asarray(v) for n, v in init.items()}, {}, opt_state)
    key = jax.random.PRNGKey(0)
    for inputs in _batches():
        state, result = step(state, Batch(inputs, key), opt.fused_hyper())
        assert result.outs[0].shape == (BATCH, 3) and result.grads == {}
    for n in want:
        np.testing.assert_allclose(np.asarray(state.params[n]), want[n], rtol=1e-5, atol=1e-6)


def test_scanned_steps_equal_single_steps():
    sym = _net()
    init = _init_params(sym)
    progs = _programs(sym)
    names = ("data", "softmax_label")
    key = jax.random.PRNGKey(0)

    opt, opt_state = _optimizer(init, sym)
    single = progs.train_step(names, optimizer_rule(opt))
    one = StepState({n: jnp.asarray(v) for n, v in init.items()}, {}, opt_state)
    for inputs in _batches():
        one, _ = single(one, Batch(inputs, key), opt.fused_hyper())

    opt2, opt_state2 = _optimizer(init, sym)
    batches = _batches()
    block = progs.train_steps(len(batches), names, optimizer_rule(opt2))
    hypers = [opt2.fused_hyper() for _ in batches]
    hypers = jax.tree_util.tree_map(lambda *xs: np.array(xs), *hypers)
    keys = jnp.stack([key] * len(batches))
    many = StepState({n: jnp.asarray(v) for n, v in init.items()}, {}, opt_state2)
    many, outs, stats = block(many, batches, keys, hypers)
    assert outs[0].shape == (BATCH, 3) and stats == ()
    for n in init:
        np.testing.assert_allclose(np.asarray(many.params[n]), np.asarray(one.params[n]), rtol=1e-6)


@pytest.mark.parametrize("threshold", [0.01, 0.5])
def test_two_bit_reduction_carries_its_residual_in_the_state(threshold):
    """One sender: what is sent is quantised to +-t or 0 and the rest stays in the state."""
    sym = _net()
    init = _init_params(sym)
    opt = mx.optimizer.create("sgd", learning_rate=1.0, rescale_grad=1.0)
    opt_state = opt.fused_init({n: jnp.asarray(v) for n, v in init.items()})
    reduction = TwoBit(threshold)
    step = _programs(sym).train_step(
        ("data", "softmax_label"), optimizer_rule(opt), keep=("grads",), reduction=reduction
    )
    exact = _programs(sym).forward_backward(("data", "softmax_label"), False)
    residual = {n: jnp.zeros((1,) + v.shape, v.dtype) for n, v in init.items()}
    params = {n: jnp.asarray(v) for n, v in init.items()}
    state = StepState(dict(params), {}, opt_state, residual)
    inputs = _batches()[0]
    key = jax.random.PRNGKey(0)
    _, _, grads, _, _ = exact(params, {}, inputs, key)
    state, result = step(state, Batch(inputs, key), opt.fused_hyper())
    for n, g in grads.items():
        g = np.asarray(g)
        sent = np.where(g >= threshold, threshold, np.where(g <= -threshold, -threshold, 0))
        np.testing.assert_allclose(np.asarray(result.grads[n]), sent, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(state.residual[n])[0], g - sent, atol=1e-6)
        np.testing.assert_allclose(np.asarray(state.params[n]), init[n] - sent, atol=1e-6)
    assert SUM != reduction and not SUM.stacked and reduction.stacked
