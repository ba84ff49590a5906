"""mx.optimizer: MXNet 1.9.1 conformance (spec 4.1-4.4), fused core, optax bridge, states."""

import io
import pickle

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import mxmod as mx
from mxmod import optimizer as opt_mod
from mxmod.optimizer import _imperative
from mxmod.lr_scheduler import FactorScheduler, MultiFactorScheduler
from mxmod.base import MXNetFileError


W0 = [0.5, -1.0, 2.0]
G0 = [1.0, -2.0, 0.5]
COMMON = dict(rescale_grad=0.5, wd=0.1, clip_gradient=0.8, param_idx2name={0: "fc_weight"})


class FakeSym:
    """The two Symbol methods the optimizer reads."""

    def __init__(self, attrs, args):
        self._attrs, self._args = attrs, args

    def attr_dict(self):
        return self._attrs

    def list_arguments(self):
        return self._args


def nd(x, dtype="float32"):
    return mx.nd.array(np.asarray(x, dtype=dtype), dtype=dtype)


# ----------------------------------------------------------------------------- spec 4.3 vectors
@pytest.mark.parametrize(
    "name, extra, step1, step2",
    [
        ("sgd", dict(momentum=0.9), [0.445, -0.91, 1.955], [0.34105, -0.7399, 1.86995]),
        ("sgd", {}, [0.445, -0.91, 1.955], [0.39055, -0.8209, 1.91045]),
        ("ccsgd", {}, [0.445, -0.91, 1.955], [0.39055, -0.8209, 1.91045]),
    ],
)
def test_conformance_vectors(name, extra, step1, step2):
    opt = mx.optimizer.create(name, learning_rate=0.1, **COMMON, **extra)
    upd = mx.optimizer.get_updater(opt)
    w, g = nd(W0), nd(G0)
    upd(0, g, w)
    np.testing.assert_allclose(w.asnumpy(), step1, rtol=2e-6)
    upd(0, g, w)
    np.testing.assert_allclose(w.asnumpy(), step2, rtol=2e-6)
    np.testing.assert_array_equal(g.asnumpy(), G0)  # gradient untouched


def test_test_optimizer():
    opt = mx.optimizer.create("test", rescale_grad=0.5)
    w, g = nd(W0), nd(G0)
    state = opt.create_state(0, w)
    np.testing.assert_array_equal(state.asnumpy(), 0)
    opt.update(0, w, g, state)
    expect = np.add(W0, 0.5 * np.asarray(G0))
    np.testing.assert_allclose(w.asnumpy(), expect)
    np.testing.assert_allclose(state.asnumpy(), expect)
    assert opt.num_update == 0  # MXNet's Test optimizer does not count


# ----------------------------------------------------------------------------- numpy reference
def np_sgd(w, g, m, lr, wd, mom, rs, cg):
    g = rs * g
    if cg:
        g = np.clip(g, -cg, cg)
    if mom > 0:
        m = mom * m - lr * wd * w - lr * g
        return w + m, m
    return (1 - lr * wd) * w - lr * g, m


NAMES = ["fc_weight", "fc_bias", "bn_gamma", "bn_beta"]
SHAPES = [(3, 4), (3,), (4,), (4,)]


def make_sgd(**kw):
    sym = FakeSym({"fc_weight": {"__lr_mult__": "2.0"}, "bn_gamma": {"__wd_mult__": "0.5"}}, NAMES)
    sched = FactorScheduler(step=2, factor=0.5, base_lr=0.2)
    return mx.optimizer.SGD(
        momentum=0.9,
        wd=0.01,
        rescale_grad=0.25,
        clip_gradient=1.5,
        lr_scheduler=sched,
        sym=sym,
        param_idx2name=dict(enumerate(NAMES)),
        **kw,
    )


def data(seed=0, steps=5):
    rng = np.random.RandomState(seed)
    ws = [rng.randn(*s).astype(np.float32) for s in SHAPES]
    gs = [[(3 * rng.randn(*s)).astype(np.float32) for s in SHAPES] for _ in range(steps)]
    return ws, gs


def test_multipliers_from_sym_and_wd_default_rule():
    opt = make_sgd()
    assert opt.lr_mult == {"fc_weight": 2.0}
    # not ending in _weight/_gamma -> 0; __wd_mult__ attribute overrides
    assert opt.wd_mult == {"fc_bias": 0.0, "bn_beta": 0.0, "bn_gamma": 0.5}
    opt.set_lr_mult({1: 3.0})
    assert opt._get_lrs([1])[0] == pytest.approx(0.2 * 3.0)
    assert opt._get_wd(0) == pytest.approx(0.01) and opt._get_wd(1) == 0.0


def test_user_optimizer_without_names_decays_everything():
    opt = mx.optimizer.SGD(wd=0.1)  # Appendix B #4
    assert opt.wd_mult == {} and opt._get_wd(5) == pytest.approx(0.1)


def test_imperative_matches_numpy_reference():
    opt = make_sgd()
    upd = mx.optimizer.get_updater(opt)
    ws, gs = data()
    w_nd = [nd(w) for w in ws]
    ref_w = [w.astype(np.float64) for w in ws]
    ref_m = [np.zeros_like(w) for w in ref_w]
    lr_mult = [2.0, 1, 1, 1]
    wd_mult = [1, 0, 0.5, 0]
    sched = FactorScheduler(step=2, factor=0.5, base_lr=0.2)
    for step, grads in enumerate(gs, start=1):
        upd(list(range(4)), [nd(g) for g in grads], w_nd)
        lr = sched(step)
        for i in range(4):
            ref_w[i], ref_m[i] = np_sgd(
                ref_w[i], grads[i], ref_m[i], lr * lr_mult[i], 0.01 * wd_mult[i], 0.9, 0.25, 1.5
            )
        for i in range(4):
            np.testing.assert_allclose(w_nd[i].asnumpy(), ref_w[i], rtol=1e-5, atol=1e-6)
    assert opt.num_update == 5
    assert opt.learning_rate == pytest.approx(0.2 * 0.25)


def run_fused(opt, ws, gs, jit=True):
    params = {n: jnp.asarray(w) for n, w in zip(NAMES, ws)}
    state = opt.fused_init(params)
    fn = jax.jit(opt.fused_update) if jit else opt.fused_update
    for grads in gs:
        hyper = opt.fused_hyper()
        params, state = fn(params, {n: jnp.asarray(g) for n, g in zip(NAMES, grads)}, state, hyper)
    return params, state


def test_fused_equals_imperative():
    ws, gs = data(1)
    opt_f, opt_i = make_sgd(), make_sgd()
    params, state = run_fused(opt_f, ws, gs)
    upd = mx.optimizer.get_updater(opt_i)
    w_nd = [nd(w) for w in ws]
    for grads in gs:
        upd(NAMES, [nd(g) for g in grads], w_nd)  # name keys, like update_on_kvstore
    for n, w in zip(NAMES, w_nd):
        np.testing.assert_allclose(np.asarray(params[n]), w.asnumpy(), rtol=2e-7, atol=1e-7)
        np.testing.assert_allclose(
            np.asarray(state[n]), upd.states[n].asnumpy(), rtol=2e-7, atol=1e-7
        )
    assert opt_f.num_update == opt_i.num_update == len(gs)
    assert opt_f._index_update_count == opt_i._index_update_count


def test_fused_no_jit_equals_jit():
    ws, gs = data(2, steps=2)
    p1, s1 = run_fused(make_sgd(), ws, gs, jit=True)
    p2, s2 = run_fused(make_sgd(), ws, gs, jit=False)
    for n in NAMES:
        np.testing.assert_allclose(p1[n], p2[n], rtol=1e-6, atol=1e-7)


def test_changing_lr_never_recompiles():
    opt = mx.optimizer.SGD(momentum=0.9, learning_rate=0.1)
    traces = []

    @jax.jit
    def step(params, grads, state, hyper):
        traces.append(1)
        return opt.fused_update(params, grads, state, hyper)

    params = {"w": jnp.ones(3)}
    state = opt.fused_init(params)
    seen = []
    for k in range(6):
        if k == 3:
            opt.set_learning_rate(0.01)
        hyper = opt.fused_hyper()
        seen.append(float(hyper["lr"]))
        params, state = step(params, {"w": jnp.ones(3)}, state, hyper)
    assert seen[:3] == [pytest.approx(0.1)] * 3 and seen[3:] == [pytest.approx(0.01)] * 3
    assert len(traces) == 1 and step._cache_size() == 1


def test_scheduler_never_recompiles_imperative():
    opt = mx.optimizer.SGD(lr_scheduler=MultiFactorScheduler([1, 2, 3], 0.5, base_lr=1.0))
    w = nd(W0)
    opt.update(0, w, nd(G0), None)
    compiled = _imperative._shared_step._cache_size()
    for _ in range(4):
        opt.update(0, w, nd(G0), None)
    assert _imperative._shared_step._cache_size() == compiled


def test_fused_hyper_counts_like_mxnet():
    opt = mx.optimizer.SGD(begin_num_update=10, lr_scheduler=FactorScheduler(1, 0.5, base_lr=1.0))
    opt.fused_init({"a": jnp.zeros(2), "b": jnp.zeros(2)})
    h = opt.fused_hyper()
    assert int(h["t"]) == 11 and opt.num_update == 11
    assert h["lr"].dtype == np.float32 and h["t"].dtype == np.int32
    assert opt._index_update_count == {"a": 11, "b": 11}


def test_fused_missing_grad_leaves_param():
    opt = mx.optimizer.SGD(momentum=0.5, learning_rate=1.0)
    params = {"a": jnp.ones(2), "b": jnp.ones(2)}
    state = opt.fused_init(params)
    new_p, new_s = opt.fused_update(params, {"a": jnp.ones(2)}, state, opt.fused_hyper())
    np.testing.assert_array_equal(new_p["b"], 1.0)
    np.testing.assert_array_equal(new_p["a"], 0.0)
    assert new_s["b"] is state["b"]


def test_fused_signature_tracks_settings():
    opt = make_sgd()
    opt.fused_init({n: jnp.zeros(s) for n, s in zip(NAMES, SHAPES)})
    sig = opt.fused_signature()
    assert sig == opt.fused_signature() and hash(sig)
    opt.momentum = 0.5
    assert opt.fused_signature() != sig


# ----------------------------------------------------------------------------- multi-precision
@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_multi_precision_fp16(momentum):
    opt = mx.optimizer.SGD(
        momentum=momentum,
        learning_rate=0.1,
        multi_precision=True,
        **{k: v for k, v in COMMON.items()},
    )
    w16 = nd(W0, "float16")
    state = opt.create_state_multi_precision(0, w16)
    assert isinstance(state, tuple) and state[1].dtype == np.float32  # (mom, w32) for SGD
    ref = mx.optimizer.SGD(momentum=momentum, learning_rate=0.1, **COMMON)
    w32 = nd(W0)
    s32 = ref.create_state(0, w32)
    for _ in range(2):
        opt.update_multi_precision(0, w16, nd(G0, "float16"), state)
        ref.update(0, w32, nd(G0), s32)
    assert w16.dtype == np.float16
    np.testing.assert_allclose(state[1].asnumpy(), w32.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(w16.asnumpy(), w32.asnumpy().astype(np.float16))
    # the fused path keeps the same layout and numbers
    fopt = mx.optimizer.SGD(momentum=momentum, learning_rate=0.1, multi_precision=True, **COMMON)
    params = {"fc_weight": jnp.asarray(W0, jnp.float16)}
    fstate = fopt.fused_init(params)
    for _ in range(2):
        params, fstate = jax.jit(fopt.fused_update)(
            params, {"fc_weight": jnp.asarray(G0, jnp.float16)}, fstate, fopt.fused_hyper()
        )
    np.testing.assert_allclose(np.asarray(fstate["fc_weight"][1]), w32.asnumpy(), rtol=1e-6)
    assert params["fc_weight"].dtype == jnp.float16


def test_fp16_without_multi_precision_warns():
    with pytest.warns(UserWarning, match="Consider using multi_precision=True"):
        mx.optimizer.SGD(momentum=0.9).create_state_multi_precision(0, nd(W0, "float16"))


def test_base_layout_master_first():
    class Plain(mx.optimizer.Optimizer):
        def _rule(self, w, g, s, lr, wd, t):
            return w - lr * g, s

    o = Plain(multi_precision=True)
    st = o.create_state_multi_precision(0, nd(W0, "float16"))
    assert st[0].dtype == np.float32 and st[1] is None


# ----------------------------------------------------------------------------- Updater
def test_updater_aggregation_and_bytes_keys():
    ws, gs = data(3, steps=2)
    o1, o2 = make_sgd(), make_sgd()
    o2.aggregate_num = 0
    u1, u2 = mx.optimizer.get_updater(o1), mx.optimizer.get_updater(o2)
    assert u1.aggregate_updates and not u2.aggregate_updates
    w1, w2 = [nd(w) for w in ws], [nd(w) for w in ws]
    for grads in gs:
        u1([n.encode() for n in NAMES], [nd(g) for g in grads], w1)
        u2(NAMES, [nd(g) for g in grads], w2)
    assert set(u1.states) == set(NAMES)  # bytes -> str
    for a, b in zip(w1, w2):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-6)


def test_per_device_counts():
    opt = mx.optimizer.SGD()
    upd = mx.optimizer.get_updater(opt)
    w0 = mx.nd.array(W0, ctx=mx.cpu(0))
    w1 = mx.nd.array(W0, ctx=mx.cpu(1))
    upd([0], [nd(G0)], [w0])
    upd([1], [mx.nd.array(G0, ctx=mx.cpu(1))], [w1])
    assert opt._all_index_update_counts == {0: {0: 1}, 1: {1: 1}}
    assert opt.num_update == 1
    assert w1.context == mx.cpu(1)


def test_states_roundtrip():
    ws, gs = data(4, steps=2)
    opt = make_sgd()
    upd = mx.optimizer.get_updater(opt)
    w_nd = [nd(w) for w in ws]
    upd(list(range(4)), [nd(g) for g in gs[0]], w_nd)
    blob = upd.get_states()
    assert blob[:2] == b"PK"
    upd2 = mx.optimizer.get_updater(make_sgd())
    upd2.set_states(blob)
    assert set(upd2.states) == {0, 1, 2, 3} and not any(upd2.states_synced.values())
    for k in range(4):
        np.testing.assert_array_equal(upd2.states[k].asnumpy(), upd.states[k].asnumpy())
    # with the optimizer: counts, multipliers and the scheduler come back
    upd3 = mx.optimizer.get_updater(mx.optimizer.SGD())
    upd3.set_states(upd.get_states(dump_optimizer=True))
    o3 = upd3.optimizer
    assert isinstance(o3, mx.optimizer.SGD) and o3 is not opt
    assert o3.momentum == 0.9 and o3.lr_mult == opt.lr_mult and o3.wd_mult == opt.wd_mult
    assert o3.idx2name == opt.idx2name and o3.num_update == 1
    assert o3._index_update_count is o3._all_index_update_counts[0]
    assert isinstance(o3.lr_scheduler, FactorScheduler) and o3.lr_scheduler.count == 0
    # continuing from restored states equals continuing the original
    w3 = [mx.nd.array(w.asnumpy()) for w in w_nd]
    upd(list(range(4)), [nd(g) for g in gs[1]], w_nd)
    upd3(list(range(4)), [nd(g) for g in gs[1]], w3)
    for a, b in zip(w_nd, w3):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


def test_states_bfloat16_and_none_and_tuples():
    opt = mx.optimizer.SGD(momentum=0.9, multi_precision=True)
    upd = mx.optimizer.get_updater(opt)
    w = mx.nd.array(np.asarray(W0), dtype=jnp.bfloat16)
    upd(0, mx.nd.array(np.asarray(G0), dtype=jnp.bfloat16), w)
    upd.states["none"] = None
    states, _ = mx.optimizer._codec.loads(upd.get_states())
    assert states["none"] is None and isinstance(states[0], tuple)
    del upd.states["none"]  # no state SGD(momentum=0.9) creates (refused at load: issue 26)
    upd2 = mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9, multi_precision=True))
    upd2.set_states(upd.get_states())
    assert isinstance(upd2.states[0], tuple)
    np.testing.assert_array_equal(upd2.states[0][1].asnumpy(), upd.states[0][1].asnumpy())


def test_set_states_refuses_pickle_and_garbage():
    upd = mx.optimizer.get_updater(mx.optimizer.SGD())
    with pytest.raises(NotImplementedError, match="never unpickles"):
        upd.set_states(pickle.dumps({0: None}))
    with pytest.raises(
        MXNetFileError,
        match=r"optimizer states: offset 0: starts with "
        r"b'hell' \(expected an mxmod optimizer-state",
    ):
        upd.set_states(b"hello")
    buf = io.BytesIO()
    np.savez(buf, x=np.zeros(2))
    with pytest.raises(MXNetFileError, match="'__mxmod_optimizer_states__': missing"):
        upd.set_states(buf.getvalue())


def test_get_states_unserialisable_attribute():
    opt = mx.optimizer.SGD()
    opt.callback = lambda: None
    with pytest.raises(TypeError, match="SGD.callback.*dump_optimizer=False"):
        mx.optimizer.get_updater(opt).get_states(dump_optimizer=True)


def test_updater_fused_bridge():
    opt = mx.optimizer.SGD(momentum=0.9)
    params = {"a": jnp.ones(3)}
    st = opt.fused_init(params)
    params, st = opt.fused_update(params, {"a": jnp.ones(3)}, st, opt.fused_hyper())
    upd = mx.optimizer.get_updater(opt)
    upd.load_fused(st, keys={"a": 0})
    np.testing.assert_array_equal(upd.states[0].asnumpy(), np.asarray(st["a"]))
    back = upd.export_fused(["a"], keys={"a": 0})
    np.testing.assert_array_equal(back["a"], st["a"])


# ----------------------------------------------------------------------------- optax bridge
def test_to_optax_matches_fused():
    ws, gs = data(5, steps=4)
    opt = make_sgd()
    tx = make_sgd().to_optax()
    params = {n: jnp.asarray(w) for n, w in zip(NAMES, ws)}
    st = tx.init(params)
    upd = jax.jit(tx.update)
    for grads in gs:
        u, st = upd({n: jnp.asarray(g) for n, g in zip(NAMES, grads)}, st, params)
        params = optax.apply_updates(params, u)
    ref, _ = run_fused(opt, ws, gs)
    for n in NAMES:
        np.testing.assert_allclose(params[n], ref[n], rtol=1e-5, atol=1e-6)
    assert float(st.hyperparams["learning_rate"]) == pytest.approx(opt.lr_scheduler(4))


def test_to_optax_nested_names_and_lr_override():
    opt = mx.optimizer.SGD(wd=0.5, param_idx2name={0: "fc_weight", 1: "fc_bias"})
    tx = opt.to_optax(learning_rate=1.0)
    params = {"fc": {"weight": jnp.ones(2), "bias": jnp.ones(2)}}
    st = tx.init(params)
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    u, st = tx.update(zeros, st, params)
    np.testing.assert_allclose(u["fc"]["weight"], -0.5)  # decayed
    np.testing.assert_allclose(u["fc"]["bias"], 0.0)  # bias exempt via idx2name
    with pytest.raises(ValueError, match="needs params"):
        tx.update(zeros, st)


# ----------------------------------------------------------------------------- API and errors
def test_registry_and_aliases():
    assert mx.opt is mx.optimizer
    assert isinstance(mx.optimizer.create("SGD"), mx.optimizer.SGD)
    assert mx.optimizer.Optimizer.opt_registry["sgd"] is mx.optimizer.SGD
    with pytest.raises(ValueError, match=r"Cannot find optimizer nope.*sgd"):
        mx.optimizer.create("nope")
    with pytest.raises(TypeError, match="name must be a string"):
        mx.optimizer.create(3)


def test_register_override_warns():
    class Test(mx.optimizer.Optimizer):
        pass

    with pytest.warns(UserWarning, match="overriding existing optimizer"):
        mx.optimizer.register(Test)
    with pytest.warns(UserWarning):
        mx.optimizer.register(opt_mod.testing.Test)  # restore
    with pytest.raises(TypeError, match="Optimizer subclasses"):
        mx.optimizer.register(int)


def test_constructor_lr_resolution(capsys):
    assert mx.optimizer.SGD().lr == 0.01
    sched = FactorScheduler(step=5, base_lr=0.3)
    o = mx.optimizer.SGD(learning_rate=0.1, lr_scheduler=sched)
    assert "has been overwritten" in capsys.readouterr().out and sched.base_lr == 0.1
    o2 = mx.optimizer.SGD(lr_scheduler=FactorScheduler(step=5, base_lr=0.3))
    assert o2.lr is None and o2.learning_rate == 0.3
    with pytest.raises(UserWarning, match="LRScheduler of the optimizer has already been"):
        o.set_learning_rate(0.5)
    with pytest.raises(DeprecationWarning, match="set_lr_mult"):
        o.set_lr_scale({})
    with pytest.raises(TypeError, match="param_idx2name should be a dict"):
        mx.optimizer.SGD(param_idx2name=[1, 2])


def test_update_errors():
    opt = mx.optimizer.SGD()
    with pytest.raises(TypeError, match="needs NDArray weight and grad"):
        opt.update(0, np.zeros(3), nd(G0), None)
    with pytest.raises(NotImplementedError, match="defines no update rule"):
        mx.optimizer.Optimizer().update(0, nd(W0), nd(G0), None)


def test_user_imperative_subclass_fused_by_tracing():
    class MySGD(mx.optimizer.SGD):
        def update(self, index, weight, grad, state):
            weight[:] = weight._data - grad._data

    class Mine(mx.optimizer.Optimizer):  # the usual MXNet-style custom optimizer
        def create_state(self, index, weight):
            return mx.nd.zeros(weight.shape)

        def update(self, index, weight, grad, state):
            state[:] = state._data + 1
            weight[:] = weight._data - grad._data

    # on the class only pure-rule optimizers answer True; an instance traces its update().
    # MySGD is SGD's rule: MXNet's SGD.update_multi_precision never calls an overridden update
    assert mx.optimizer.SGD.fused_supported() and MySGD.fused_supported()
    assert not mx.optimizer.Optimizer.fused_supported() and not Mine.fused_supported()
    assert MySGD().fused_supported() and Mine().fused_supported()
    assert not mx.optimizer.Optimizer().fused_supported()
    params = {"a": jnp.asarray(W0)}
    opt = Mine()
    state = opt.fused_init(params)
    params, state = jax.jit(opt.fused_update)(
        params, {"a": jnp.asarray(G0)}, state, opt.fused_hyper()
    )
    np.testing.assert_allclose(params["a"], np.subtract(W0, G0))
    np.testing.assert_array_equal(state["a"], 1)
    upd = mx.optimizer.get_updater(Mine())
    w = nd(W0)
    upd(0, nd(G0), w)  # imperative still works
    np.testing.assert_allclose(w.asnumpy(), np.subtract(W0, G0))
    np.testing.assert_array_equal(upd.states[0].asnumpy(), 1)
    # multi-precision wrapper of the base class around a user update()
    upd = mx.optimizer.get_updater(Mine(multi_precision=True))
    w16 = nd(W0, "float16")
    upd(0, nd(G0, "float16"), w16)
    assert upd.states[0][0].dtype == np.float32 and w16.dtype == np.float16
    np.testing.assert_allclose(w16.asnumpy(), np.subtract(W0, G0))


def test_fused_errors():
    opt = mx.optimizer.SGD()
    with pytest.raises(ValueError, match="call fused_init"):
        opt.fused_hyper()
    with pytest.raises(TypeError, match="dict name -> jax.Array"):
        opt.fused_init([jnp.zeros(2)])


def test_pickle_drops_param_dict_and_jit():
    import types

    opt = mx.optimizer.SGD(param_dict={0: types.SimpleNamespace(lr_mult=0.0, wd_mult=1.0)})
    w = nd(W0)
    opt.update(0, w, nd(G0), None)
    np.testing.assert_array_equal(w.asnumpy(), W0)  # gluon-style lr_mult 0 wins
    o2 = pickle.loads(pickle.dumps(opt))
    assert o2.param_dict == {} and o2._jit_fn is None and o2.num_update == 1


def test_mxnet_module_paths():
    from mxmod.optimizer.optimizer import SGD, Adam, Optimizer, get_updater

    assert SGD is mx.optimizer.SGD and Adam is mx.optimizer.Adam
    assert Optimizer is mx.optimizer.Optimizer and get_updater is mx.optimizer.get_updater
    assert mx.optimizer.NDabs is mx.nd.abs
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        mx.optimizer.optimizer.Nope  # noqa: B018
