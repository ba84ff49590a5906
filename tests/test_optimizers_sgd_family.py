"""SGD-family optimizers (NAG, Signum, FTML, LARS, LAMB, LBSGD, DCASGD, SGLD) against
MXNet 1.9.1 trajectories recorded by tests/fixtures/gen_optimizer_goldens_sgd_family.py."""

import json
import pickle
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import mxmod as mx
from mxmod.lr_scheduler import FactorScheduler
from mxmod.optimizer import _imperative


FIX = Path(__file__).parent / "fixtures" / "optimizers"
OPTS = ("nag", "signum", "ftml", "lars", "lamb", "lbsgd", "dcasgd")
CASES = sorted(p.stem for p in FIX.glob("*.npz") if p.stem.split("_")[0] in OPTS)
ALL = OPTS + ("sgld",)


def load(case):
    d = np.load(FIX / f"{case}.npz")
    return json.loads(str(d["config"])), d


def build(cfg):
    sched = FactorScheduler(**cfg["sched"]) if cfg["sched"] else None
    opt = mx.optimizer.create(
        cfg["opt"],
        param_idx2name=dict(enumerate(cfg["names"])),
        lr_scheduler=sched,
        **cfg["kwargs"],
    )
    opt.set_lr_mult(cfg["lr_mult"])
    return opt


def check(got, want):
    got = np.asarray(got)
    assert got.dtype == want.dtype
    if want.dtype == np.float16:  # the float32 master copy is checked tightly below
        np.testing.assert_allclose(
            got.astype(np.float32), want.astype(np.float32), rtol=1e-3, atol=1e-4
        )
    else:
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)


def check_states(cfg, d, states):
    """Final states (as MXNet's create_state tree) against the recorded ones."""
    for i, s in enumerate(states):
        if cfg["opt"] == "lbsgd" and cfg["kwargs"].get("batch_scale", 1) > 1:
            s = s[0]  # mxmod keeps (momentum, cum_grad); MXNet keeps cum_grad on the optimizer
        leaves = []

        def walk(x):
            if x is None:
                return None
            if isinstance(x, (tuple, list)):
                return [walk(v) for v in x]
            leaves.append(np.asarray(x))
            return "A"

        assert walk(s) == json.loads(str(d[f"state_tree:{i}"]))
        for j, leaf in enumerate(leaves):
            np.testing.assert_allclose(leaf, d[f"state:{i}:{j}"], rtol=2e-5, atol=2e-6)


def steps(cfg, d):
    n = len(cfg["names"])
    for s in range(cfg["steps"]):
        yield s, [d[f"g{s}:{i}"] for i in range(n)]


@pytest.mark.parametrize("case", CASES)
def test_imperative_updater_matches_mxnet(case):
    cfg, d = load(case)
    opt = build(cfg)
    upd = mx.optimizer.get_updater(opt)
    n, dt = len(cfg["names"]), cfg["dtype"]
    ws = [mx.nd.array(d[f"init:{i}"], dtype=dt) for i in range(n)]
    for s, gs in steps(cfg, d):
        upd(list(range(n)), [mx.nd.array(g, dtype=dt) for g in gs], ws)
        for i in range(n):
            check(ws[i].asnumpy(), d[f"w{s}:{i}"])
    check_states(
        cfg, d, [jax.tree_util.tree_map(lambda x: x.asnumpy(), upd.states[i]) for i in range(n)]
    )
    assert opt.num_update == int(d["num_update"])


@pytest.mark.parametrize("case", CASES)
def test_fused_matches_mxnet(case):
    cfg, d = load(case)
    opt = build(cfg)
    names = cfg["names"]
    params = {nm: jnp.asarray(d[f"init:{i}"]) for i, nm in enumerate(names)}
    state = opt.fused_init(params)
    step = jax.jit(opt.fused_update)
    for s, gs in steps(cfg, d):
        params, state = step(
            params, dict(zip(names, map(jnp.asarray, gs))), state, opt.fused_hyper()
        )
        for i, nm in enumerate(names):
            check(params[nm], d[f"w{s}:{i}"])
    check_states(cfg, d, [state[nm] for nm in names])
    assert step._cache_size() == 1  # schedules, counts and extras are traced


@pytest.mark.parametrize(
    "case",
    [
        "nag_sched",
        "signum_basic",
        "ftml_sched",
        "lars_sched",
        "lamb_bounds",
        "lbsgd_sched",
        "lbsgd_batch2",
        "dcasgd_basic",
    ],
)
def test_to_optax_matches_mxnet(case):
    cfg, d = load(case)
    opt = build(cfg)
    tx = opt.to_optax()
    names = cfg["names"]
    params = {nm: jnp.asarray(d[f"init:{i}"]) for i, nm in enumerate(names)}
    st = tx.init(params)
    update = jax.jit(tx.update)
    for s, gs in steps(cfg, d):
        u, st = update(dict(zip(names, map(jnp.asarray, gs))), st, params)
        params = optax.apply_updates(params, u)
        for i, nm in enumerate(names):
            check(params[nm], d[f"w{s}:{i}"])


@pytest.mark.parametrize(
    "name, extra, step1, step2",
    [
        ("nag", dict(momentum=0.9), [0.3955, -0.829, 1.9145], [0.249282, -0.589734, 1.794867]),
        ("signum", dict(learning_rate=0.01), [0.49, -0.99, 1.99], [0.48, -0.98, 1.98]),
        ("ftml", {}, [0.4, -0.9, 1.9], [0.338076, -0.8375, 1.838206]),
        ("dcasgd", {}, [0.445, -0.91, 1.955], [0.390605, -0.82113, 1.910461]),
        (
            "lamb",
            dict(learning_rate=0.001),
            [0.498758, -0.998699, 1.998581],
            [0.497517, -0.997399, 1.997162],
        ),
        (
            "lars",
            dict(momentum=0.9),
            [0.499908, -0.99985, 1.999925],
            [0.499734, -0.999565, 1.999783],
        ),
        ("lbsgd", dict(momentum=0.9), [0.445, -0.91, 1.955], [0.34105, -0.7399, 1.86995]),
    ],
)
def test_spec_conformance_vectors(name, extra, step1, step2):
    kw = dict(
        learning_rate=0.1,
        rescale_grad=0.5,
        wd=0.1,
        clip_gradient=0.8,
        param_idx2name={0: "fc_weight"},
    )
    kw.update(extra)
    upd = mx.optimizer.get_updater(mx.optimizer.create(name, **kw))
    w, g = mx.nd.array([0.5, -1.0, 2.0]), mx.nd.array([1.0, -2.0, 0.5])
    for want in (step1, step2):
        upd(0, g, w)
        np.testing.assert_allclose(w.asnumpy(), want, rtol=1e-5, atol=2e-6)


# ----------------------------------------------------------------------------- SGLD
def sgld_run(cfg, mode, n):
    """The generator's procedure: one step from a constant weight, then restart."""
    sched = FactorScheduler(**cfg["sched"]) if cfg["sched"] else None
    opt = mx.optimizer.SGLD(param_idx2name={0: "fc_weight"}, lr_scheduler=sched, **cfg["kwargs"])
    opt.set_lr_mult(cfg["lr_mult"])
    out, w = [], jnp.ones((n,), jnp.float32)
    g = jnp.full((n,), cfg["grad"], jnp.float32)
    if mode == "imperative":
        upd = mx.optimizer.get_updater(opt)
    else:
        opt.fused_init({"fc_weight": w})
        step = jax.jit(opt.fused_update)
    for _ in range(cfg["steps"]):
        if mode == "imperative":
            nd_w = mx.nd.array(w)
            upd([0], [mx.nd.array(g)], [nd_w])
            new = nd_w.asnumpy()
        else:
            new = np.asarray(
                step({"fc_weight": w}, {"fc_weight": g}, {"fc_weight": None}, opt.fused_hyper())[0][
                    "fc_weight"
                ]
            )
        out.append((new, opt._get_lr(0)))
        w = jnp.full((n,), float(np.mean(new)), jnp.float32)
    return out


@pytest.mark.parametrize("case, mode", [("sgld_basic", "imperative"), ("sgld_sched", "fused")])
def test_sgld_noise_statistics_match_mxnet(case, mode):
    cfg, d = load(case)
    n = 50_000  # MXNet's statistics were taken over cfg["n"] samples
    mx.random.seed(11)
    for s, (new, lr) in enumerate(sgld_run(cfg, mode, n)):
        assert lr == pytest.approx(float(d[f"lr{s}"]))
        mean, var = np.mean(new.astype(np.float64)), np.var(new.astype(np.float64))
        # the noise is N(0, sqrt(lr)): variance lr (sd of the estimate ~ lr*sqrt(2/n))
        assert var == pytest.approx(lr, rel=0.02) and var == pytest.approx(
            float(d[f"var{s}"]), rel=0.03
        )
        sd_mean = np.sqrt(lr / n)
        assert abs(mean - float(d[f"mean{s}"])) < 8 * sd_mean


def test_sgld_seed_repeatable_and_steps_differ():
    cfg, _ = load("sgld_basic")
    mx.random.seed(5)
    a = sgld_run(cfg, "fused", 1000)
    mx.random.seed(5)
    b = sgld_run(cfg, "fused", 1000)
    np.testing.assert_array_equal(a[0][0], b[0][0])
    assert not np.allclose(a[0][0] - np.mean(a[0][0]), a[1][0] - np.mean(a[1][0]))


def test_sgld_to_optax_noise():
    opt = mx.optimizer.SGLD(learning_rate=0.04)
    tx = opt.to_optax()
    params = {"w": jnp.zeros((50_000,)), "b": jnp.zeros((50_000,))}
    st = tx.init(params)
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    u1, st = jax.jit(tx.update)(zeros, st, params)
    u2, st = jax.jit(tx.update)(zeros, st, params)
    for u in (u1, u2):
        for leaf in jax.tree_util.tree_leaves(u):
            assert float(jnp.var(leaf)) == pytest.approx(0.04, rel=0.03)
    assert not np.allclose(u1["w"], u2["w"]) and not np.allclose(u1["w"], u1["b"])


# ----------------------------------------------------------------------------- no recompiles
@pytest.mark.parametrize("name", ALL)
def test_changing_learning_rate_does_not_recompile(name):
    opt = mx.optimizer.create(name, learning_rate=0.1, param_idx2name={0: "fc_weight"})
    traces = []

    @jax.jit
    def step(params, grads, state, hyper):
        traces.append(1)
        return opt.fused_update(params, grads, state, hyper)

    params = {"fc_weight": jnp.ones((3,))}
    state = opt.fused_init(params)
    for k in range(4):
        if k == 2:
            opt.set_learning_rate(0.01)
        params, state = step(params, {"fc_weight": jnp.full((3,), 0.5)}, state, opt.fused_hyper())
    assert len(traces) == 1 and bool(jnp.all(jnp.isfinite(params["fc_weight"])))


@pytest.mark.parametrize("name", ALL)
def test_imperative_scheduler_does_not_recompile(name):
    sched = mx.lr_scheduler.MultiFactorScheduler([1, 2, 3], 0.5, base_lr=0.1)
    opt = mx.optimizer.create(name, lr_scheduler=sched, learning_rate=0.1)
    upd = mx.optimizer.get_updater(opt)
    w = mx.nd.array([0.5, -1.0, 2.0])
    upd(0, mx.nd.array([1.0, -2.0, 0.5]), w)
    compiled = _imperative._shared_step._cache_size()
    for _ in range(4):
        upd(0, mx.nd.array([1.0, -2.0, 0.5]), w)
    assert _imperative._shared_step._cache_size() == compiled


# ----------------------------------------------------------------------------- states, API
@pytest.mark.parametrize("name", ALL)
def test_states_and_pickle_roundtrip(name):
    opt = mx.optimizer.create(name, param_idx2name={0: "fc_weight"})
    upd = mx.optimizer.get_updater(opt)
    w = mx.nd.array([0.5, -1.0, 2.0])
    upd(0, mx.nd.array([1.0, -2.0, 0.5]), w)
    upd2 = mx.optimizer.get_updater(mx.optimizer.SGD())
    upd2.set_states(upd.get_states(dump_optimizer=True))
    assert type(upd2.optimizer) is type(opt) and upd2.optimizer.num_update == 1
    o2 = pickle.loads(pickle.dumps(opt))
    caches = {"_static_cache", "_sig_cache", "_custom_probe"}  # rebuilt on demand
    assert o2._jit_fn is None and set(vars(o2)) == set(vars(opt)) - caches


def test_lbsgd_reads_lr_before_counting():
    opt = mx.optimizer.LBSGD(lr_scheduler=FactorScheduler(step=1, factor=0.5, base_lr=1.0))
    w = mx.nd.array([1.0])
    opt.update(0, w, mx.nd.array([1.0]), None)  # scheduler(0) = 1.0
    opt.update(0, w, mx.nd.array([1.0]), None)  # scheduler(1) = 1.0
    opt.update(0, w, mx.nd.array([1.0]), None)  # scheduler(2) = 0.5
    np.testing.assert_allclose(w.asnumpy(), [1.0 - 1.0 - 1.0 - 0.5])


def test_lars_wd_mult_only_weights():
    opt = mx.optimizer.LARS(param_idx2name={0: "fc_weight", 1: "bn_gamma", 2: "fc_bias"})
    assert opt.wd_mult == {"bn_gamma": 0.0, "fc_bias": 0.0}


@pytest.mark.parametrize(
    "name, kwargs, match",
    [
        ("nag", {"momentum": -1}, r"NAG: momentum must be in \[0, 1\), got momentum=-1"),
        ("signum", {"momentum": 1.5}, "Signum: momentum"),
        ("signum", {"wd_lh": -0.1}, "Signum: wd_lh must be >= 0, got wd_lh=-0.1"),
        ("ftml", {"beta1": 1.5}, "FTML: beta1"),
        ("ftml", {"beta2": -0.1}, "FTML: beta2"),
        ("ftml", {"epsilon": -1e-8}, "FTML: epsilon"),
        ("lars", {"momentum": -0.5}, "LARS: momentum"),
        ("lars", {"eta": -1}, "LARS: eta"),
        ("lars", {"eps": float("nan")}, "LARS: eps"),
        ("lamb", {"beta1": 1.5}, "LAMB: beta1"),
        ("lamb", {"beta2": 1.0}, "LAMB: beta2"),
        ("lamb", {"epsilon": -1}, "LAMB: epsilon"),
        ("lamb", {"lower_bound": 2.0, "upper_bound": 1.0}, "LAMB: lower_bound=2.0 must not exceed"),
        ("lbsgd", {"momentum": 2}, "LBSGD: momentum"),
        ("lbsgd", {"warmup_strategy": "cubic"}, "unknown warmup_strategy 'cubic'; known: linear"),
        ("lbsgd", {"batch_scale": 0}, "LBSGD: batch_scale must be >= 1"),
        ("lbsgd", {"batch_scale": 1.5}, "LBSGD: batch_scale must be an integer"),
        ("dcasgd", {"momentum": 0.9}, "DCASGD: momentum=0.9 is not supported.*use momentum=0"),
    ],
)
def test_bad_hyperparameters(name, kwargs, match):
    with pytest.raises(ValueError, match=match):
        mx.optimizer.create(name, **kwargs)


@pytest.mark.parametrize(
    "name, kwargs, match",
    [
        ("nag", {"momentum": "fast"}, "NAG: momentum must be a number, got 'fast'"),
        ("dcasgd", {"lamda": "x"}, "DCASGD: lamda must be a number"),
        ("lbsgd", {"warmup_epochs": None}, "LBSGD: warmup_epochs must be a number"),
    ],
)
def test_non_numeric_hyperparameters(name, kwargs, match):
    with pytest.raises(TypeError, match=match):
        mx.optimizer.create(name, **kwargs)


def test_dcasgd_momentum_set_later_fails_on_update():
    opt = mx.optimizer.DCASGD()
    opt.momentum = 0.5
    with pytest.raises(ValueError, match="DCASGD: momentum=0.5"):
        mx.optimizer.get_updater(opt)(0, mx.nd.ones((3,)), mx.nd.ones((3,)))


def test_registry_names_and_defaults():
    for name in ALL:
        assert mx.optimizer.Optimizer.opt_registry[name].__name__.lower() == name
    with pytest.raises(ValueError, match="Cannot find optimizer nagg.*lbsgd.*sgld"):
        mx.optimizer.create("nagg")
    assert mx.optimizer.Signum().lr == 0.01 and mx.optimizer.Signum().momentum == 0.9
    assert mx.optimizer.LAMB().lr == 0.001 and mx.optimizer.LAMB().aggregate_num == 45
    assert mx.optimizer.LARS().aggregate_num == 4 and mx.optimizer.LARS().eta == 0.001
    ftml = mx.optimizer.FTML()
    assert (ftml.beta1, ftml.beta2, ftml.epsilon, ftml.lr) == (0.6, 0.999, 1e-8, 0.01)
    lb = mx.optimizer.LBSGD(begin_epoch=2, updates_per_epoch=10)
    assert lb.init_updates == 20 and lb.batch_scale == 1 and lb.warmup_strategy == "linear"
    assert mx.optimizer.DCASGD().lamda == 0.04
