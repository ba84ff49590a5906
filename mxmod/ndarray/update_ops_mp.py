"""MXNet's multi-precision, multi-tensor and LAMB update operators (``mx.nd.mp_sgd_update``,
``mx.nd.multi_sgd_mom_update``, ``mx.nd.lamb_update_phase1`` ...) and the AMP helpers
``all_finite``/``multi_all_finite``/``multi_sum_sq``/``reset_arrays``.

The ``mp_`` forms run the float32 kernel of :mod:`.update_ops` on the float32 master copy
``weight32`` and write its float16 cast into ``out`` (the weight). The ``multi_`` forms take
MXNet's flat input list (``weight, grad[, mom][, weight32]`` per tensor), per-tensor ``lrs``
and ``wds``, and write each new weight into ``out[i]``.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from ..base import MXNetError
from . import update_ops as _single
from .update_ops import _check
from .ndarray import NDArray

__all__ = [
    "mp_sgd_update",
    "mp_sgd_mom_update",
    "mp_nag_mom_update",
    "multi_sgd_update",
    "multi_sgd_mom_update",
    "multi_mp_sgd_update",
    "multi_mp_sgd_mom_update",
    "preloaded_multi_sgd_update",
    "preloaded_multi_sgd_mom_update",
    "preloaded_multi_mp_sgd_update",
    "preloaded_multi_mp_sgd_mom_update",
    "multi_lars",
    "lamb_update_phase1",
    "lamb_update_phase2",
    "mp_lamb_update_phase1",
    "mp_lamb_update_phase2",
    "all_finite",
    "multi_all_finite",
    "multi_sum_sq",
    "reset_arrays",
]


def _set(target: NDArray, value) -> NDArray:
    target._set_data(value.astype(target._data.dtype))
    return target


def _f32(x: NDArray) -> NDArray:
    return x if x._data.dtype == jnp.float32 else NDArray(x._data.astype(jnp.float32), x._ctx)


def _through_master(kernel, weight, grad, states, weight32, out, kwargs) -> NDArray:
    _check(kernel.__name__, weight, grad, weight32, *states)
    kernel(weight32, _f32(grad), *states, out=weight32, **kwargs)
    if out is None:  # a new array; weight32 (and the states) are updated in place (MXNet)
        return NDArray(weight32._data.astype(weight._data.dtype), weight.context)
    out._set_data(weight32._data.astype(out._data.dtype))
    return out


def mp_sgd_update(weight, grad, weight32, lr, out=None, **kwargs):
    """``sgd_update`` on the float32 ``weight32``; ``out`` (the weight) gets its cast."""
    return _through_master(
        _single.sgd_update, weight, grad, (), weight32, out, dict(lr=lr, **kwargs)
    )


def mp_sgd_mom_update(weight, grad, mom, weight32, lr, out=None, **kwargs):
    """``sgd_mom_update`` on ``weight32`` (float32 ``mom``); ``out`` gets the cast."""
    kw = dict(lr=lr, **kwargs)
    return _through_master(_single.sgd_mom_update, weight, grad, (mom,), weight32, out, kw)


def mp_nag_mom_update(weight, grad, mom, weight32, lr, out=None, **kwargs):
    """``nag_mom_update`` on ``weight32`` (float32 ``mom``); ``out`` gets the cast."""
    kw = dict(lr=lr, **kwargs)
    return _through_master(_single.nag_mom_update, weight, grad, (mom,), weight32, out, kw)


def _multi(name, per, data, lrs, wds, out, num_weights, apply) -> list:
    data = _arrays(data)
    n = len(data) // per
    if len(data) != n * per or (num_weights is not None and int(num_weights) != n):
        raise MXNetError(
            f"mx.nd.{name}: expected {per} arrays per weight for num_weights={num_weights}, "
            f"got {len(data)} arrays"
        )
    if len(lrs) != n or len(wds) != n:
        raise MXNetError(f"mx.nd.{name}: lrs and wds need one value per weight ({n})")
    outs = list(out) if isinstance(out, (list, tuple)) else [None] * n  # None: new arrays
    return [
        apply(*data[i * per : (i + 1) * per], lr=float(lrs[i]), wd=float(wds[i]), out=outs[i])
        for i in range(n)
    ]


def multi_sgd_update(*data, lrs, wds, num_weights=None, out=None, **kwargs):
    """``sgd_update`` for each ``(weight, grad)`` pair of ``data``."""
    return _multi(
        "multi_sgd_update", 2, data, lrs, wds, out, num_weights,
        lambda w, g, **k: _single.sgd_update(w, g, **k, **kwargs),
    )  # fmt: skip


def multi_sgd_mom_update(*data, lrs, wds, num_weights=None, out=None, **kwargs):
    """``sgd_mom_update`` for each ``(weight, grad, mom)`` triple of ``data``."""
    return _multi(
        "multi_sgd_mom_update", 3, data, lrs, wds, out, num_weights,
        lambda w, g, m, **k: _single.sgd_mom_update(w, g, m, **k, **kwargs),
    )  # fmt: skip


def multi_mp_sgd_update(*data, lrs, wds, num_weights=None, out=None, **kwargs):
    """``mp_sgd_update`` for each ``(weight, grad, weight32)`` triple of ``data``."""
    return _multi(
        "multi_mp_sgd_update", 3, data, lrs, wds, out, num_weights,
        lambda w, g, w32, **k: mp_sgd_update(w, g, w32, **k, **kwargs),
    )  # fmt: skip


def multi_mp_sgd_mom_update(*data, lrs, wds, num_weights=None, out=None, **kwargs):
    """``mp_sgd_mom_update`` for each ``(weight, grad, mom, weight32)`` of ``data``."""
    return _multi(
        "multi_mp_sgd_mom_update", 4, data, lrs, wds, out, num_weights,
        lambda w, g, m, w32, **k: mp_sgd_mom_update(w, g, m, w32, **k, **kwargs),
    )  # fmt: skip


def _preloaded(name: str, multi, data: tuple, num_weights, kwargs) -> list:
    """A ``preloaded_multi_*`` operator: ``multi`` with the learning rates and weight
    decays given as the last two arrays of ``data`` (one value per weight)."""
    arrays = _arrays(data)
    if len(arrays) < 2:
        raise MXNetError(f"mx.nd.{name}: the inputs end with the lrs and wds arrays")
    lrs, wds = (a.asnumpy().reshape(-1) for a in arrays[-2:])
    return multi(*arrays[:-2], lrs=lrs, wds=wds, num_weights=num_weights, **kwargs)


def preloaded_multi_sgd_update(*data, num_weights=None, **kwargs):
    """``multi_sgd_update`` with ``lrs`` and ``wds`` as the last two input arrays."""
    return _preloaded("preloaded_multi_sgd_update", multi_sgd_update, data, num_weights, kwargs)


def preloaded_multi_sgd_mom_update(*data, num_weights=None, **kwargs):
    """``multi_sgd_mom_update`` with ``lrs`` and ``wds`` as the last two input arrays."""
    name = "preloaded_multi_sgd_mom_update"
    return _preloaded(name, multi_sgd_mom_update, data, num_weights, kwargs)


def preloaded_multi_mp_sgd_update(*data, num_weights=None, **kwargs):
    """``multi_mp_sgd_update`` with ``lrs`` and ``wds`` as the last two input arrays."""
    name = "preloaded_multi_mp_sgd_update"
    return _preloaded(name, multi_mp_sgd_update, data, num_weights, kwargs)


def preloaded_multi_mp_sgd_mom_update(*data, num_weights=None, **kwargs):
    """``multi_mp_sgd_mom_update`` with ``lrs`` and ``wds`` as the last two input arrays."""
    name = "preloaded_multi_mp_sgd_mom_update"
    return _preloaded(name, multi_mp_sgd_mom_update, data, num_weights, kwargs)


def multi_lars(lrs, weights_sum_sq, grads_sum_sq, wds, eta, eps, rescale_grad=1.0, out=None):
    """LARS learning rates: ``lr * eta * |w| / (|g| * rescale_grad + wd * |w| + eps)`` per
    weight from the sums of squares, the plain ``lr`` where ``|w|`` or ``|g|`` is 0."""
    _check("multi_lars", lrs, weights_sum_sq, grads_sum_sq, wds)
    lr, wss, gss, wd = (
        a._data.astype(jnp.float32) for a in (lrs, weights_sum_sq, grads_sum_sq, wds)
    )
    w_norm = jnp.sqrt(wss)
    valid = (w_norm > 0) & (gss > 0)
    scaled = lr * eta * w_norm / (jnp.sqrt(gss) * rescale_grad + wd * w_norm + eps)
    res = jnp.where(valid, scaled, lr)
    if out is None:
        return NDArray(res, lrs._ctx)
    out._set_data(res.astype(out._data.dtype))
    return out


def lamb_update_phase1(
    weight, grad, mean, var, t, beta1=0.9, beta2=0.999, epsilon=1e-6, bias_correction=True,
    wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, out=None, **_,
):  # fmt: skip
    """LAMB's direction: moving ``mean``/``var`` of the clipped rescaled gradient (updated in
    place), ``g = mean_hat / (sqrt(var_hat) + epsilon) + wd * weight`` with bias-corrected
    moments when ``bias_correction``. Returns ``g`` (into ``out`` when given)."""
    _check("lamb_update_phase1", weight, grad, mean, var)
    w = weight._data.astype(jnp.float32)
    g = grad._data.astype(jnp.float32) * rescale_grad
    if clip_gradient is not None and clip_gradient > 0:
        g = jnp.clip(g, -clip_gradient, clip_gradient)
    m = beta1 * mean._data + (1 - beta1) * g
    v = beta2 * var._data + (1 - beta2) * g * g
    mean._set_data(m.astype(mean._data.dtype))
    var._set_data(v.astype(var._data.dtype))
    if bias_correction:
        m, v = m / (1 - beta1**t), v / (1 - beta2**t)
    direction = m / (jnp.sqrt(v) + epsilon) + wd * w
    if out is None:
        return NDArray(direction.astype(weight._data.dtype), weight._ctx)
    out._set_data(direction.astype(out._data.dtype))
    return out


def lamb_update_phase2(weight, g, r1, r2, lr, lower_bound=-1.0, upper_bound=-1.0, out=None, **_):
    """``weight -= lr * ratio * g`` with ``ratio = r1/r2`` (``r1`` the weight norm clipped to
    the positive bounds), 1 when either norm is 0."""
    _check("lamb_update_phase2", weight, g, r1, r2)
    n1 = r1._data.astype(jnp.float32).reshape(())
    n2 = r2._data.astype(jnp.float32).reshape(())
    if lower_bound is not None and lower_bound > 0:
        n1 = jnp.maximum(n1, lower_bound)
    if upper_bound is not None and upper_bound > 0:
        n1 = jnp.minimum(n1, upper_bound)
    ratio = jnp.where((n1 == 0) | (n2 == 0), 1.0, n1 / jnp.where(n2 == 0, 1.0, n2))
    new_w = weight._data.astype(jnp.float32) - lr * ratio * g._data.astype(jnp.float32)
    return _set(weight if out is None else out, new_w)


def mp_lamb_update_phase1(weight, grad, mean, var, weight32, t, out=None, **kwargs):
    """``lamb_update_phase1`` reading the float32 master ``weight32``."""
    _check("mp_lamb_update_phase1", weight)
    return lamb_update_phase1(weight32, grad, mean, var, t, out=out, **kwargs)


def mp_lamb_update_phase2(weight, g, r1, r2, weight32, lr, out=None, **kwargs):
    """``lamb_update_phase2`` computed from ``weight32``; ``out`` (the weight) gets the cast.
    As in MXNet 1.9.1, ``weight32`` itself is left unchanged."""
    _check("mp_lamb_update_phase2", weight, weight32)
    new_w32 = lamb_update_phase2(weight32.copy(), g, r1, r2, lr, **kwargs)
    target = weight if out is None else out
    target._set_data(new_w32._data.astype(target._data.dtype))
    return target


def _arrays(data: tuple) -> list:
    return list(data[0]) if len(data) == 1 and isinstance(data[0], (list, tuple)) else list(data)


def _flag(ok: Any, ctx: Any, out: NDArray | None, init_output: bool) -> NDArray:
    if out is not None and not init_output:
        ok = ok & (out._data.reshape(()) != 0)
    res = jnp.asarray(ok, jnp.float32).reshape((1,))
    if out is None:
        return NDArray(res, ctx)
    out._set_data(res.astype(out._data.dtype))
    return out


def all_finite(data, init_output=True, out=None, **_) -> NDArray:
    """``[1.]`` when every element of ``data`` is finite, else ``[0.]`` (AMP's overflow
    check); with ``init_output=False`` an ``out`` already 0 stays 0."""
    return _flag(jnp.all(jnp.isfinite(data._data)), data._ctx, out, init_output)


def multi_all_finite(*data, num_arrays=None, init_output=True, out=None, **_) -> NDArray:
    """``all_finite`` over several arrays."""
    arrays = _arrays(data)
    ok = jnp.asarray(True)
    for a in arrays:
        ok = ok & jnp.all(jnp.isfinite(a._data))
    return _flag(ok, arrays[0]._ctx, out, init_output)


def multi_sum_sq(*data, num_arrays=None, out=None, **_) -> NDArray:
    """The sum of squares of each array, as one float32 vector."""
    arrays = _arrays(data)
    res = jnp.stack([jnp.sum(jnp.square(a._data.astype(jnp.float32))) for a in arrays])
    if out is None:
        return NDArray(res, arrays[0]._ctx)
    out._set_data(res.astype(out._data.dtype))
    return out


def reset_arrays(*data, num_arrays=None, **_) -> None:
    """Set every array to zeros, in place."""
    for a in _arrays(data):
        a._set_data(jnp.zeros(a.shape, a._data.dtype))
