"""MXNet's optimizer update operators, imperative (``mx.nd.sgd_update`` ...).

Each takes the weight, the gradient and the optimizer states, writes the new weight
into ``out`` (usually the weight itself) and updates the state arrays in place, with
MXNet 1.9.1's kernel formulas. The gradient is first multiplied by ``rescale_grad`` and,
when ``clip_gradient`` (``clip_grad`` for FTML) is positive, clipped to that bound.
"""

from __future__ import annotations

from typing import Any

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


def _grad(grad: NDArray, rescale_grad: float, clip: float, plus: Any = 0.0):
    g = grad._data * rescale_grad + plus
    return jnp.clip(g, -clip, clip) if clip is not None and clip > 0 else g


def _finish(weight: NDArray, new_w, out: NDArray | None, states: tuple = ()) -> NDArray:
    for arr, value in states:
        arr._set_data(value.astype(arr._data.dtype))
    target = weight if out is None else out
    target._set_data(new_w.astype(target._data.dtype))
    return target


def _check(name: str, *arrays: Any) -> None:
    for a in arrays:
        if not isinstance(a, NDArray):
            raise TypeError(f"mx.nd.{name}: inputs must be NDArrays, got {type(a).__name__}")


def sgd_update(weight, grad, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, out=None, **_):
    """``weight = (1 - lr*wd) * weight - lr * g``."""
    _check("sgd_update", weight, grad)
    g = _grad(grad, rescale_grad, clip_gradient)
    return _finish(weight, (1 - lr * wd) * weight._data - lr * g, out)


def sgd_mom_update(
    weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, out=None, **_
):
    """``mom = momentum*mom - lr*wd*weight - lr*g``; ``weight += mom``."""
    _check("sgd_mom_update", weight, grad, mom)
    g = _grad(grad, rescale_grad, clip_gradient)
    w = weight._data
    m = momentum * mom._data - lr * wd * w - lr * g
    return _finish(weight, w + m, out, ((mom, m),))


def nag_mom_update(
    weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, out=None, **_
):
    """Nesterov, as MXNet's kernel: ``step = lr*(wd*weight + g)``,
    ``weight += momentum*(momentum*mom - step) - step``; the stored momentum is
    ``momentum*mom - lr*(wd*w + g)`` with ``w`` the weight the kernel leaves in place (the
    new one when ``out`` is the weight itself, as MXNet's in-place kernel reads it)."""
    _check("nag_mom_update", weight, grad, mom)
    w = weight._data
    g = _grad(grad, rescale_grad, clip_gradient)
    step = lr * (wd * w + g)
    new_w = w + momentum * (momentum * mom._data - step) - step
    seen = new_w if out is None or out is weight else w
    m = momentum * mom._data - lr * (wd * seen + g)
    return _finish(weight, new_w, out, ((mom, m),))


def signsgd_update(weight, grad, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, out=None, **_):
    """``weight = (1 - lr*wd) * weight - lr * sign(g)``."""
    _check("signsgd_update", weight, grad)
    g = _grad(grad, rescale_grad, clip_gradient)
    return _finish(weight, (1 - lr * wd) * weight._data - lr * jnp.sign(g), out)


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
    w = weight._data
    g = _grad(grad, rescale_grad, clip_gradient)
    m = momentum * mom._data - (1 - momentum) * wd * w - (1 - momentum) * g
    return _finish(weight, (1 - lr * wd_lh) * w + lr * jnp.sign(m), out, ((mom, m),))


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
    w = weight._data
    g = _grad(grad, rescale_grad, clip_gradient, wd * w)
    m = beta1 * mean._data + (1 - beta1) * g
    v = beta2 * var._data + (1 - beta2) * g * g
    return _finish(weight, w - lr * m / (jnp.sqrt(v) + epsilon), out, ((mean, m), (var, v)))


def _clip_weights(w, clip_weights):
    return jnp.clip(w, -clip_weights, clip_weights) if clip_weights and clip_weights > 0 else w


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
    w = weight._data
    g = _grad(grad, rescale_grad, clip_gradient, wd * w)
    nn = (1 - gamma1) * g * g + gamma1 * n._data
    new_w = _clip_weights(w - lr * g / jnp.sqrt(nn + epsilon), clip_weights)
    return _finish(weight, new_w, out, ((n, nn),))


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
    w = weight._data
    gr = _grad(grad, rescale_grad, clip_gradient, wd * w)
    nn = (1 - gamma1) * gr * gr + gamma1 * n._data
    gg = (1 - gamma1) * gr + gamma1 * g._data
    d = gamma2 * delta._data - lr * gr / jnp.sqrt(nn - gg * gg + epsilon)
    new_w = _clip_weights(w + d, clip_weights)
    return _finish(weight, new_w, out, ((n, nn), (g, gg), (delta, d)))


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
    w = weight._data
    g = _grad(grad, rescale_grad, clip_gradient)
    nz = z._data + g - (jnp.sqrt(n._data + g * g) - jnp.sqrt(n._data)) * w / lr
    nn = n._data + g * g
    new_w = (jnp.sign(nz) * lamda1 - nz) / ((beta + jnp.sqrt(nn)) / lr + wd)
    new_w = jnp.where(jnp.abs(nz) > lamda1, new_w, 0.0)
    return _finish(weight, new_w, out, ((z, nz), (n, nn)))


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
    w = weight._data
    g = _grad(grad, rescale_grad, clip_grad, wd * w)
    nv = beta2 * v._data + (1 - beta2) * g * g
    d_t = (1 - beta1**t) / lr * (jnp.sqrt(nv / (1 - beta2**t)) + epsilon)
    nz = beta1 * z._data + (1 - beta1) * g - (d_t - beta1 * d._data) * w
    return _finish(weight, -nz / d_t, out, ((d, d_t), (v, nv), (z, nz)))
