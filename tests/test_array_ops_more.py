"""ravel_multi_index/unravel_index, moments, cumsum, khatri_rao, im2col/col2im against
NumPy references (MXNet 1.9.1's semantics; the values noted were checked on MXNet)."""

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

RNG = np.random.RandomState(0)


def test_ravel_and_unravel_match_numpy():
    idx = np.array([[3, 6, 6], [4, 5, 1]])
    flat = mx.nd.ravel_multi_index(mx.nd.array(idx), shape=(7, 6))
    np.testing.assert_array_equal(flat.asnumpy(), np.ravel_multi_index(idx, (7, 6)))
    assert flat.dtype == np.float32  # the input's dtype, as MXNet
    assert mx.nd.ravel_multi_index(mx.nd.array(idx, dtype="int32"), shape=(7, 6)).dtype == np.int32
    back = mx.nd.unravel_index(flat, shape=(7, 6)).asnumpy()
    np.testing.assert_array_equal(back, idx)
    # a first dimension of -1 is unbounded (MXNet: the same indices)
    np.testing.assert_array_equal(mx.nd.unravel_index(flat, shape=(-1, 6)).asnumpy(), idx)
    many = RNG.randint(0, 4 * 5 * 6, size=(2, 3))
    np.testing.assert_array_equal(
        mx.nd.unravel_index(mx.nd.array(many), shape=(4, 5, 6)).asnumpy(),
        np.stack(np.unravel_index(many, (4, 5, 6))),
    )


def test_ravel_errors_name_the_shapes():
    with pytest.raises(MXNetError, match="3 index rows for a shape of 2 dimensions"):
        mx.nd.ravel_multi_index(mx.nd.zeros((3, 4)), shape=(7, 6))
    with pytest.raises(MXNetError, match="must be positive"):
        mx.nd.unravel_index(mx.nd.zeros((3,)), shape=(7, 0))


def test_moments_match_numpy():
    x = RNG.randn(3, 4, 5).astype(np.float32)
    mean, var = mx.nd.moments(mx.nd.array(x), axes=(0, 2))
    np.testing.assert_allclose(mean.asnumpy(), x.mean((0, 2)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var.asnumpy(), x.var((0, 2)), rtol=1e-5, atol=1e-6)
    mean, var = mx.nd.moments(mx.nd.array(x), axes=(1,), keepdims=True)
    assert mean.shape == var.shape == (3, 1, 5)
    # no axes: every axis (MXNet refuses; the result is the global moments)
    mean, var = mx.nd.moments(mx.nd.array(x))
    np.testing.assert_allclose([mean.asscalar(), var.asscalar()], [x.mean(), x.var()], rtol=1e-5)
    sym = mx.sym.moments(mx.sym.var("x"), axes=(1,))
    assert sym.list_outputs() == ["moments0_output0", "moments0_output1"]
    assert sym.infer_shape(x=(3, 4, 5))[1] == [(3, 5), (3, 5)]
    with pytest.raises(MXNetError, match="out of range"):
        mx.nd.moments(mx.nd.array(x), axes=(3,))


def test_moments_gradient():
    x = RNG.randn(4, 3).astype(np.float32)
    data = mx.sym.var("x")
    mean, var = mx.sym.moments(data, axes=(0,))
    loss = mx.sym.MakeLoss(mx.sym.sum(var) + mx.sym.sum(mean))
    ex = loss.simple_bind(mx.cpu(), x=x.shape)
    ex.forward(is_train=True, x=mx.nd.array(x))
    ex.backward()
    expect = 2 * (x - x.mean(0)) / x.shape[0] + 1.0 / x.shape[0]
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), expect, rtol=1e-4, atol=1e-6)


def test_cumsum():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = mx.nd.array(x)
    np.testing.assert_array_equal(mx.nd.cumsum(a).asnumpy(), np.cumsum(x))  # flattened
    np.testing.assert_array_equal(mx.nd.cumsum(a, axis=0).asnumpy(), np.cumsum(x, 0))
    np.testing.assert_array_equal(mx.nd.cumsum(a, axis=-1).asnumpy(), np.cumsum(x, -1))
    assert mx.nd.cumsum(a.astype("int32"), axis=1).dtype == np.int32
    assert mx.nd.cumsum(a.astype("int32"), axis=1, dtype="float32").dtype == np.float32
    with pytest.raises(MXNetError, match="axis=2 is out of range"):
        mx.nd.cumsum(a, axis=2)


def test_khatri_rao():
    a, b = np.array([[1.0, -1], [2, -3]]), np.array([[1.0, 4], [2, 5], [3, 6]])
    out = mx.nd.khatri_rao(mx.nd.array(a), mx.nd.array(b)).asnumpy()
    # MXNet's documented example
    np.testing.assert_array_equal(out, [[1, -4], [2, -5], [3, -6], [2, -12], [4, -15], [6, -18]])
    c = RNG.randn(2, 2)
    three = mx.nd.khatri_rao(mx.nd.array(a), mx.nd.array(b), mx.nd.array(c)).asnumpy()
    expect = np.stack([np.kron(np.kron(a[:, k], b[:, k]), c[:, k]) for k in range(2)], 1)
    np.testing.assert_allclose(three, expect, rtol=1e-5)
    sym = mx.sym.khatri_rao(mx.sym.var("a"), mx.sym.var("b"))
    assert sym.infer_shape(a=(2, 3), b=(4, 3))[1] == [(8, 3)]
    with pytest.raises(MXNetError, match="same number of columns"):
        mx.nd.khatri_rao(mx.nd.ones((2, 3)), mx.nd.ones((2, 4)))


def im2col_reference(x, kernel, stride, pad, dilate):
    n, c = x.shape[:2]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    outs = [
        (s + 2 * p - d * (k - 1) - 1) // st + 1
        for s, k, st, p, d in zip(x.shape[2:], kernel, stride, pad, dilate)
    ]
    cols = np.zeros((n, c * kernel[0] * kernel[1], outs[0] * outs[1]), x.dtype)
    for ch in range(c):
        for ki in range(kernel[0]):
            for kj in range(kernel[1]):
                row = ch * kernel[0] * kernel[1] + ki * kernel[1] + kj
                for oi in range(outs[0]):
                    for oj in range(outs[1]):
                        i, j = oi * stride[0] + ki * dilate[0], oj * stride[1] + kj * dilate[1]
                        cols[:, row, oi * outs[1] + oj] = xp[:, ch, i, j]
    return cols


@pytest.mark.parametrize(
    "kernel,stride,pad,dilate", [((3, 3), (2, 2), (1, 1), (1, 1)), ((2, 3), (1, 2), (0, 1), (2, 1))]
)
def test_im2col_and_col2im(kernel, stride, pad, dilate):
    x = RNG.randn(2, 3, 6, 7).astype(np.float32)
    kw = dict(kernel=kernel, stride=stride, pad=pad, dilate=dilate)
    cols = mx.nd.im2col(mx.nd.array(x), **kw).asnumpy()
    np.testing.assert_allclose(cols, im2col_reference(x, kernel, stride, pad, dilate), rtol=1e-6)
    # col2im is im2col's adjoint: <im2col(x), y> == <x, col2im(y)>
    y = RNG.randn(*cols.shape).astype(np.float32)
    back = mx.nd.col2im(mx.nd.array(y), output_size=(6, 7), **kw).asnumpy()
    assert back.shape == x.shape
    np.testing.assert_allclose((cols * y).sum(), (x * back).sum(), rtol=1e-4)


def test_col2im_value_checked_on_mxnet():
    x = mx.nd.array(np.arange(2 * 2 * 5 * 5.0).reshape(2, 2, 5, 5))
    kw = dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1))
    back = mx.nd.col2im(mx.nd.im2col(x, **kw), output_size=(5, 5), **kw).asnumpy()
    np.testing.assert_array_equal(back[1, 1, 1], [160, 324, 164, 332, 168])


def test_im2col_in_a_symbol_has_col2im_as_gradient():
    data = mx.sym.var("data")
    loss = mx.sym.MakeLoss(mx.sym.sum(mx.sym.im2col(data, kernel=(2, 2)) * mx.sym.var("w")))
    x, w = RNG.randn(1, 2, 3, 3).astype(np.float32), RNG.randn(1, 8, 4).astype(np.float32)
    ex = loss.simple_bind(mx.cpu(), data=x.shape, w=w.shape)
    ex.forward(is_train=True, data=mx.nd.array(x), w=mx.nd.array(w))
    ex.backward()
    expect = mx.nd.col2im(mx.nd.array(w), output_size=(3, 3), kernel=(2, 2)).asnumpy()
    np.testing.assert_allclose(ex.grad_dict["data"].asnumpy(), expect, rtol=1e-5)


def test_im2col_errors():
    with pytest.raises(MXNetError, match="needs 4 dimensions"):
        mx.nd.im2col(mx.nd.ones((2, 3, 4)), kernel=(2, 2))
    with pytest.raises(MXNetError, match="larger than the input"):
        mx.nd.im2col(mx.nd.ones((1, 1, 2, 2)), kernel=(3, 3))
    with pytest.raises(MXNetError, match="columns; output_size"):
        mx.nd.col2im(mx.nd.ones((1, 4, 5)), output_size=(3, 3), kernel=(2, 2))


def test_round_is_exact_half_away_from_zero():
    # x + 0.5 in float32 rounds 0.49999997 up to 1.0 (MXNet gives 0)
    x = np.array([0.49999997, 0.5, -0.5, 1.5, -2.5, 2.4999998], dtype=np.float32)
    np.testing.assert_array_equal(mx.nd.round(mx.nd.array(x)).asnumpy(), [0, 1, -1, 2, -3, 2])
