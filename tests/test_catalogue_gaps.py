"""Gaps found running MXNet 1.9.1's own optimizer/kvstore/metric test files: ``out=`` on the
imperative math functions, ``mx.base.py_str``, and one compile shared by optimizer instances
with equal settings (MXNet's tests build hundreds of optimizers)."""

import numpy as np
import pytest

import mxmod as mx
from mxmod.optimizer import _imperative


def test_py_str_decodes_bytes_and_passes_str():
    assert mx.base.py_str(b"fc1_weight") == "fc1_weight"
    assert mx.base.py_str("a") == "a"


def test_math_functions_write_into_out_and_views():
    a = mx.nd.ones((3, 4)) * 3
    ret = mx.nd.square(a[1], out=a[1])
    np.testing.assert_array_equal(a.asnumpy()[:, 0], [3, 9, 3])
    assert ret.shape == (4,)
    b = mx.nd.zeros((3, 4))
    mx.nd.clip(a, 0, 4, out=b)
    np.testing.assert_array_equal(b.asnumpy()[:, 0], [3, 4, 3])
    s = mx.nd.zeros((1,))
    mx.nd.sum(a, out=s, name="total")
    assert s.asscalar() == 4 * (3 + 9 + 3)


def test_math_out_with_wrong_shape_names_both_shapes():
    with pytest.raises(mx.base.MXNetError, match=r"out has shape \(2,\).*\(3,\)"):
        mx.nd.sqrt(mx.nd.ones((3,)), out=mx.nd.zeros((2,)))
    with pytest.raises(TypeError, match="out must be an NDArray"):
        mx.nd.exp(mx.nd.ones((3,)), out=np.zeros(3))


def _one_step(opt):
    w = mx.nd.array([[0.5, -1.0], [2.0, 1.0]])
    g = mx.nd.array([[1.0, -2.0], [0.5, 0.25]])
    state = opt.create_state_multi_precision(0, w)
    opt.update_multi_precision(0, w, g, state)
    return w.asnumpy()


def test_equal_settings_share_one_compile_and_different_ones_do_not():
    first = _one_step(mx.optimizer.SGD(momentum=0.7, wd=0.01, learning_rate=0.1))
    size = _imperative._shared_step._cache_size()
    again = _one_step(mx.optimizer.SGD(momentum=0.7, wd=0.01, learning_rate=0.1))
    assert _imperative._shared_step._cache_size() == size
    np.testing.assert_array_equal(first, again)
    # momentum is read by the rule: a new program, and a different (correct) result
    other = _one_step(mx.optimizer.SGD(momentum=0.0, wd=0.01, learning_rate=0.1))
    assert _imperative._shared_step._cache_size() == size + 1
    w = np.array([[0.5, -1.0], [2.0, 1.0]], np.float32)
    g = np.array([[1.0, -2.0], [0.5, 0.25]], np.float32)
    np.testing.assert_allclose(other, w - 0.1 * (g + 0.01 * w), rtol=1e-6)
    np.testing.assert_allclose(first, w - 0.1 * (g + 0.01 * w), rtol=1e-6)


def test_a_setting_changed_after_a_step_recompiles():
    kept, changed, fresh = (mx.optimizer.Adam(learning_rate=0.1, beta1=b) for b in (0.9, 0.9, 0.5))
    for opt in (kept, changed, fresh):
        _one_step(opt)
    changed.beta1 = 0.5
    second = [_one_step(opt) for opt in (kept, changed, fresh)]
    np.testing.assert_array_equal(second[1], second[2])
    assert not np.allclose(second[0], second[1])


def test_user_subclass_keeps_its_own_compile():
    class Scaled(mx.optimizer.SGD):
        def __init__(self, scale, **kw):
            super().__init__(**kw)
            self.scale = scale  # read by the rule below but not listed in _rule_attrs

        def _rule(self, w, g, s, leaf):
            nw, ns = super()._rule(w, g, s, leaf)
            return w + self.scale * (nw - w), ns

    one = _one_step(Scaled(1.0, learning_rate=0.1))
    two = _one_step(Scaled(2.0, learning_rate=0.1))
    w = np.array([[0.5, -1.0], [2.0, 1.0]], np.float32)
    np.testing.assert_allclose(two - w, 2 * (one - w), rtol=1e-5)


def test_sgld_noise_is_the_next_mx_random_normal_draw():
    w0 = np.array([[0.5, -1.0, 2.0], [1.0, 0.0, -0.5]], np.float32)
    g = mx.nd.array([[1.0, -2.0, 0.5], [0.25, 0.0, 1.0]])
    lr, wd = 0.04, 0.1
    mx.random.seed(7)
    ws = [mx.nd.array(w0), mx.nd.array(w0 * 2)]
    upd = mx.optimizer.get_updater(mx.optimizer.SGLD(learning_rate=lr, wd=wd))
    upd([0, 1], [g, g], ws)
    mx.random.seed(7)
    for w, start in zip(ws, (w0, w0 * 2)):  # MXNet draws per weight, in order
        noise = mx.random.normal(0, np.sqrt(lr), shape=start.shape).asnumpy()
        expect = start - lr / 2 * (g.asnumpy() + wd * start) + noise
        np.testing.assert_allclose(w.asnumpy(), expect, rtol=1e-5, atol=1e-6)
