"""MXNet's optimizer update operators, imperative (``mx.nd.sgd_update`` ...).

Each takes the weight, the gradient and the optimizer states, writes the new weight
into ``out`` (usually the weight itself) and updates the state arrays in place, with
MXNet 1.9.1's kernel formulas. The gradient is first multiplied by ``rescale_grad`` and,
when ``clip_gradient`` (``clip_grad`` for FTML) is positive, clipped to that bound.
Each formula is one jitted kernel (hyperparameters are traced, so a new learning rate
does not recompile; a new shape compiles one fused program, not one per primitive).
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp

from .ndarray import NDArray

__all__ = [
    "sgd_update",
    "sgd_mom_update",
    "nag_mom_update",
    "signsgd_update",
    "signum_update",
    "adam_update",
    "rmsprop_update",
    "rmspropalex_update",
    "ftrl_update",
    "ftml_update",
]


def _clip(x, bound):
    """``x`` clipped to ``[-bound, bound]`` when ``bound > 0`` (traced), else ``x``."""
    b = jnp.abs(bound)
    return jnp.where(bound > 0, jnp.clip(x, -b, b), x)


def _grad(g, rescale_grad, clip, plus: Any = 0.0):
    return _clip(g * rescale_grad + plus, clip)


def _kernel(fn):
    """Jit ``fn`` and run it on NDArrays' data; ``None`` hyperparameters become -1."""
    jitted = jax.jit(fn)

    @functools.wraps(fn)
    def run(*arrays, **hyper):
        hyper = {k: (-1.0 if v is None else v) for k, v in hyper.items()}
        return jitted(*(a._data for a in arrays), **hyper)

    return run


def _finish(weight: NDArray, out: NDArray | None, new_w, states: tuple = ()) -> NDArray:
    for arr, value in states:
        arr._set_data(value.astype(arr._data.dtype))
    target = weight if out is None else out
    target._set_data(new_w.astype(target._data.dtype))
    return target


def _check(name: str, *arrays: Any) -> None:
    for a in arrays:
        if not isinstance(a, NDArray):
            raise TypeError(f"mx.nd.{name}: inputs must be NDArrays, got {type(a).__name__}")


@_kernel
def _sgd(w, g, lr, wd, rescale_grad, clip_gradient):
    return (1 - lr * wd) * w - lr * _grad(g, rescale_grad, clip_gradient)


def sgd_update(weight, grad, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, out=None, **_):
    """``weight = (1 - lr*wd) * weight - lr * g``."""
    _check("sgd_update", weight, grad)
    hyper = dict(lr=lr, wd=wd, rescale_grad=rescale_grad, clip_gradient=clip_gradient)
    return _finish(weight, out, _sgd(weight, grad, **hyper))


@_kernel
def _sgd_mom(w, g, mom, lr, momentum, wd, rescale_grad, clip_gradient):
    m = momentum * mom - lr * wd * w - lr * _grad(g, rescale_grad, clip_gradient)
    return w + m, m


def sgd_mom_update(
    weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, out=None, **_
):
    """``mom = momentum*mom - lr*wd*weight - lr*g``; ``weight += mom``."""
    _check("sgd_mom_update", weight, grad, mom)
    new_w, m = _sgd_mom(
        weight,
        grad,
        mom,
        lr=lr,
        momentum=momentum,
        wd=wd,
        rescale_grad=rescale_grad,
        clip_gradient=clip_gradient,
    )
    return _finish(weight, out, new_w, ((mom, m),))


@_kernel
def _nag_mom(w, g, mom, lr, momentum, wd, rescale_grad, clip_gradient, aliased):
    g = _grad(g, rescale_grad, clip_gradient)
    step = lr * (wd * w + g)
    new_w = w + momentum * (momentum * mom - step) - step
    seen = jnp.where(aliased, new_w, w)
    return new_w, momentum * mom - lr * (wd * seen + g)


def nag_mom_update(
    weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, out=None, **_
):
    """Nesterov, as MXNet's kernel: ``step = lr*(wd*weight + g)``,
    ``weight += momentum*(momentum*mom - step) - step``; the stored momentum is
    ``momentum*mom - lr*(wd*w + g)`` with ``w`` the weight the kernel leaves in place (the
    new one when ``out`` is the weight itself, as MXNet's in-place kernel reads it)."""
    _check("nag_mom_update", weight, grad, mom)
    new_w, m = _nag_mom(
        weight,
        grad,
        mom,
        lr=lr,
        momentum=momentum,
        wd=wd,
        rescale_grad=rescale_grad,
        clip_gradient=clip_gradient,
        aliased=out is None or out is weight,
    )
    return _finish(weight, out, new_w, ((mom, m),))


@_kernel
def _signsgd(w, g, lr, wd, rescale_grad, clip_gradient):
    return (1 - lr * wd) * w - lr * jnp.sign(_grad(g, rescale_grad, clip_gradient))


def signsgd_update(weight, grad, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, out=None, **_):
    """``weight = (1 - lr*wd) * weight - lr * sign(g)``."""
    _check("signsgd_update", weight, grad)
    hyper = dict(lr=lr, wd=wd, rescale_grad=rescale_grad, clip_gradient=clip_gradient)
    return _finish(weight, out, _signsgd(weight, grad, **hyper))


@_kernel
def _signum(w, g, mom, lr, momentum, wd, rescale_grad, clip_gradient, wd_lh):
    g = _grad(g, rescale_grad, clip_gradient)
    m = momentum * mom - (1 - momentum) * wd * w - (1 - momentum) * g
    return (1 - lr * wd_lh) * w + lr * jnp.sign(m), m


def signum_update(
    weight,
    grad,
    mom,
    lr,
    momentum=0.0,
    wd=0.0,
    rescale_grad=1.0,
    clip_gradient=-1.0,
    wd_lh=0.0,
    out=None,
    **_,
):
    """``mom = momentum*mom - (1-momentum)*(wd*weight + g)``;
    ``weight = (1 - lr*wd_lh)*weight + lr*sign(mom)``."""
    _check("signum_update", weight, grad, mom)
    new_w, m = _signum(
        weight,
        grad,
        mom,
        lr=lr,
        momentum=momentum,
        wd=wd,
        rescale_grad=rescale_grad,
        clip_gradient=clip_gradient,
        wd_lh=wd_lh,
    )
    return _finish(weight, out, new_w, ((mom, m),))


@_kernel
def _adam(w, g, mean, var, lr, beta1, beta2, epsilon, wd, rescale_grad, clip_gradient):
    g = _grad(g, rescale_grad, clip_gradient, wd * w)
    m = beta1 * mean + (1 - beta1) * g
    v = beta2 * var + (1 - beta2) * g * g
    return w - lr * m / (jnp.sqrt(v) + epsilon), m, v


def adam_update(
    weight,
    grad,
    mean,
    var,
    lr,
    beta1=0.9,
    beta2=0.999,
    epsilon=1e-8,
    wd=0.0,
    rescale_grad=1.0,
    clip_gradient=-1.0,
    out=None,
    **_,
):
    """``g = clip(rescale*grad + wd*weight)``; moving ``mean``/``var``;
    ``weight -= lr * mean / (sqrt(var) + epsilon)`` (no bias correction, as the kernel)."""
    _check("adam_update", weight, grad, mean, var)
    new_w, m, v = _adam(
        weight,
        grad,
        mean,
        var,
        lr=lr,
        beta1=beta1,
        beta2=beta2,
        epsilon=epsilon,
        wd=wd,
        rescale_grad=rescale_grad,
        clip_gradient=clip_gradient,
    )
    return _finish(weight, out, new_w, ((mean, m), (var, v)))


@_kernel
def _rmsprop(w, g, n, lr, gamma1, epsilon, wd, rescale_grad, clip_gradient, clip_weights):
    g = _grad(g, rescale_grad, clip_gradient, wd * w)
    nn = (1 - gamma1) * g * g + gamma1 * n
    return _clip(w - lr * g / jnp.sqrt(nn + epsilon), clip_weights), nn


def rmsprop_update(
    weight,
    grad,
    n,
    lr,
    gamma1=0.95,
    epsilon=1e-8,
    wd=0.0,
    rescale_grad=1.0,
    clip_gradient=-1.0,
    clip_weights=-1.0,
    out=None,
    **_,
):
    """``n = (1-gamma1)*g^2 + gamma1*n``; ``weight -= lr * g / sqrt(n + epsilon)``."""
    _check("rmsprop_update", weight, grad, n)
    new_w, nn = _rmsprop(
        weight,
        grad,
        n,
        lr=lr,
        gamma1=gamma1,
        epsilon=epsilon,
        wd=wd,
        rescale_grad=rescale_grad,
        clip_gradient=clip_gradient,
        clip_weights=clip_weights,
    )
    return _finish(weight, out, new_w, ((n, nn),))


@_kernel
def _rmspropalex(
    w, g, n, gs, delta, lr, gamma1, gamma2, epsilon, wd, rescale_grad, clip_gradient, clip_weights
):
    gr = _grad(g, rescale_grad, clip_gradient, wd * w)
    nn = (1 - gamma1) * gr * gr + gamma1 * n
    gg = (1 - gamma1) * gr + gamma1 * gs
    d = gamma2 * delta - lr * gr / jnp.sqrt(nn - gg * gg + epsilon)
    return _clip(w + d, clip_weights), nn, gg, d


def rmspropalex_update(
    weight,
    grad,
    n,
    g,
    delta,
    lr,
    gamma1=0.95,
    gamma2=0.9,
    epsilon=1e-8,
    wd=0.0,
    rescale_grad=1.0,
    clip_gradient=-1.0,
    clip_weights=-1.0,
    out=None,
    **_,
):
    """Graves' RMSProp: running ``n`` and ``g``; ``delta = gamma2*delta -
    lr * grad / sqrt(n - g^2 + epsilon)``; ``weight += delta``."""
    _check("rmspropalex_update", weight, grad, n, g, delta)
    new_w, nn, gg, d = _rmspropalex(
        weight,
        grad,
        n,
        g,
        delta,
        lr=lr,
        gamma1=gamma1,
        gamma2=gamma2,
        epsilon=epsilon,
        wd=wd,
        rescale_grad=rescale_grad,
        clip_gradient=clip_gradient,
        clip_weights=clip_weights,
    )
    return _finish(weight, out, new_w, ((n, nn), (g, gg), (delta, d)))


@_kernel
def _ftrl(w, g, z, n, lr, lamda1, beta, wd, rescale_grad, clip_gradient):
    g = _grad(g, rescale_grad, clip_gradient)
    nz = z + g - (jnp.sqrt(n + g * g) - jnp.sqrt(n)) * w / lr
    nn = n + g * g
    new_w = (jnp.sign(nz) * lamda1 - nz) / ((beta + jnp.sqrt(nn)) / lr + wd)
    return jnp.where(jnp.abs(nz) > lamda1, new_w, 0.0), nz, nn


def ftrl_update(
    weight,
    grad,
    z,
    n,
    lr,
    lamda1=0.01,
    beta=1.0,
    wd=0.0,
    rescale_grad=1.0,
    clip_gradient=-1.0,
    out=None,
    **_,
):
    """FTRL-proximal: ``z += g - (sqrt(n+g^2) - sqrt(n)) * weight / lr``; ``n += g^2``;
    ``weight = (sign(z)*lamda1 - z) / ((beta + sqrt(n))/lr + wd)`` where ``|z| > lamda1``."""
    _check("ftrl_update", weight, grad, z, n)
    new_w, nz, nn = _ftrl(
        weight,
        grad,
        z,
        n,
        lr=lr,
        lamda1=lamda1,
        beta=beta,
        wd=wd,
        rescale_grad=rescale_grad,
        clip_gradient=clip_gradient,
    )
    return _finish(weight, out, new_w, ((z, nz), (n, nn)))


@_kernel
def _ftml(w, g, d, v, z, lr, t, beta1, beta2, epsilon, wd, rescale_grad, clip_grad):
    g = _grad(g, rescale_grad, clip_grad, wd * w)
    nv = beta2 * v + (1 - beta2) * g * g
    d_t = (1 - beta1**t) / lr * (jnp.sqrt(nv / (1 - beta2**t)) + epsilon)
    nz = beta1 * z + (1 - beta1) * g - (d_t - beta1 * d) * w
    return -nz / d_t, d_t, nv, nz


def ftml_update(
    weight,
    grad,
    d,
    v,
    z,
    lr,
    t,
    beta1=0.6,
    beta2=0.999,
    epsilon=1e-8,
    wd=0.0,
    rescale_grad=1.0,
    clip_grad=-1.0,
    out=None,
    **_,
):
    """FTML (step ``t`` from 1): ``v`` second moment; ``d_t = (1-beta1^t)/lr *
    (sqrt(v/(1-beta2^t)) + epsilon)``; ``z = beta1*z + (1-beta1)*g - (d_t - beta1*d)*weight``;
    ``weight = -z / d_t``."""
    _check("ftml_update", weight, grad, d, v, z)
    new_w, d_t, nv, nz = _ftml(
        weight,
        grad,
        d,
        v,
        z,
        lr=lr,
        t=t,
        beta1=beta1,
        beta2=beta2,
        epsilon=epsilon,
        wd=wd,
        rescale_grad=rescale_grad,
        clip_grad=clip_grad,
    )
    return _finish(weight, out, new_w, ((d, d_t), (v, nv), (z, nz)))
