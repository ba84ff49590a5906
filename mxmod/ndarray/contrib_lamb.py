"""``mx.nd.contrib.multi_lamb_update`` and ``multi_mp_lamb_update`` (MXNet 1.9.1): LAMB for
several tensors at once. Per tensor ``i`` (step ``step_count[i]``, ``lrs[i]``, ``wds[i]``):
the moments of the rescaled, clipped gradient are updated in place; the direction is
``mean_hat / (sqrt(var_hat) + epsilon) + wd * weight`` (bias-corrected unless
``bias_correction=False``); the new weight, ``weight - lr * r1 / r2 * direction`` with
``r1`` the weight's norm (clipped to positive ``lower_bound``/``upper_bound``) and ``r2`` the
direction's (ratio 1 when either is 0), goes to ``out[i]``. The multi-precision form reads
and updates the float32 ``weights32`` and writes their cast into ``out``.
"""

from __future__ import annotations

from typing import Sequence

import jax.numpy as jnp

from ..base import MXNetError
from .ndarray import NDArray
from .update_ops_mp import lamb_update_phase1, lamb_update_phase2

__all__ = ["multi_lamb_update", "multi_mp_lamb_update"]

_PHASE1 = ("beta1", "beta2", "epsilon", "bias_correction", "rescale_grad", "clip_gradient")
_PHASE2 = ("lower_bound", "upper_bound")


def _norm(x: NDArray) -> NDArray:
    return NDArray(jnp.sqrt(jnp.sum(jnp.square(x._data.astype(jnp.float32)))), x._ctx)


def _run(name, weights, grads, mean, var, masters, step_count, lrs, wds, out, num_tensors, kw):
    n = len(weights)
    lists = {"grads": grads, "mean": mean, "var": var, "step_count": step_count, "lrs": lrs}
    lists["wds"] = wds
    if masters is not None:
        lists["weights32"] = masters
    for what, items in lists.items():
        if len(items) != n:
            raise MXNetError(f"mx.nd.contrib.{name}: {len(items)} {what} for {n} weights")
    if num_tensors and int(num_tensors) != n:
        raise MXNetError(f"mx.nd.contrib.{name}: num_tensors={num_tensors} but {n} weights")
    unknown = set(kw) - set(_PHASE1) - set(_PHASE2)
    if unknown:
        raise TypeError(f"mx.nd.contrib.{name}: unknown arguments {sorted(unknown)}")
    outs = list(out) if out is not None else [None] * n
    results = []
    for i in range(n):
        source = masters[i] if masters is not None else weights[i].copy()
        first = {k: kw[k] for k in _PHASE1 if k in kw}
        direction = lamb_update_phase1(
            source, grads[i], mean[i], var[i], step_count[i], wd=wds[i], **first
        )
        second = {k: kw[k] for k in _PHASE2 if k in kw}
        r1, r2 = _norm(source), _norm(direction)
        lamb_update_phase2(source, direction, r1, r2, lrs[i], **second)
        target = outs[i] if outs[i] is not None else NDArray(weights[i]._data, weights[i]._ctx)
        target._set_data(source._data.astype(target._data.dtype))
        results.append(target)
    return results


def multi_lamb_update(
    weights: Sequence[NDArray], grads, mean, var, step_count, lrs, wds, out=None,
    num_tensors=0, **kwargs,
):  # fmt: skip
    """LAMB on each ``(weight, grad, mean, var)``; new weights into ``out`` (new arrays
    when not given), moments in place."""
    return _run(
        "multi_lamb_update", list(weights), list(grads), list(mean), list(var), None,
        list(step_count), list(lrs), list(wds), out, num_tensors, kwargs,
    )  # fmt: skip


def multi_mp_lamb_update(
    weights: Sequence[NDArray], grads, mean, var, weights32, step_count, lrs, wds, out=None,
    num_tensors=0, **kwargs,
):  # fmt: skip
    """:func:`multi_lamb_update` on the float32 ``weights32`` (updated in place); ``out``
    gets their cast to the weights' dtype."""
    return _run(
        "multi_mp_lamb_update", list(weights), list(grads), list(mean), list(var),
        list(weights32), list(step_count), list(lrs), list(wds), out, num_tensors, kwargs,
    )  # fmt: skip
