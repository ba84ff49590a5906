"""Optimizers written the MXNet way (issue 9): a registered ``mx.optimizer.Optimizer``
subclass overriding ``create_state``/``update`` with NDArray ops runs imperatively and, traced,
inside compiled steps; code that needs host values falls back. The classes
(tests/fixtures/custom_optimizers.py) ran in MXNet 1.9.1 for the goldens
(tests/fixtures/gen_custom_optimizer_goldens.py)."""

import importlib.util
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import mxmod as mx
from mxmod.lr_scheduler import FactorScheduler


FIX = Path(__file__).parent / "fixtures"
_spec = importlib.util.spec_from_file_location("custom_optimizers", FIX / "custom_optimizers.py")
co = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(co)
CLASSES = co.define(mx)
TRACEABLE = ["plainsgd", "momentumsgd", "adagradlike", "adamlike"]


def make(case, **over):
    cls_name, kwargs = co.CASES[case]
    kwargs = {**kwargs, **over}
    if case == "plainsgd":
        kwargs["lr_scheduler"] = FactorScheduler(
            step=1, factor=0.5, base_lr=kwargs["learning_rate"]
        )
    return CLASSES[cls_name](param_idx2name=dict(enumerate(co.NAMES)), **kwargs)


def load(name):
    d = np.load(FIX / "optimizers" / f"custom_{name}.npz")
    return json.loads(str(d["config"])), d


def close(got, want):
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=2e-6)


def test_fused_supported_by_tracing():
    for case in TRACEABLE:
        opt = make(case)
        assert opt.fused_supported(), case
        assert not type(opt).fused_supported()  # on the class: nothing to trace
    assert not make("normclipsgd").fused_supported()
    assert mx.optimizer.Optimizer.opt_registry["adamlike"] is CLASSES["AdamLike"]


@pytest.mark.parametrize("case", list(co.CASES))
def test_updater_matches_mxnet(case):
    _, d = load(f"updater_{case}")
    opt = make(case)
    upd = mx.optimizer.get_updater(opt)
    ws = [mx.nd.array(d[f"init:{i}"]) for i in range(len(co.NAMES))]
    for s in range(co.STEPS):
        for i in range(len(ws)):
            upd(i, mx.nd.array(d[f"g{s}:{i}"]), ws[i])
            close(ws[i].asnumpy(), d[f"w{s}:{i}"])
    for i in range(len(ws)):
        st = upd.states[i]
        leaves = [] if st is None else list(st) if isinstance(st, tuple) else [st]
        for j, leaf in enumerate(leaves):
            close(leaf.asnumpy(), d[f"state:{i}:{j}"])
    assert opt.num_update == int(d["num_update"])


def run_fused(opt, d, jit=True):
    params = {n: jnp.asarray(d[f"init:{i}"]) for i, n in enumerate(co.NAMES)}
    state = opt.fused_init(params)
    step = jax.jit(opt.fused_update) if jit else opt.fused_update
    traj = []
    for s in range(co.STEPS):
        grads = {n: jnp.asarray(d[f"g{s}:{i}"]) for i, n in enumerate(co.NAMES)}
        params, state = step(params, grads, state, opt.fused_hyper())
        traj.append(params)
    return traj, state, step


@pytest.mark.parametrize("case", TRACEABLE)
def test_fused_matches_mxnet(case):
    _, d = load(f"updater_{case}")
    opt = make(case)
    traj, state, step = run_fused(opt, d)
    for s, params in enumerate(traj):
        for i, n in enumerate(co.NAMES):
            close(params[n], d[f"w{s}:{i}"])
    for i, n in enumerate(co.NAMES):
        leaves = jax.tree_util.tree_leaves(state[n])
        for j, leaf in enumerate(leaves):
            close(leaf, d[f"state:{i}:{j}"])
    assert step._cache_size() == 1  # the rate (a scheduler's too) and the count are traced
    assert opt.num_update == int(d["num_update"])
    assert opt._index_update_count == {n: co.STEPS for n in co.NAMES}


@pytest.mark.parametrize(
    "case, builtin, kwargs",
    [
        ("plainsgd", "sgd", {}),
        ("momentumsgd", "sgd", {"momentum": 0.9}),
        ("adagradlike", "adagrad", {"eps": 1e-7}),
        ("adamlike", "adam", {}),
    ],
)
def test_fused_equals_builtin_rule(case, builtin, kwargs):
    _, d = load(f"updater_{case}")
    mine = make(case)
    _, ckw = co.CASES[case]
    ckw = {k: v for k, v in ckw.items() if k not in ("momentum", "eps")}
    ref = mx.optimizer.create(builtin, param_idx2name=dict(enumerate(co.NAMES)),
                              lr_scheduler=mine.lr_scheduler and FactorScheduler(
                                  step=1, factor=0.5, base_lr=ckw["learning_rate"]),
                              **ckw, **kwargs)  # fmt: skip
    if case == "plainsgd":  # MXNet's SGD reads the rate after counting, PlainSGD before
        mine.lr_scheduler = ref.lr_scheduler = None
    a, _, _ = run_fused(mine, d)
    b, _, _ = run_fused(ref, d)
    for pa, pb in zip(a, b):
        for n in co.NAMES:
            np.testing.assert_allclose(pa[n], pb[n], rtol=1e-5, atol=1e-6)


def test_to_optax_runs_the_user_update():
    _, d = load("updater_momentumsgd")
    ref, _, _ = run_fused(make("momentumsgd"), d)
    tx = make("momentumsgd").to_optax()
    params = {n: jnp.asarray(d[f"init:{i}"]) for i, n in enumerate(co.NAMES)}
    st = tx.init(params)
    update = jax.jit(tx.update)
    for s in range(co.STEPS):
        grads = {n: jnp.asarray(d[f"g{s}:{i}"]) for i, n in enumerate(co.NAMES)}
        u, st = update(grads, st, params)
        params = optax.apply_updates(params, u)
        for n in co.NAMES:
            np.testing.assert_allclose(params[n], ref[s][n], rtol=1e-5, atol=1e-6)


def test_multi_precision_wrapper_traced():
    w0 = np.asarray([[0.5, -1.0], [2.0, 0.25]], np.float16)
    g0 = np.asarray([[1.0, -2.0], [0.5, 1.0]], np.float16)
    opt = make("momentumsgd", multi_precision=True)
    params = {"fc_weight": jnp.asarray(w0)}
    state = opt.fused_init(params)
    assert state["fc_weight"][0].dtype == jnp.float32  # (weight32, momentum) as in MXNet
    for _ in range(2):
        params, state = jax.jit(opt.fused_update)(
            params, {"fc_weight": jnp.asarray(g0)}, state, opt.fused_hyper()
        )
    upd = mx.optimizer.get_updater(make("momentumsgd", multi_precision=True))
    w = mx.nd.array(w0, dtype="float16")
    for _ in range(2):
        upd(0, mx.nd.array(g0, dtype="float16"), w)
    assert params["fc_weight"].dtype == jnp.float16
    np.testing.assert_allclose(state["fc_weight"][0], upd.states[0][0].asnumpy(), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(params["fc_weight"]), w.asnumpy())


# ----------------------------------------------------------------------------- fallbacks
def test_host_values_fall_back_with_a_clear_error():
    opt = make("normclipsgd")
    assert not opt.fused_supported()
    with pytest.raises(
        NotImplementedError,
        match=r"NormClipSGD: its update\(\) cannot run "
        r"inside a compiled step \(it needs host values.*get_updater",
    ):
        opt.fused_init({"fc_weight": jnp.ones((3, 4))})
    assert opt.num_update == 0  # probing counted nothing


def test_host_state_changed_per_step_falls_back():
    class CountingSGD(mx.optimizer.Optimizer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.seen = {}

        def update(self, index, weight, grad, state):
            self.seen[index] = self.seen.get(index, 0) + 1
            weight[:] -= self._get_lr(index) * grad

    class Attr(CountingSGD):
        def update(self, index, weight, grad, state):
            self.last_index = index
            weight[:] -= self._get_lr(index) * grad

    opt = CountingSGD()
    assert not opt.fused_supported() and opt.seen == {}
    with pytest.raises(NotImplementedError, match="changes the optimizer's 'seen' on the host"):
        opt.fused_init({"w": jnp.ones(2)})
    with pytest.raises(NotImplementedError, match="sets the attribute 'last_index'"):
        Attr().fused_init({"w": jnp.ones(2)})
    w = mx.nd.ones((2,))
    mx.optimizer.get_updater(opt)(0, mx.nd.ones((2,)), w)  # the Updater still runs it
    assert opt.seen == {0: 1}
    np.testing.assert_allclose(w.asnumpy(), 0.99)


def test_probe_follows_settings_and_shapes():
    class ShapeBound(mx.optimizer.Optimizer):
        def update(self, index, weight, grad, state):
            if self.host:
                weight[:] -= float(grad.sum().asscalar())
            else:
                weight[:] -= grad

    opt = ShapeBound()
    opt.host = False
    assert opt.fused_supported()
    opt.host = True  # a setting change re-probes
    assert not opt.fused_supported()
    assert not opt.fused_supported({"w": jax.ShapeDtypeStruct((2, 2), jnp.float32)})


def test_no_update_at_all_is_an_error():
    with pytest.raises(NotImplementedError, match="defines no update: implement _init_leaf"):
        mx.optimizer.Optimizer().fused_init({"w": jnp.ones(2)})


# ----------------------------------------------------------------------------- Module
def module_run(case, use_fit=False):
    cfg, d = load(f"module_{case}")
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, name="fc1", num_hidden=8)
    net = mx.sym.Activation(net, name="relu1", act_type="relu")
    net = mx.sym.FullyConnected(net, name="fc2", num_hidden=3)
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    init = {k[5:]: mx.nd.array(d[k]) for k in d.files if k.startswith("init:")}
    mod = mx.mod.Module(net, context=mx.cpu())
    steps, batch = cfg["steps"], cfg["batch"]
    if use_fit:
        x = np.concatenate([d[f"x{s}"] for s in range(steps)])
        y = np.concatenate([d[f"y{s}"] for s in range(steps)])
        it = mx.io.NDArrayIter(x, y, batch_size=batch, shuffle=False)
        mod.fit(
            it,
            num_epoch=1,
            arg_params=init,
            optimizer=cfg["optimizer"],
            optimizer_params=cfg["params"],
        )
        return [_host(mod.get_params()[0])], [steps - 1], d
    mod.bind(data_shapes=[("data", d["x0"].shape)], label_shapes=[("softmax_label", (batch,))])
    mod.init_params(arg_params=init)
    mod.init_optimizer(optimizer=cfg["optimizer"], optimizer_params=cfg["params"])
    out = []
    for s in range(steps):
        b = mx.io.DataBatch([mx.nd.array(d[f"x{s}"])], [mx.nd.array(d[f"y{s}"])])
        mod.forward(b, is_train=True)
        mod.backward()
        mod.update()
        out.append(_host(mod.get_params()[0]))  # get_params reuses its NDArrays, as MXNet
    return out, list(range(steps)), d


def _host(params):
    return {k: v.asnumpy() for k, v in params.items()}


@pytest.mark.parametrize("case", ["momentumsgd", "adamlike"])
@pytest.mark.parametrize("use_fit", [False, True])
def test_module_trains_custom_optimizer_like_mxnet(case, use_fit):
    got, steps, d = module_run(case, use_fit)
    for params, s in zip(got, steps):
        for k, v in params.items():
            np.testing.assert_allclose(v, d[f"arg{s}:{k}"], rtol=1e-4, atol=1e-5)


def test_module_trains_host_value_optimizer_through_the_updater():
    # fused_supported() is False: the Module runs the optimizer through its Updater
    got, steps, d = module_run("normclipsgd")
    for params, s in zip(got, steps):
        for k, v in params.items():
            np.testing.assert_allclose(v, d[f"arg{s}:{k}"], rtol=1e-4, atol=1e-5)


def test_custom_optimizer_saved_with_its_states_after_fused_steps():
    opt = make("adamlike")
    opt.fused_init({n: jnp.ones(s) for n, s in zip(co.NAMES, co.SHAPES)})
    opt.fused_hyper()
    upd = mx.optimizer.get_updater(opt)
    upd2 = mx.optimizer.get_updater(mx.optimizer.SGD())
    upd2.set_states(upd.get_states(dump_optimizer=True))
    o2 = upd2.optimizer
    assert type(o2) is type(opt) and o2.num_update == 1 and o2.beta1 == 0.9
    assert o2._index_update_count == dict.fromkeys(co.NAMES, 1)
    assert o2.fused_supported()
