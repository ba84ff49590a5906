"""Adaptive optimizers (issue #6): Adam, AdaGrad, RMSProp, AdaDelta, Ftrl, Adamax, Nadam,
AdamW, GroupAdaGrad against trajectories recorded with MXNet 1.9.1
(tests/fixtures/gen_optimizer_goldens_adaptive.py), through the imperative Updater, the
fused core and to_optax."""

import inspect
import json
from collections import OrderedDict
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import mxmod as mx
from mxmod.lr_scheduler import FactorScheduler

FIX = Path(__file__).parent / "fixtures" / "optimizers"
OPTS = {
    "adam",
    "adagrad",
    "rmsprop",
    "adadelta",
    "ftrl",
    "adamax",
    "nadam",
    "adamw",
    "groupadagrad",
}
CASES = sorted(
    p.stem for p in FIX.glob("*.npz") if json.loads(str(np.load(p)["config"]))["opt"] in OPTS
)
# the fused/optax paths share the imperative rule; what they add (name-keyed multipliers,
# a shared t, multi-precision, scheduler closed form) the non-default variants exercise
FUSED_CASES = [c for c in CASES if not c.endswith("_default")]
OPTAX_CASES = [c for c in CASES if c.endswith("_full")] + [
    "rmsprop_centered",
    "adamw_step",
    "nadam_mp16",
    "adam_mp16",
    "adadelta_mp16",
]


def load(case):
    d = dict(np.load(FIX / f"{case}.npz"))
    return json.loads(str(d.pop("config"))), d


def make_opt(cfg):
    kwargs = dict(cfg["kwargs"])
    if cfg["sched"]:
        kwargs["lr_scheduler"] = FactorScheduler(**cfg["sched"])
    opt = mx.optimizer.create(cfg["opt"], param_idx2name=dict(enumerate(cfg["names"])), **kwargs)
    if cfg["lr_mult"]:
        opt.set_lr_mult(cfg["lr_mult"])
    if cfg["wd_mult"]:
        opt.set_wd_mult(cfg["wd_mult"])
    return opt


def close(actual, expected, dtype, what):
    actual = np.asarray(actual, np.float32)
    expected = np.asarray(expected, np.float32)
    tol = dict(rtol=2e-3, atol=2e-3) if dtype == "float16" else dict(rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(actual, expected, err_msg=what, **tol)


def close_state(leaves, d, i, what):
    golden = [d[k] for k in sorted(k for k in d if k.startswith(f"s_{i}_"))]
    assert len(leaves) == len(golden), what
    for j, (a, e) in enumerate(zip(leaves, golden)):
        assert np.dtype(a.dtype) == e.dtype, (what, j)
        close(a, e, str(e.dtype), f"{what} state leaf {j}")


def nd(x):
    return mx.nd.array(x, dtype=x.dtype)


# ``*_default`` trajectories (rescale 1, no wd/clip) add nothing to the spec 4.3 vectors
# below except for the bias-corrected optimizers; the other variants run everywhere
IMPERATIVE_CASES = [
    c for c in CASES if not c.endswith("_default") or c.split("_")[0] in ("adam", "adamw", "nadam")
]


@pytest.fixture(scope="module", params=IMPERATIVE_CASES)
def golden(request):
    return (request.param, *load(request.param))


def test_goldens_present():
    assert len(CASES) >= 30 and {c.split("_")[0] for c in CASES} == OPTS


# ----------------------------------------------------------------------------- three paths
def test_imperative_updater_matches_mxnet(golden):
    case, cfg, d = golden
    opt = make_opt(cfg)
    upd = mx.optimizer.get_updater(opt)
    n = len(cfg["names"])
    ws = [nd(d[f"w0_{i}"]) for i in range(n)]
    for k in range(1, cfg["steps"] + 1):
        for i in range(n):
            g = nd(d[f"g{k}_{i}"])
            upd(i, g, ws[i])
            assert ws[i].dtype == np.dtype(cfg["dtype"])
            close(ws[i].asnumpy(), d[f"w{k}_{i}"], cfg["dtype"], f"{case} step {k} w{i}")
            # AdaDelta scales the caller's gradient in place; the others leave it alone
            close(g.asnumpy(), d[f"gafter{k}_{i}"], cfg["dtype"], f"{case} grad {k}/{i}")
    for i in range(n):
        leaves = jax.tree_util.tree_leaves(
            upd.states[i], is_leaf=lambda x: x is not None and not isinstance(x, tuple)
        )
        close_state([x.asnumpy() for x in leaves], d, i, case)
    if "m_schedule" in d:
        assert opt.m_schedule == pytest.approx(float(d["m_schedule"]), rel=1e-12)


_FUSED_RUNS: dict = {}  # case -> fused trajectory (reused by the optax test: fewer compiles)


def run_fused(opt, cfg, d):
    names = cfg["names"]
    params = {n: jnp.asarray(d[f"w0_{i}"]) for i, n in enumerate(names)}
    state = opt.fused_init(params)
    step = jax.jit(opt.fused_update)
    traj = []
    for k in range(1, cfg["steps"] + 1):
        grads = {n: jnp.asarray(d[f"g{k}_{i}"]) for i, n in enumerate(names)}
        params, state = step(params, grads, state, opt.fused_hyper())
        traj.append(params)
    return traj, state


@pytest.mark.parametrize("case", FUSED_CASES)
def test_fused_matches_mxnet(case):
    cfg, d = load(case)
    opt = make_opt(cfg)
    traj, state = run_fused(opt, cfg, d)
    _FUSED_RUNS[case] = traj
    for k, params in enumerate(traj, start=1):
        for i, n in enumerate(cfg["names"]):
            assert params[n].dtype == np.dtype(cfg["dtype"])
            close(params[n], d[f"w{k}_{i}"], cfg["dtype"], f"{case} fused step {k} {n}")
    for i, n in enumerate(cfg["names"]):
        close_state(jax.tree_util.tree_leaves(state[n]), d, i, f"{case} fused")
    if "m_schedule" in d:
        assert opt.m_schedule == pytest.approx(float(d["m_schedule"]), rel=1e-12)


@pytest.mark.parametrize("case", OPTAX_CASES)
def test_to_optax_matches_fused_and_mxnet(case):
    cfg, d = load(case)
    names = cfg["names"]
    fused = _FUSED_RUNS.get(case) or run_fused(make_opt(cfg), cfg, d)[0]
    tx = make_opt(cfg).to_optax()
    assert isinstance(tx, optax.GradientTransformation)
    # an OrderedDict flattens in MXNet's index order (Nadam's shared m_schedule follows it)
    params = OrderedDict((n, jnp.asarray(d[f"w0_{i}"])) for i, n in enumerate(names))
    state = tx.init(params)
    update = jax.jit(tx.update)
    for k in range(1, cfg["steps"] + 1):
        grads = OrderedDict((n, jnp.asarray(d[f"g{k}_{i}"])) for i, n in enumerate(names))
        updates, state = update(grads, state, params)
        params = optax.apply_updates(params, updates)
        for i, n in enumerate(names):
            assert params[n].dtype == np.dtype(cfg["dtype"])
            close(params[n], fused[k - 1][n], cfg["dtype"], f"{case} optax vs fused {k} {n}")
            close(params[n], d[f"w{k}_{i}"], cfg["dtype"], f"{case} optax step {k} {n}")
    lr = state.hyperparams["learning_rate"]
    assert lr.dtype == jnp.float32


@pytest.mark.parametrize("case", ["nadam_mp16"])
def test_saved_states_resume_the_mxnet_trajectory(case):
    cfg, d = load(case)
    upd = mx.optimizer.get_updater(make_opt(cfg))
    n = len(cfg["names"])
    ws = [nd(d[f"w0_{i}"]) for i in range(n)]
    for k in range(1, cfg["steps"] + 1):
        if k == 3:  # save, restore into a fresh Updater (optimizer included), go on
            blob = upd.get_states(dump_optimizer=True)
            upd = mx.optimizer.get_updater(mx.optimizer.SGD())
            upd.set_states(blob)
            assert type(upd.optimizer).__name__.lower() == cfg["opt"]
        for i in range(n):
            upd(i, nd(d[f"g{k}_{i}"]), ws[i])
            close(ws[i].asnumpy(), d[f"w{k}_{i}"], cfg["dtype"], f"{case} resumed {k} {i}")
    if "m_schedule" in d:
        assert upd.optimizer.m_schedule == pytest.approx(float(d["m_schedule"]), rel=1e-12)


# ----------------------------------------------------------------------------- spec 4.3
W0, G0 = [0.5, -1.0, 2.0], [1.0, -2.0, 0.5]
COMMON = dict(rescale_grad=0.5, wd=0.1, clip_gradient=0.8, param_idx2name={0: "fc_weight"})


@pytest.mark.parametrize(
    "name, extra, step1, step2",
    [
        ("adam", {}, [0.499, -0.999, 1.999], [0.498, -0.998, 1.998]),
        ("adagrad", {"learning_rate": 0.1}, [0.395, -0.89, 1.88], [0.320339, -0.810389, 1.790489]),
        ("rmsprop", {}, [0.496838, -0.996838, 1.996838], [0.494544, -0.994544, 1.994544]),
        (
            "rmsprop",
            {"centered": True},
            [0.496667, -0.996667, 1.996667],
            [0.491118, -0.991118, 1.991119],
        ),
        (
            "adadelta",
            {"learning_rate": 0.1},
            [0.440002, -0.890001, 1.790008],
            [0.385744, -0.790742, 1.600756],
        ),
        (
            "ftrl",
            {"learning_rate": 0.1},
            [0.131788, -0.397238, 0.376190],
            [0.102669, -0.359878, 0.357856],
        ),
        ("adamax", {}, [0.498, -0.998, 1.998], [0.496, -0.996, 1.996]),
        ("nadam", {}, [0.498944, -0.998944, 1.998944], [0.498160, -0.998160, 1.998160]),
        (
            "groupadagrad",
            {"learning_rate": 0.1, "wd": 0.0},
            [0.411266, -0.858025, 1.955633],
            [0.348521, -0.757633, 1.924260],
        ),
    ],
)
def test_conformance_vectors(name, extra, step1, step2):
    kwargs = {**COMMON, **extra}
    opt = mx.optimizer.create(name, **kwargs)
    upd = mx.optimizer.get_updater(opt)
    shape = (1, 3) if name == "groupadagrad" else (3,)
    w = nd(np.asarray(W0, np.float32).reshape(shape))
    for expect in (step1, step2):
        upd(0, nd(np.asarray(G0, np.float32).reshape(shape)), w)
        np.testing.assert_allclose(w.asnumpy().ravel(), expect, atol=1.5e-6)


# ----------------------------------------------------------------------------- API surface
DEFAULTS = {
    "adam": ("Adam", dict(lr=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, lazy_update=True)),
    "adagrad": ("AdaGrad", dict(lr=0.01, float_stable_eps=1e-7)),
    "rmsprop": (
        "RMSProp",
        dict(lr=0.001, gamma1=0.9, gamma2=0.9, epsilon=1e-8, centered=False, clip_weights=None),
    ),
    "adadelta": ("AdaDelta", dict(rho=0.9, epsilon=1e-5)),
    "ftrl": ("Ftrl", dict(lr=0.1, lamda1=0.01, beta=1)),
    "adamax": ("Adamax", dict(lr=0.002, beta1=0.9, beta2=0.999)),
    "nadam": (
        "Nadam",
        dict(lr=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, schedule_decay=0.004, m_schedule=1.0),
    ),
    "adamw": (
        "AdamW",
        dict(
            lr=0.001, beta1=0.9, beta2=0.999, epsilon=1e-6, correct_bias=True, use_fused_step=True
        ),
    ),
    "groupadagrad": ("GroupAdaGrad", dict(lr=0.01, float_stable_eps=1e-5)),
}


@pytest.mark.parametrize("name", sorted(DEFAULTS))
def test_registry_names_and_defaults(name):
    cls_name, attrs = DEFAULTS[name]
    opt = mx.optimizer.create(name.upper())
    assert type(opt).__name__ == cls_name and opt.fused_supported()
    assert getattr(mx.optimizer, cls_name) is type(opt)
    assert type(mx.opt.create(name)) is type(opt)
    for attr, value in attrs.items():
        assert getattr(opt, attr) == value, attr


def test_contrib_namespace_and_signatures():
    assert mx.optimizer.contrib.GroupAdaGrad is mx.optimizer.GroupAdaGrad
    sig = inspect.signature(mx.optimizer.Nadam)
    assert list(sig.parameters)[:5] == [
        "learning_rate",
        "beta1",
        "beta2",
        "epsilon",
        "schedule_decay",
    ]
    assert list(inspect.signature(mx.optimizer.Ftrl).parameters)[:3] == [
        "lamda1",
        "learning_rate",
        "beta",
    ]


def test_ftrl_keeps_scheduler_base_lr():
    sched = FactorScheduler(step=10, base_lr=0.05)
    opt = mx.optimizer.Ftrl(learning_rate=0.2, lr_scheduler=sched)
    assert opt.lr == 0.2 and opt.learning_rate == 0.05


@pytest.mark.parametrize(
    "name, kwargs, attr",
    [
        ("adam", {"beta1": 1.5}, "beta1"),
        ("adam", {"beta2": 1.0}, "beta2"),
        ("adam", {"epsilon": -1e-8}, "epsilon"),
        ("adagrad", {"eps": -1.0}, "float_stable_eps"),
        ("rmsprop", {"gamma1": 1.2}, "gamma1"),
        ("rmsprop", {"gamma2": -0.1}, "gamma2"),
        ("adadelta", {"rho": 1.0}, "rho"),
        ("adadelta", {"epsilon": -1e-3}, "epsilon"),
        ("ftrl", {"lamda1": -0.1}, "lamda1"),
        ("ftrl", {"beta": -1}, "beta"),
        ("adamax", {"beta1": -0.1}, "beta1"),
        ("nadam", {"schedule_decay": -1}, "schedule_decay"),
        ("nadam", {"beta2": float("nan")}, "beta2"),
        ("adamw", {"beta1": 1.5}, "beta1"),
        ("adamw", {"epsilon": -1.0}, "epsilon"),
        ("groupadagrad", {"eps": -1.0}, "float_stable_eps"),
    ],
)
def test_bad_hyperparameter_is_value_error(name, kwargs, attr):
    with pytest.raises(ValueError, match=attr):
        mx.optimizer.create(name, **kwargs)


def test_bad_hyperparameter_set_later_and_non_number():
    opt = mx.optimizer.Adam()
    opt.beta1 = 1.5
    with pytest.raises(ValueError, match="beta1"):
        opt.fused_signature()
    w = nd(np.ones(3, np.float32))
    with pytest.raises(ValueError, match="beta1"):
        mx.optimizer.get_updater(opt)(0, nd(np.ones(3, np.float32)), w)
    with pytest.raises(TypeError, match="epsilon"):
        mx.optimizer.RMSProp(epsilon="small")


def test_group_adagrad_errors():
    opt = mx.optimizer.GroupAdaGrad()
    with pytest.raises(ValueError, match="2-D"):
        opt.create_state(0, nd(np.ones(3, np.float32)))
    opt = mx.optimizer.GroupAdaGrad(wd=0.1)
    w = nd(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="weight decay"):
        mx.optimizer.get_updater(opt)(0, nd(np.ones((2, 3), np.float32)), w)
    assert opt.num_update == 0
    with pytest.raises(ValueError, match="weight decay"):
        opt.fused_init({"fc_weight": jnp.ones((2, 3))})


def test_nadam_fused_update_needs_its_hyper():
    opt = mx.optimizer.Nadam()
    params = {"w": jnp.ones(3)}
    state = opt.fused_init(params)
    with pytest.raises(ValueError, match="fused_hyper"):
        opt.fused_update(params, params, state, {"lr": 0.1, "t": 1})


def test_nadam_m_schedule_is_shared_across_parameters():
    opt = mx.optimizer.Nadam()
    upd = mx.optimizer.get_updater(opt)
    for i in range(3):  # three parameters, one step each: three multiplications at t=1
        upd(i, nd(np.ones(2, np.float32)), nd(np.ones(2, np.float32)))
    mu1 = 0.9 * (1 - 0.5 * 0.96**0.004)
    assert opt.m_schedule == pytest.approx(mu1**3, rel=1e-12)


def test_adamw_zero_rescale_grad_skips_update():
    opt = mx.optimizer.AdamW(rescale_grad=0.0, wd=0.1)
    w = nd(np.ones(3, np.float32))
    mx.optimizer.get_updater(opt)(0, nd(np.ones(3, np.float32)), w)
    np.testing.assert_array_equal(w.asnumpy(), 1.0)


def test_bfloat16_multi_precision_keeps_float32_master():
    opt = mx.optimizer.Adam(multi_precision=True, learning_rate=0.1)
    params = {"w": jnp.asarray([0.5, -1.0], jnp.bfloat16)}
    state = opt.fused_init(params)
    assert state["w"][0].dtype == jnp.float32 and state["w"][1][0].dtype == jnp.float32
    new, state = jax.jit(opt.fused_update)(
        params, {"w": jnp.ones(2, jnp.bfloat16)}, state, opt.fused_hyper()
    )
    assert new["w"].dtype == jnp.bfloat16
    np.testing.assert_allclose(state["w"][0], [0.4, -1.1], rtol=1e-5)


# ----------------------------------------------------------------------------- no recompiles
@pytest.mark.parametrize("name", ["adam", "nadam"])
def test_learning_rate_change_does_not_recompile(name):
    opt = mx.optimizer.create(name, learning_rate=0.1)
    traces = []

    def step(p, g, s, h):
        traces.append(1)
        return opt.fused_update(p, g, s, h)

    step = jax.jit(step)
    params = {"a_weight": jnp.ones((2, 2)), "a_bias": jnp.zeros(2)}
    grads = {n: jnp.full_like(p, 0.5) for n, p in params.items()}
    state = opt.fused_init(params)
    seen = []
    for lr in (0.1, 0.01, 0.3):
        opt.set_learning_rate(lr)
        new, state = step(params, grads, state, opt.fused_hyper())
        seen.append(np.asarray(new["a_weight"]).copy())
    assert len(traces) == 1
    assert not np.allclose(seen[1], seen[2])
    # the imperative path: one trace, whatever the rate
    calls = []
    rule = opt._rule
    opt._rule = lambda *a: (calls.append(1), rule(*a))[1]
    upd = mx.optimizer.get_updater(opt)
    w = nd(np.ones(3, np.float32))
    for lr in (0.1, 0.2, 0.05):
        opt.set_learning_rate(lr)
        upd(0, nd(np.ones(3, np.float32)), w)
    assert len(calls) == 1


# ----------------------------------------------------------------------------- Module
def test_module_fit_with_adam():
    optimizer = "adam"
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, name="fc1", num_hidden=8)
    net = mx.sym.Activation(net, act_type="relu")
    net = mx.sym.FullyConnected(net, name="fc2", num_hidden=3)
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    rng = np.random.RandomState(0)
    x = rng.randn(60, 5).astype(np.float32)
    y = rng.randint(0, 3, 60).astype(np.float32)
    it = mx.io.NDArrayIter(x, y, batch_size=20)
    mod = mx.mod.Module(net)
    mod.fit(
        it,
        num_epoch=1,
        optimizer=optimizer,
        optimizer_params={"learning_rate": 0.01},
        initializer=mx.init.Uniform(0.1),
    )
    opt = mod._optimizer
    assert type(opt).__name__.lower() == optimizer and opt.num_update == 3
    args, _ = mod.get_params()
    assert all(np.all(np.isfinite(v.asnumpy())) for v in args.values())
    assert opt.rescale_grad == pytest.approx(1 / 20)
