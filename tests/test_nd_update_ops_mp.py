"""mx.nd multi-precision / multi-tensor / LAMB update operators and AMP helpers, against the
kernel formulas (values also checked against MXNet 1.9.1 when written)."""

import numpy as np
import pytest

import mxmod as mx

RS = np.random.RandomState(3)


def _arr(*shape, dtype="float32"):
    return mx.nd.array(RS.uniform(-1, 1, shape).astype(dtype), dtype=dtype)


def test_mp_sgd_mom_updates_master_and_casts_weight():
    w = _arr(2, 3, dtype="float16")
    w32, g, mom = w.astype("float32"), _arr(2, 3, dtype="float16"), _arr(2, 3)
    w32_0, g0, m0 = w32.asnumpy(), g.asnumpy().astype(np.float32), mom.asnumpy()
    mx.nd.mp_sgd_mom_update(w, g, mom, w32, lr=0.1, momentum=0.9, wd=0.01, out=w)
    m1 = 0.9 * m0 - 0.1 * 0.01 * w32_0 - 0.1 * g0
    np.testing.assert_allclose(mom.asnumpy(), m1, rtol=1e-6)
    np.testing.assert_allclose(w32.asnumpy(), w32_0 + m1, rtol=1e-6)
    assert w.dtype == np.float16
    np.testing.assert_array_equal(w.asnumpy(), (w32_0 + m1).astype(np.float16))


def test_multi_sgd_update_uses_each_rate_and_decay():
    ws, gs = [_arr(2, 2), _arr(3)], [_arr(2, 2), _arr(3)]
    w0, g0 = [w.asnumpy() for w in ws], [g.asnumpy() for g in gs]
    out = mx.nd.multi_sgd_update(
        ws[0], gs[0], ws[1], gs[1], lrs=(0.1, 0.3), wds=(0.0, 0.2), num_weights=2, out=ws
    )
    assert out[1] is ws[1]
    np.testing.assert_allclose(ws[0].asnumpy(), w0[0] - 0.1 * g0[0], rtol=1e-6)
    np.testing.assert_allclose(ws[1].asnumpy(), (1 - 0.3 * 0.2) * w0[1] - 0.3 * g0[1], rtol=1e-6)


def test_multi_update_with_wrong_array_count_names_the_layout():
    w, g = _arr(2), _arr(2)
    with pytest.raises(mx.base.MXNetError, match="3 arrays per weight"):
        mx.nd.multi_sgd_mom_update(w, g, lrs=(0.1,), wds=(0.0,), num_weights=1)
    with pytest.raises(mx.base.MXNetError, match="one value per weight"):
        mx.nd.multi_sgd_update(w, g, lrs=(0.1, 0.2), wds=(0.0,), num_weights=1)


def test_lamb_phases_follow_the_trust_ratio():
    w, g, mean, var = _arr(3, 2), _arr(3, 2), mx.nd.zeros((3, 2)), mx.nd.zeros((3, 2))
    w0, g0 = w.asnumpy(), g.asnumpy()
    d = mx.nd.lamb_update_phase1(w, g, mean, var, t=1, beta1=0.9, beta2=0.99, wd=0.1)
    # t=1 with bias correction: mean_hat = g, var_hat = g*g
    expect = g0 / (np.abs(g0) + 1e-6) + 0.1 * w0
    np.testing.assert_allclose(d.asnumpy(), expect, rtol=1e-5)
    np.testing.assert_allclose(mean.asnumpy(), 0.1 * g0, rtol=1e-6)
    r1, r2 = w.norm(), d.norm()
    mx.nd.lamb_update_phase2(w, d, r1, r2, lr=0.05, out=w)
    ratio = np.linalg.norm(w0) / np.linalg.norm(expect)
    np.testing.assert_allclose(w.asnumpy(), w0 - 0.05 * ratio * expect, rtol=1e-5)
    zero = mx.nd.zeros((1,))
    before = w.asnumpy()
    mx.nd.lamb_update_phase2(w, d, zero, r2, lr=0.05, out=w)  # a zero norm: ratio 1
    np.testing.assert_allclose(w.asnumpy(), before - 0.05 * d.asnumpy(), rtol=1e-5)


def test_finite_checks_sum_sq_and_reset():
    x, y = _arr(3), _arr(2, 2)
    y[0, 0] = np.inf
    assert mx.nd.all_finite(x).asnumpy().tolist() == [1.0]
    assert mx.nd.all_finite(y).asnumpy().tolist() == [0.0]
    assert mx.nd.multi_all_finite(x, y, num_arrays=2).asnumpy().tolist() == [0.0]
    z = _arr(4)
    sq = mx.nd.multi_sum_sq(x, z, num_arrays=2).asnumpy()
    np.testing.assert_allclose(sq, [np.sum(x.asnumpy() ** 2), np.sum(z.asnumpy() ** 2)], 1e-6)
    mx.nd.reset_arrays(x, z, num_arrays=2)
    assert not x.asnumpy().any() and not z.asnumpy().any()


def _adamw_ref(w, g, m, v, scale, lr, eta, wd, clip, b1=0.9, b2=0.999, eps=1e-8):
    g = np.clip(scale * g, -clip, clip)
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    return w - eta * (lr * m / (np.sqrt(v) + eps) + wd * w), m, v


def test_contrib_adamw_steps_and_skips_on_bad_scale():
    w, g, m, v = _arr(2, 3), _arr(2, 3), _arr(2, 3) * 0.1, mx.nd.abs(_arr(2, 3))
    start = [a.asnumpy() for a in (w, g, m, v)]
    for bad in (0.0, float("nan"), mx.nd.array([np.inf])):
        mx.nd.contrib.adamw_update(w, g, m, v, bad, lr=0.1, eta=0.5, wd=0.01, out=w)
    for a, a0 in zip((w, m, v), (start[0], start[2], start[3])):
        np.testing.assert_array_equal(a.asnumpy(), a0)
    mx.nd.contrib.adamw_update(
        w, g, m, v, mx.nd.array([2.0]), lr=0.1, eta=0.5, wd=0.01, clip_gradient=0.3, out=w
    )
    ref = _adamw_ref(*start, 2.0, 0.1, 0.5, 0.01, 0.3)
    for a, r in zip((w, m, v), ref):
        np.testing.assert_allclose(a.asnumpy(), r, rtol=1e-5, atol=1e-7)


def test_contrib_multi_mp_adamw_updates_master_copies():
    w16 = [_arr(2, 2, dtype="float16"), _arr(3, dtype="float16")]
    w32 = [w.astype("float32") for w in w16]
    gs, ms = [_arr(2, 2), _arr(3)], [mx.nd.zeros((2, 2)), mx.nd.zeros((3,))]
    vs = [mx.nd.zeros((2, 2)), mx.nd.zeros((3,))]
    start = [(w.asnumpy(), g.asnumpy()) for w, g in zip(w32, gs)]
    mx.nd.contrib.multi_mp_adamw_update(
        w16, gs, ms, vs, w32, 1.0, lrs=[0.1, 0.2], etas=[1.0, 0.5], wds=[0.0, 0.1], out=w16
    )
    for i, (lr, eta, wd) in enumerate([(0.1, 1.0, 0.0), (0.2, 0.5, 0.1)]):
        w0, g0 = start[i]
        ref_w = _adamw_ref(w0, g0, 0.0, 0.0, 1.0, lr, eta, wd, np.inf)[0]
        np.testing.assert_allclose(w32[i].asnumpy(), ref_w, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(w16[i].asnumpy(), w32[i].asnumpy().astype(np.float16))
    with pytest.raises(mx.base.MXNetError, match="one entry per weight"):
        mx.nd.contrib.multi_adamw_update(w32, gs, ms, vs, 1.0, lrs=[0.1], etas=[1.0], wds=[0.0])
    with pytest.raises(TypeError, match="rescale_grad must be"):
        mx.nd.contrib.adamw_update(w32[1], gs[1], ms[1], vs[1], "2", lr=0.1, eta=1.0)
