"""Imperative shape operators of ``mx.nd``: slicing, transposes, joins, broadcasts.

Mirrors the MXNet 1.9.1 functions of the same names on NDArrays; shape
mistakes raise :class:`MXNetError` naming the shapes. Joins place the result on
the first input's context, moving the others there (as MXNet does on CPU).
"""

from __future__ import annotations

import math
from typing import Sequence

import jax
import jax.numpy as jnp

from ..base import MXNetError
from .ndarray import NDArray, _fresh, _put
from .ops import _axes, _check, _takes_out
from .tape import recorded

__all__ = [
    "slice_axis",
    "transpose",
    "reshape",
    "flatten",
    "expand_dims",
    "broadcast_to",
    "concat",
    "concatenate",
    "stack",
]


def slice_axis(data: NDArray, axis: int, begin: int, end: int | None) -> NDArray:
    """Slice ``[begin, end)`` along ``axis`` (negative bounds count from the end; end=None is all).

    Raises:
        MXNetError: for bounds outside the axis.
    """
    _check(data, "slice_axis")
    ax = _axes(axis, data.ndim)[0]
    n = data.shape[ax]
    b = begin + n if begin < 0 else begin
    e = n if end is None else (end + n if end < 0 else end)
    if not (0 <= b < n or (b == 0 and n == 0)) or not b <= e <= n:
        raise MXNetError(
            f"slice_axis: invalid begin={begin}, end={end} for axis {axis} of size {n} "
            f"(data shape {data.shape})"
        )
    return NDArray(_fresh(jax.lax.slice_in_dim(data._data, b, e, axis=ax), data._data), data._ctx)


def transpose(data: NDArray, axes: Sequence[int] | None = None) -> NDArray:
    """Permute axes (reverse them when ``axes`` is None or empty)."""
    _check(data, "transpose")
    if axes is not None and len(axes) and len(axes) != data.ndim:
        raise MXNetError(
            f"transpose: axes {tuple(axes)} must list all {data.ndim} axes of shape {data.shape}"
        )
    out = jnp.transpose(data._data, tuple(axes) if axes else None)
    return NDArray(_fresh(out, data._data), data._ctx)


def reshape(data: NDArray, shape: Sequence[int], reverse: bool = False) -> NDArray:
    """Function form of :meth:`NDArray.reshape` (returns a new array, not a view)."""
    return _check(data, "reshape").reshape(shape, reverse=reverse).copy()


def flatten(data: NDArray) -> NDArray:
    """Collapse all axes after the first: ``(d0, d1*...*dn)``; 1-D gives ``(d0, 1)``."""
    _check(data, "flatten")
    first = data.shape[0] if data.ndim else 1
    out = data._data.reshape(first, math.prod(data.shape[1:]))
    return NDArray(_fresh(out, data._data), data._ctx)


def expand_dims(data: NDArray, axis: int) -> NDArray:
    """Insert a size-1 axis at ``axis`` (``-ndim-1 <= axis <= ndim``)."""
    _check(data, "expand_dims")
    if not -data.ndim - 1 <= axis <= data.ndim:
        raise MXNetError(
            f"expand_dims: axis must be in the range [{-data.ndim - 1}, {data.ndim}] "
            f"({axis} provided)"
        )
    return NDArray(jnp.expand_dims(data._data, axis), data._ctx)


def broadcast_to(data: NDArray, shape: Sequence[int]) -> NDArray:
    """Broadcast to ``shape``; a 0 in ``shape`` keeps that input dimension.

    Raises:
        MXNetError: if a non-1 dimension would change.
    """
    _check(data, "broadcast_to")
    shape = tuple(shape)
    if len(shape) != data.ndim:
        raise MXNetError(
            f"broadcast_to: shape {shape} must have {data.ndim} dims like {data.shape}"
        )
    target = tuple(s if t == 0 else t for s, t in zip(data.shape, shape))
    for s, t in zip(data.shape, target):
        if s not in (1, t):
            raise MXNetError(f"Array cannot be broadcasted from {data.shape} to {target}")
    return NDArray(_fresh(jnp.broadcast_to(data._data, target), data._data), data._ctx)


def _join(arrays: Sequence[NDArray], axis: int, op: str, new_axis: bool) -> NDArray:
    if len(arrays) == 0:
        raise MXNetError(f"{op} needs at least one input array")
    for i, a in enumerate(arrays):
        _check(a, op, f"input {i}")
    first = arrays[0]
    ndim = first.ndim + (1 if new_axis else 0)
    if not -ndim <= axis < ndim:
        raise MXNetError(f"{op}: axis {axis} is out of range for {ndim}-d output")
    ax = axis % ndim
    for i, a in enumerate(arrays):
        if a.dtype != first.dtype:
            raise MXNetError(
                f"{op}: input {i} has dtype {a.dtype.__name__}, input 0 has "
                f"{first.dtype.__name__}; cast with .astype()"
            )
        ok = (
            a.shape == first.shape
            if new_axis
            else (
                a.ndim == first.ndim
                and all(s == t for d, (s, t) in enumerate(zip(a.shape, first.shape)) if d != ax)
            )
        )
        if not ok:
            raise MXNetError(
                f"{op}: input {i} has shape {a.shape}, incompatible with input 0 of shape "
                f"{first.shape} along axis {axis}"
            )
    datas = [_put(a._data, a._ctx, first._ctx) for a in arrays]
    fn = jnp.stack if new_axis else jnp.concatenate
    return NDArray(fn(datas, axis=ax), first._ctx)


def concat(*data: NDArray, dim: int = 1, num_args: int | None = None) -> NDArray:
    """Concatenate along ``dim`` (default 1, as ``mx.nd.concat``); result on input 0's context."""
    return _join(data, dim, "concat", False)


def concatenate(arrays: Sequence[NDArray], axis: int = 0, always_copy: bool = True) -> NDArray:
    """Concatenate a list along ``axis`` (``mx.nd.concatenate``)."""
    if len(arrays) == 1 and not always_copy:
        return arrays[0]
    return _join(list(arrays), axis, "concatenate", False)


def stack(*data: NDArray, axis: int = 0, num_args: int | None = None) -> NDArray:
    """Stack equally shaped arrays along a new ``axis``."""
    return _join(data, axis, "stack", True)


# MXNet's operators take ``out=`` (and ``name=``); ``concatenate`` is a Python helper
for _name in __all__:
    if _name != "concatenate":
        globals()[_name] = _takes_out(globals()[_name])
concatenate = recorded(concatenate, "mx.nd.concatenate")  # on autograd's tape in record()
