"""mxmod.optimizer.lazy: MXNet's lazy row_sparse update derived from each optimizer's rule."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mxmod as mx
from mxmod.optimizer.lazy import check_lazy_wd, lazy_step, supports_lazy
from mxmod.optimizer.rules import LeafInfo


def _leaf(lr=0.5, wd=0.1, t=1):
    return LeafInfo(jnp.float32(lr), jnp.float32(wd), jnp.int32(t), None, 0, {})


def test_supports_lazy_follows_mxnet_kernels():
    assert supports_lazy(mx.optimizer.SGD())
    assert not supports_lazy(mx.optimizer.SGD(lazy_update=False))
    assert supports_lazy(mx.optimizer.Adam())
    assert not supports_lazy(mx.optimizer.Adam(lazy_update=False))
    assert supports_lazy(mx.optimizer.AdaGrad())
    assert supports_lazy(mx.optimizer.contrib.GroupAdaGrad())
    assert not supports_lazy(mx.optimizer.Ftrl())
    assert supports_lazy(mx.optimizer.Ftrl(), weight_stype="row_sparse")
    assert not supports_lazy(mx.optimizer.RMSProp())
    assert not supports_lazy(mx.optimizer.NAG(momentum=0.9))


def test_sgd_momentum_moves_only_given_rows_and_drops_padding():
    opt = mx.optimizer.SGD(momentum=0.9, rescale_grad=2.0, clip_gradient=1.5)
    w = np.arange(15.0, dtype=np.float32).reshape(5, 3)
    mom = np.full((5, 3), 0.5, np.float32)
    rows = np.array([3, 1, 5], np.int32)  # 5 == N: padding
    g = np.array([[1.0, -1.0, 0.2], [0.1, 0.3, 2.0], [9.0, 9.0, 9.0]], np.float32)
    fn = jax.jit(lambda w, r, g, s: lazy_step(opt, w, r, g, s, _leaf()))
    nw, nm = fn(w, rows, g, mom)
    ew, em = w.copy(), mom.copy()
    for r, gr in zip(rows[:2], g[:2]):
        gc = np.clip(2.0 * gr, -1.5, 1.5)
        em[r] = 0.9 * mom[r] - 0.5 * (gc + 0.1 * w[r])
        ew[r] = w[r] + em[r]
    np.testing.assert_allclose(np.asarray(nw), ew, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(nm), em, rtol=1e-6)


def test_adam_multi_precision_float16_rows():
    opt = mx.optimizer.Adam(multi_precision=True, wd=0.01)
    w16 = jnp.asarray(np.random.RandomState(0).rand(4, 2), jnp.float16)
    state = (w16.astype(jnp.float32), (jnp.zeros((4, 2)), jnp.zeros((4, 2))))
    rows = jnp.array([2, 0], jnp.int32)
    g = jnp.ones((2, 2), jnp.float16)
    nw, (w32, (m, v)) = lazy_step(opt, w16, rows, g, state, _leaf(0.1, 0.01, 1))
    assert nw.dtype == jnp.float16 and w32.dtype == jnp.float32
    untouched = np.array([1, 3])
    np.testing.assert_array_equal(np.asarray(nw)[untouched], np.asarray(w16)[untouched])
    np.testing.assert_array_equal(np.asarray(m)[untouched], 0)
    # the dense rule on the gathered rows
    dense_w, (dense_m, _) = opt._rule(state[0][rows], g.astype(jnp.float32),
                                      (m[rows] * 0, v[rows] * 0), _leaf(0.1, 0.01, 1))  # fmt: skip
    np.testing.assert_allclose(np.asarray(w32)[[2, 0]], np.asarray(dense_w), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(m)[[2, 0]], np.asarray(dense_m), rtol=1e-6)


def test_group_adagrad_history_per_row():
    opt = mx.optimizer.contrib.GroupAdaGrad()
    w = jnp.ones((3, 4))
    h = jnp.zeros((3, 1))
    nw, nh = lazy_step(opt, w, jnp.array([1, 3], jnp.int32), jnp.ones((2, 4)), h, _leaf(0.1, 0.0))
    assert nh.shape == (3, 1)
    np.testing.assert_array_equal(np.asarray(nh)[:, 0], [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(np.asarray(nw)[[0, 2]], 1.0)


def test_adagrad_sparse_refuses_weight_decay():
    check_lazy_wd(mx.optimizer.AdaGrad(), [0.0])
    with pytest.raises(ValueError, match="weight decay"):
        check_lazy_wd(mx.optimizer.AdaGrad(), [0.1])
    check_lazy_wd(mx.optimizer.SGD(), [0.1])  # SGD's lazy kernel has wd


def test_lars_and_lbsgd_lazy_sparse_update_is_not_implemented():
    g = mx.nd.array([[0, 0], [1, 1]]).tostype("row_sparse")
    for opt in (mx.optimizer.LARS(momentum=0.9), mx.optimizer.LBSGD(momentum=0.9)):
        w = mx.nd.ones((2, 2))
        with pytest.raises(NotImplementedError, match="lazy_update=False"):
            opt.update(0, w, g, opt.create_state(0, w))
    opt = mx.optimizer.LARS(momentum=0.9, lazy_update=False)
    w, dense = mx.nd.ones((2, 2)), mx.nd.ones((2, 2))
    ref = mx.optimizer.LARS(momentum=0.9, lazy_update=False)
    opt.update(0, w, g, opt.create_state(0, w))
    ref.update(0, dense, g.tostype("default"), ref.create_state(0, dense))
    np.testing.assert_allclose(w.asnumpy(), dense.asnumpy())


def test_aggregated_update_with_a_sparse_gradient_matches_single_updates():
    g_rsp = mx.nd.array([[0, 0], [1, -1], [0, 0]]).tostype("row_sparse")
    g_dense = mx.nd.array([[0.5, 0.5], [0, 0], [1, 1]])

    def run(together):
        opt = mx.optimizer.SGD(momentum=0.9, wd=0.1, learning_rate=0.5)
        ws = [mx.nd.ones((3, 2)), mx.nd.ones((3, 2))]
        states = [opt.create_state(i, w) for i, w in enumerate(ws)]
        if together:
            opt.update([0, 1], ws, [g_rsp, g_dense], states)
        else:
            opt.update(0, ws[0], g_rsp, states[0])
            opt.update(1, ws[1], g_dense, states[1])
        return [w.asnumpy() for w in ws]

    for a, b in zip(run(True), run(False)):
        np.testing.assert_allclose(a, b)
    lazy = run(True)[0]
    np.testing.assert_array_equal(lazy[[0, 2]], 1.0)  # rows without gradient did not move
