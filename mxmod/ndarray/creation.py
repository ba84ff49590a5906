"""Array creation in ``mx.nd``: ``array``, ``zeros``, ``ones``, ``full``, ``empty``, ``arange``.

Same signatures and defaults as MXNet 1.9.1. Arrays are placed with
``jax.device_put`` on ``ctx.jax_device`` (default: ``current_context()``).
``array()`` defaults to float32 for anything but an NDArray source, exactly as
MXNet (a numpy int64 or float64 array becomes float32 unless ``dtype`` is given).
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..base import mx_real_t
from ..context import Context, current_context
from ._device import HOST_FILL_BYTES, host_filled, requested_dtype, shape_tuple
from .ndarray import NDArray, _fresh, _put
from .sparse import BaseSparseNDArray
from .sparse import array as _sparse_array
from .sparse import zeros as _sparse_zeros

__all__ = ["array", "zeros", "ones", "full", "empty", "arange", "waitall"]


def _ctx(ctx: Any) -> Context:
    return current_context() if ctx is None else Context(ctx)


def _dtype(dtype: Any) -> np.dtype:
    return requested_dtype(mx_real_t if dtype is None else dtype, "mx.nd")


def _check_stype(stype: Any, op: str, kwargs: dict | None = None) -> None:
    if stype not in (None, "default"):
        raise NotImplementedError(f"{op}(stype={stype!r}): sparse storage is not supported")
    extra = sorted(k for k in (kwargs or {}) if k != "name")
    if extra:
        raise TypeError(f"{op}() got unsupported keyword arguments {extra}")


def array(source_array: Any, ctx: Context | None = None, dtype: Any = None) -> NDArray:
    """Create an NDArray from an NDArray, numpy array, jax array, list or scalar.

    Args:
        source_array: the values.
        ctx: target context (default ``current_context()``).
        dtype: result dtype; default the source's dtype for an NDArray, else float32.

    Raises:
        TypeError: if ``source_array`` is not array-like.
    """
    if isinstance(source_array, BaseSparseNDArray) or type(source_array).__module__.startswith(
        "scipy.sparse"
    ):
        return _sparse_array(source_array, ctx=ctx, dtype=dtype)  # sparse stays sparse (MXNet)
    ctx = _ctx(ctx)
    if isinstance(source_array, NDArray):
        dt = _dtype(source_array.dtype if dtype is None else dtype)
        src = source_array._data
        data = _put(src, source_array._ctx, ctx)
        return NDArray(_fresh(data if data.dtype == dt else data.astype(dt), src), ctx)
    dt = _dtype(dtype)
    if isinstance(source_array, jax.Array):
        return NDArray(jax.device_put(source_array.astype(dt), ctx.jax_device), ctx)
    try:
        host = np.asarray(source_array)
        if host.dtype == object:
            raise ValueError("ragged")
        host = host.astype(dt)
    except (ValueError, TypeError):
        raise TypeError(
            f"source_array must be array like object: could not convert {type(source_array)} "
            f"to a numeric array{ragged_hint(source_array)}"
        ) from None
    return NDArray(jax.device_put(host, ctx.jax_device), ctx)


def ragged_hint(obj: Any) -> str:
    """Where nested lists stop being rectangular, and the fix ('' if they are)."""
    todo = [(obj, "")]
    while todo:
        seq, where = todo.pop(0)
        if not isinstance(seq, (list, tuple)):
            continue
        nested = [isinstance(x, (list, tuple)) for x in seq]
        lengths = [len(x) if n else None for x, n in zip(seq, nested)]
        if any(nested) and len(set(lengths)) > 1:
            i = next(k for k, n in enumerate(lengths) if n != lengths[0])
            first, this = (
                "a number" if n is None else f"{n} item{'' if n == 1 else 's'}"
                for n in (lengths[0], lengths[i])
            )
            return (
                f": it is ragged, {where}[0] has {first} but {where}[{i}] has {this}; pad the "
                "rows to one length (e.g. with 0) or make one array per row"
            )
        todo += [(x, f"{where}[{k}]") for k, x in enumerate(seq)]
    return " (only numbers, in rows of equal length, convert)"


def _filled(shape: Any, val: Any, ctx: Any, dtype: Any) -> NDArray:
    """A constant array. Made on the host and copied when small or on a CPU (no program to
    compile per shape); filled on the accelerator when large."""
    ctx = _ctx(ctx)
    dt = _dtype(dtype)
    fill = np.asarray(val).astype(dt)
    shape = shape_tuple(shape)
    dev = ctx.jax_device
    if dev.platform == "cpu" or math.prod(shape) * fill.itemsize <= HOST_FILL_BYTES:
        return NDArray(jax.device_put(host_filled(shape, fill, dt), dev), ctx)
    return NDArray(jnp.full(shape, fill, dtype=dt, device=dev), ctx)


def _filled_out(shape: Any, val: Any, ctx: Any, dtype: Any, out: NDArray | None) -> NDArray:
    """``_filled``, or (given ``out``) ``out`` filled in place, as MXNet's ``out=``."""
    if out is None:
        return _filled(shape, val, ctx, dtype)
    if tuple(out.shape) != shape_tuple(shape):
        raise ValueError(f"out= has shape {out.shape}, expected {shape_tuple(shape)}")
    out[:] = val
    return out


def zeros(
    shape: Any, ctx: Context | None = None, dtype: Any = None, stype: Any = None, **kwargs: Any
) -> NDArray:
    """Array of zeros (dtype float32 unless given); ``stype='csr'|'row_sparse'`` gives an
    empty sparse array (``mx.nd.sparse.zeros``)."""
    out = kwargs.pop("out", None)
    if stype in ("csr", "row_sparse") and out is None:
        _check_stype(None, "zeros", kwargs)
        return _sparse_zeros(stype, shape, ctx=ctx, dtype=dtype)
    _check_stype(stype, "zeros", kwargs)
    return _filled_out(shape, 0, ctx, dtype, out)


def ones(shape: Any, ctx: Context | None = None, dtype: Any = None, **kwargs: Any) -> NDArray:
    """Array of ones (dtype float32 unless given)."""
    out = kwargs.pop("out", None)
    _check_stype(kwargs.pop("stype", None), "ones", kwargs)
    return _filled_out(shape, 1, ctx, dtype, out)


def full(
    shape: Any,
    val: Any,
    ctx: Context | None = None,
    dtype: Any = mx_real_t,
    out: NDArray | None = None,
) -> NDArray:
    """Array filled with ``val``; with ``out`` fills that array in place and returns it."""
    if out is not None:
        out[:] = val
        return out
    return _filled(shape, val, ctx, dtype)


def empty(shape: Any, ctx: Context | None = None, dtype: Any = None, stype: Any = None) -> NDArray:
    """Uninitialised array in MXNet; zeros here (XLA has no uninitialised buffers)."""
    if stype in ("csr", "row_sparse"):
        return _sparse_zeros(stype, shape, ctx=ctx, dtype=dtype)
    _check_stype(stype, "empty")
    return _filled(shape, 0, ctx, dtype)


def arange(
    start: float,
    stop: float | None = None,
    step: float = 1.0,
    repeat: int = 1,
    infer_range: Any = None,
    ctx: Context | None = None,
    dtype: Any = mx_real_t,
) -> NDArray:
    """Evenly spaced values in ``[start, stop)``, each repeated ``repeat`` times.

    Raises:
        ValueError: for ``step == 0`` or ``repeat < 1``.
    """
    if infer_range:
        raise NotImplementedError("arange(infer_range=True) is a symbol-only option")
    if step == 0:
        raise ValueError("arange: step must not be 0")
    if int(repeat) != repeat or repeat < 1:
        raise ValueError(f"arange: repeat must be a positive integer, got {repeat!r}")
    if stop is None:
        start, stop = 0, start
    host = np.arange(start, stop, step, dtype=np.float64)
    host = np.repeat(host, int(repeat)).astype(_dtype(dtype))
    ctx = _ctx(ctx)
    return NDArray(jax.device_put(host, ctx.jax_device), ctx)


def waitall() -> None:
    """Block until every live array's computation has finished (``mx.nd.waitall``)."""
    jax.effects_barrier()
    jax.block_until_ready(jax.live_arrays())
