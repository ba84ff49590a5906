"""``_contrib_fft``, ``_contrib_ifft`` and ``_contrib_count_sketch`` (GPU-only in MXNet
1.9.1, so no CPU goldens): against numpy's FFT with MXNet's layout and scaling (interleaved
real/imag, unnormalised inverse, real part), MXNet's documented count-sketch example, and
gradients against finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

RS = np.random.RandomState(0)


@pytest.mark.parametrize("shape", [(3, 4), (2, 1, 3, 5)])
def test_fft_interleaves_real_and_imaginary_parts(shape):
    x = RS.randn(*shape).astype(np.float32)
    out = mx.nd.contrib.fft(mx.nd.array(x)).asnumpy()
    want = np.fft.fft(x.astype(np.float64), axis=-1)
    assert out.shape == shape[:-1] + (2 * shape[-1],)
    np.testing.assert_allclose(out[..., 0::2], want.real, atol=1e-5)
    np.testing.assert_allclose(out[..., 1::2], want.imag, atol=1e-5)


@pytest.mark.parametrize("shape", [(3, 8), (1, 2, 2, 6)])
def test_ifft_is_the_unnormalised_inverse_real_part(shape):
    x = RS.randn(*shape).astype(np.float32)
    out = mx.nd.contrib.ifft(mx.nd.array(x)).asnumpy()
    d = shape[-1] // 2
    z = x[..., 0::2].astype(np.float64) + 1j * x[..., 1::2]
    np.testing.assert_allclose(out, (np.fft.ifft(z, axis=-1) * d).real, atol=1e-5)


def test_ifft_undoes_fft_up_to_the_length():
    x = RS.randn(2, 5).astype(np.float32)
    back = mx.nd.contrib.ifft(mx.nd.contrib.fft(mx.nd.array(x))).asnumpy()
    np.testing.assert_allclose(back, 5 * x, rtol=1e-5, atol=1e-5)


def test_count_sketch_documented_example():
    x = mx.nd.array([[1.2, 2.5, 3.4], [3.2, 5.7, 6.6]])
    h, s = mx.nd.array([[0, 3, 4]]), mx.nd.array([[1, -1, 1]])
    out = mx.nd.contrib.count_sketch(data=x, h=h, s=s, out_dim=5).asnumpy()
    np.testing.assert_allclose(out, [[1.2, 0, 0, -2.5, 3.4], [3.2, 0, 0, -5.7, 6.6]], rtol=1e-6)


def test_count_sketch_sums_colliding_buckets_on_4d_data():
    x = RS.randn(2, 1, 3, 4).astype(np.float32)
    h, s = np.array([[1, 1, 0, 2]], np.float32), np.array([[1, -1, -1, 1]], np.float32)
    out = mx.nd.contrib.count_sketch(mx.nd.array(x), mx.nd.array(h), mx.nd.array(s), out_dim=3)
    want = np.zeros((2, 1, 3, 3), np.float32)
    for i in range(4):
        want[..., int(h[0, i])] += x[..., i] * s[0, i]
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)


@pytest.mark.parametrize(
    "sym,loc",
    [
        (mx.sym.contrib.fft(mx.sym.var("data")), {"data": RS.randn(2, 3)}),
        (mx.sym.contrib.ifft(mx.sym.var("data")), {"data": RS.randn(2, 6)}),
    ],
)
def test_transform_gradients_match_finite_differences(sym, loc):
    mx.test_utils.check_numeric_gradient(sym, loc, numeric_eps=1e-2, rtol=1e-2, atol=1e-3)


def test_count_sketch_gradient_reaches_data_only():
    sym = mx.sym.contrib.count_sketch(
        mx.sym.var("data"), mx.sym.var("h"), mx.sym.var("s"), out_dim=3
    )
    ex = sym.simple_bind(mx.cpu(), data=(2, 4), h=(1, 4), s=(1, 4))
    ex.arg_dict["data"][:] = RS.randn(2, 4)
    ex.arg_dict["h"][:] = np.array([[2, 0, 2, 1]])
    ex.arg_dict["s"][:] = np.array([[1, -1, 1, -1]])
    ex.forward(is_train=True)
    head = RS.randn(2, 3).astype(np.float32)
    ex.backward(mx.nd.array(head))
    want = head[:, [2, 0, 2, 1]] * np.array([1, -1, 1, -1])
    np.testing.assert_allclose(ex.grad_dict["data"].asnumpy(), want, rtol=1e-6)
    assert not ex.grad_dict["h"].asnumpy().any() and not ex.grad_dict["s"].asnumpy().any()


@pytest.mark.parametrize(
    "make,shapes,msg",
    [
        (lambda d: mx.sym.contrib.fft(d), {"data": (2, 3, 4)}, "2-D"),
        (lambda d: mx.sym.contrib.ifft(d), {"data": (2, 5)}, "even"),
        (
            lambda d: mx.sym.contrib.count_sketch(d, mx.sym.var("h"), mx.sym.var("s"), out_dim=3),
            {"data": (2, 4), "h": (1, 3), "s": (1, 4)},
            "must be \\(1, 4\\)",
        ),
    ],
)
def test_bad_shapes_are_refused(make, shapes, msg):
    with pytest.raises(MXNetError, match=msg):
        make(mx.sym.var("data")).infer_shape(**shapes)
