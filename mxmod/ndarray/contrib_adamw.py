"""``mx.nd.contrib.adamw_update`` and its multi-precision / multi-tensor forms (MXNet 1.9.1).

``rescale_grad`` is an NDArray: when it is 0, NaN or infinite the update is skipped (weights
and moments unchanged), which is how AMP drops an overflowed step. Otherwise
``g = clip(rescale_grad * grad)``, moving ``mean``/``var``, and
``weight -= eta * (lr * mean / (sqrt(var) + epsilon) + wd * weight)``.
"""

from __future__ import annotations

import numbers

import jax
import jax.numpy as jnp

from ..base import MXNetError
from .ndarray import NDArray

__all__ = ["adamw_update", "mp_adamw_update", "multi_adamw_update", "multi_mp_adamw_update"]


def _scale(rescale_grad, name: str):
    if isinstance(rescale_grad, NDArray):
        s = rescale_grad._data.astype(jnp.float32).reshape(-1)[0]
    elif isinstance(rescale_grad, numbers.Real):
        s = jnp.float32(rescale_grad)
    else:
        raise TypeError(
            f"mx.nd.contrib.{name}: rescale_grad must be a 1-element NDArray or a number (NaN "
            f"skips the step), got {type(rescale_grad).__name__}"
        )
    return s, jnp.isfinite(s) & (s != 0)


@jax.jit
def _core(w32, g, m, v, scale, ok, lr, eta, wd, beta1, beta2, epsilon, clip):
    # one compiled program per shape; every hyperparameter is traced
    g = scale * g.astype(jnp.float32)
    g = jnp.where(clip >= 0, jnp.clip(g, -jnp.abs(clip), jnp.abs(clip)), g)
    m2 = beta1 * m + (1 - beta1) * g
    v2 = beta2 * v + (1 - beta2) * g * g
    w2 = w32 - eta * (lr * m2 / (jnp.sqrt(v2) + epsilon) + wd * w32)
    return jnp.where(ok, w2, w32), jnp.where(ok, m2, m), jnp.where(ok, v2, v)


def _step(w32, grad, mean, var, scale, ok, lr, eta, wd, beta1, beta2, epsilon, clip_gradient):
    clip = -1.0 if clip_gradient is None else clip_gradient
    hyper = (lr, eta, wd, beta1, beta2, epsilon, clip)
    new_w, m, v = _core(w32, grad._data, mean._data, var._data, scale, ok,
                        *(jnp.float32(h) for h in hyper))  # fmt: skip
    mean._set_data(m.astype(mean._data.dtype))
    var._set_data(v.astype(var._data.dtype))
    return new_w


def _one(name, weight, grad, mean, var, weight32, rescale_grad, out, lr, eta, wd, kw):
    scale, ok = _scale(rescale_grad, name)
    master = weight if weight32 is None else weight32
    new_w = _step(master._data.astype(jnp.float32), grad, mean, var, scale, ok, lr, eta, wd, **kw)
    if weight32 is not None:
        weight32._set_data(new_w.astype(weight32._data.dtype))
    target = weight if out is None else out
    target._set_data(new_w.astype(target._data.dtype))
    return target


def _kw(beta1=0.9, beta2=0.999, epsilon=1e-8, clip_gradient=-1.0, **_):
    return dict(beta1=beta1, beta2=beta2, epsilon=epsilon, clip_gradient=clip_gradient)


def adamw_update(weight, grad, mean, var, rescale_grad, lr, eta, wd=0.0, out=None, **kwargs):
    """One AdamW step on ``weight`` (``mean``/``var`` updated in place)."""
    return _one("adamw_update", weight, grad, mean, var, None, rescale_grad, out, lr, eta, wd,
                _kw(**kwargs))  # fmt: skip


def mp_adamw_update(
    weight, grad, mean, var, weight32, rescale_grad, lr, eta, wd=0.0, out=None, **kwargs
):
    """AdamW on the float32 master ``weight32``; ``out`` (the weight) gets its cast."""
    return _one("mp_adamw_update", weight, grad, mean, var, weight32, rescale_grad, out, lr,
                eta, wd, _kw(**kwargs))  # fmt: skip


def _multi(name, groups, rescale_grad, out, lrs, etas, wds, kwargs):
    n = len(groups[0])
    if any(len(g) != n for g in groups) or not len(lrs) == len(etas) == len(wds) == n:
        raise MXNetError(
            f"mx.nd.contrib.{name}: weights, grads, means, vars (and weights32) and "
            f"lrs/etas/wds need one entry per weight ({n})"
        )
    outs = list(out) if isinstance(out, (list, tuple)) else list(groups[0])
    w32s = groups[4] if len(groups) == 5 else [None] * n
    for i in range(n):
        _one(name, groups[0][i], groups[1][i], groups[2][i], groups[3][i], w32s[i], rescale_grad,
             outs[i], float(lrs[i]), float(etas[i]), float(wds[i]), _kw(**kwargs))  # fmt: skip
    return outs


def multi_adamw_update(weights, grads, means, vars, rescale_grad, lrs, etas, wds, out=None, **kw):
    """``adamw_update`` for each weight, with per-weight ``lrs``/``etas``/``wds``."""
    groups = (weights, grads, means, vars)
    return _multi("multi_adamw_update", groups, rescale_grad, out, lrs, etas, wds, kw)


def multi_mp_adamw_update(
    weights, grads, means, vars, weights32, rescale_grad, lrs, etas, wds, out=None, **kw
):
    """``mp_adamw_update`` for each weight, with per-weight ``lrs``/``etas``/``wds``."""
    groups = (weights, grads, means, vars, weights32)
    return _multi("multi_mp_adamw_update", groups, rescale_grad, out, lrs, etas, wds, kw)
