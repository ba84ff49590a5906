"""BatchNorm's training-mode forward and backward (a hand-written gradient, ops/norm.py)
against the batch-statistics formulas evaluated in float64."""

import numpy as np
import pytest

import mxmod as mx


def _reference(x, gamma, beta, dy, axis, eps, fix_gamma):
    red = tuple(i for i in range(x.ndim) if i != axis % x.ndim)
    shp = [1] * x.ndim
    shp[axis] = x.shape[axis]
    g = np.ones_like(gamma) if fix_gamma else gamma
    mean = x.mean(red)
    var = ((x - mean.reshape(shp)) ** 2).mean(red)
    xhat = (x - mean.reshape(shp)) / np.sqrt(var + eps).reshape(shp)
    y = xhat * g.reshape(shp) + beta.reshape(shp)
    n = x.size // x.shape[axis]
    dxhat = dy * g.reshape(shp)
    dx = n * dxhat - dxhat.sum(red, keepdims=True) - xhat * (dxhat * xhat).sum(red, keepdims=True)
    dx = dx / (n * np.sqrt(var + eps).reshape(shp))
    dgamma = np.zeros_like(gamma) if fix_gamma else (dy * xhat).sum(red)
    return y, dx, dgamma, dy.sum(red), mean, var


@pytest.mark.parametrize(
    "shape,axis,fix_gamma,dtype",
    [
        ((4, 3, 5, 5), 1, False, "float32"),  # channel-last inside the layout pass
        ((4, 3, 5, 5), 1, True, "float32"),
        ((6, 7), 1, False, "float32"),
        ((2, 5, 4), -1, False, "float32"),
        ((4, 3, 5, 5), 1, False, "float16"),
    ],
)
def test_batchnorm_training_gradient_matches_the_formula(shape, axis, fix_gamma, dtype):
    rng = np.random.RandomState(0)
    c = shape[axis]
    x = (rng.randn(*shape) * 2 + 3).astype(dtype)
    gamma, beta = rng.rand(c).astype("float32") + 0.5, rng.randn(c).astype("float32")
    dy = rng.randn(*shape).astype(dtype)
    data = mx.sym.Variable("data")
    net = mx.sym.BatchNorm(data, axis=axis, fix_gamma=fix_gamma, eps=1e-3, momentum=0.8, name="bn")
    if len(shape) == 4:  # a convolution in front: BatchNorm runs channel-last
        net = mx.sym.BatchNorm(
            mx.sym.Convolution(data, num_filter=c, kernel=(1, 1), no_bias=True, name="conv"),
            axis=axis,
            fix_gamma=fix_gamma,
            eps=1e-3,
            momentum=0.8,
            name="bn",
        )
    exe = net.simple_bind(mx.cpu(), data=shape, type_dict={"data": dtype})
    exe.arg_dict["data"][:] = x
    exe.arg_dict["bn_gamma"][:] = gamma
    exe.arg_dict["bn_beta"][:] = beta
    bn_in = x.astype("float64")
    if len(shape) == 4:
        eye = np.eye(c, dtype=dtype).reshape(c, c, 1, 1)
        exe.arg_dict["conv_weight"][:] = eye
    exe.aux_dict["bn_moving_mean"][:] = 0.5
    exe.aux_dict["bn_moving_var"][:] = 2.0
    (y,) = exe.forward(is_train=True)
    exe.backward(mx.nd.array(dy, dtype=dtype))
    ref_y, ref_dx, ref_dg, ref_db, mean, var = _reference(
        bn_in,
        gamma.astype("float64"),
        beta.astype("float64"),
        dy.astype("float64"),
        axis,
        1e-3,
        fix_gamma,
    )
    tol = 1e-4 if dtype == "float32" else 2e-2
    np.testing.assert_allclose(y.asnumpy().astype("float64"), ref_y, rtol=tol, atol=tol)
    np.testing.assert_allclose(
        exe.grad_dict["data"].asnumpy().astype("float64"), ref_dx, rtol=tol, atol=tol
    )
    np.testing.assert_allclose(exe.grad_dict["bn_gamma"].asnumpy(), ref_dg, rtol=tol, atol=tol)
    np.testing.assert_allclose(exe.grad_dict["bn_beta"].asnumpy(), ref_db, rtol=tol, atol=tol)
    np.testing.assert_allclose(
        exe.aux_dict["bn_moving_mean"].asnumpy(), 0.5 * 0.8 + mean * 0.2, rtol=tol, atol=tol
    )
    np.testing.assert_allclose(
        exe.aux_dict["bn_moving_var"].asnumpy(), 2.0 * 0.8 + var * 0.2, rtol=tol, atol=tol
    )


def test_batchnorm_mean_and_var_outputs_carry_no_gradient():
    """MXNet's BatchNorm backward reads the output's gradient only."""
    x = np.random.RandomState(1).randn(4, 3).astype("float32")
    bn = mx.sym.BatchNorm(mx.sym.Variable("data"), output_mean_var=True, fix_gamma=False, name="bn")
    net = mx.sym.Group([mx.sym.BlockGrad(bn[0]), bn[1] * 3.0, bn[2] * 5.0])
    exe = net.simple_bind(mx.cpu(), data=x.shape)
    exe.arg_dict["data"][:] = x
    exe.forward(is_train=True)
    exe.backward([mx.nd.zeros((4, 3)), mx.nd.ones((3,)), mx.nd.ones((3,))])
    assert not exe.grad_dict["data"].asnumpy().any()
    assert not exe.grad_dict["bn_gamma"].asnumpy().any()
