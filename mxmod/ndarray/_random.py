"""Random state behind ``mx.random`` and ``mx.nd.random``, its bucket-sized draws,
``randint`` and ``shuffle`` (the distributions: ``_random_dists``).

MXNet keeps one generator per device; mxmod keeps one global host generator
(plus one per context seeded with ``seed(s, ctx=...)``) that hands out a fresh
``jax.random`` key (raw uint32[2]) for every draw: no device work and no
compile per key. As in MXNet, an unseeded program is deterministic (default seed 0)
and ``seed(s)`` makes later draws reproducible; the values differ from MXNet's.

Other modules (initializers, dropout, iterators) take keys with
:func:`next_key`, so one ``mx.random.seed`` call makes the whole program
reproducible.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..base import MXNetError, integer_types
from ..context import Context, current_context
from ._device import requested_dtype
from ._programs import program
from .ndarray import NDArray

__all__ = ["seed", "next_key", "randint", "shuffle"]

_LOCK = threading.Lock()
_STATE: dict = {}  # "all" -> global key; Context -> key of a context seeded on its own


def seed(seed_state: int, ctx: Any = "all") -> None:
    """Seed the random generators (``mx.random.seed``).

    Args:
        seed_state: an integer seed.
        ctx: ``'all'`` (default) resets every stream; a Context seeds only the
            draws made with ``ctx=`` that context.

    Raises:
        ValueError: if ``seed_state`` is not an int.
    """
    if not isinstance(seed_state, integer_types) or isinstance(seed_state, bool):
        raise ValueError(f"seed_state must be int, got {type(seed_state).__name__}")
    stream = _stream(int(seed_state))
    with _LOCK:
        if ctx == "all":
            _STATE.clear()
            _STATE["all"] = stream
        else:
            _STATE[Context(ctx)] = stream


def _stream(seed_state: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(seed_state & 0xFFFFFFFF))


def next_key(ctx: Context | None = None) -> jax.Array:
    """Return a fresh ``jax.random`` key, advancing the global (or ``ctx``'s) stream.

    Args:
        ctx: the context a draw is for; only matters after ``seed(s, ctx=ctx)``.

    Returns:
        A raw uint32 key (``jax.random.PRNGKey`` format), as a host array.
    """
    with _LOCK:
        slot = ctx if ctx is not None and ctx in _STATE else "all"
        if slot not in _STATE:
            _STATE["all"] = _stream(0)
        return _STATE[slot].integers(0, 2**32, size=2, dtype=np.uint32)


def draw_size(n: int) -> int:
    """Draws are made at sizes rounded up to a bucket and sliced (one program per shape:
    ``_shaped_draw``), so a seed gives the numbers it always gave."""
    if n <= 1 << 20:
        return max(16, 1 << (n - 1).bit_length())
    return -(-n // (1 << 20)) * (1 << 20)


def _flat_draw(key, n: int, kind: str, p0, p1):
    if kind == "uniform":
        return p0 + (p1 - p0) * jax.random.uniform(key, (n,), jnp.float32)
    if kind == "normal":
        return p0 + p1 * jax.random.normal(key, (n,), jnp.float32)
    return jax.random.randint(key, (n,), p0, p1, dtype=jnp.int32)


def _draw(kind: str, ctx: Context, shape: tuple, p0: Any, p1: Any) -> jax.Array:
    """``shape`` samples on ``ctx``'s device from a bucket-sized draw with a fresh key.

    ``p0, p1`` are (low, high) for uniform/randint and (loc, scale) for normal.
    """
    key = jax.device_put(next_key(ctx), ctx.jax_device)
    static = (("n", draw_size(math.prod(shape))), ("kind", kind), ("shape", tuple(shape)))
    return program(_shaped_draw, static)(key, p0, p1)


def _shaped_draw(key, p0, p1, *, n: int, kind: str, shape: tuple):
    """The first ``prod(shape)`` samples of the bucket-sized draw, as ``shape``: one
    program (the same numbers as the draw, sliced)."""
    flat = _flat_draw(key, n, kind, p0, p1)
    return jax.lax.slice(flat, (0,), (math.prod(shape),)).reshape(shape)


def _resolve(
    shape: Any, dtype: Any, ctx: Any, out: NDArray | None, op: str, default_dt: str, kwargs: dict
):
    extra = sorted(k for k in kwargs if k != "name")
    if extra:
        raise TypeError(f"{op}() got unsupported keyword arguments {extra}")
    if shape is None:
        shape = out.shape if out is not None else (1,)
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    if out is not None and out.shape != shape:
        raise MXNetError(
            f"{op}: Shape inconsistent, Provided = {list(out.shape)}, inferred shape={list(shape)};"
            f" pass shape={out.shape} or an out array of shape {shape}"
        )
    if dtype is None:
        dtype = out.dtype if out is not None else default_dt
    ctx = out.context if out is not None else (current_context() if ctx is None else Context(ctx))
    return shape, requested_dtype(dtype, f"mx.nd.random.{op}"), ctx


def _finish(data: jax.Array, ctx: Context, out: NDArray | None) -> NDArray:
    if out is not None:
        out._set_data(data.astype(out.dtype))
        return out
    return NDArray(data, ctx)


def randint(
    low: int,
    high: int,
    shape: Any = None,
    dtype: Any = None,
    ctx: Any = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Integers uniformly from ``[low, high)`` (``mx.nd.random.randint``); dtype int32 default.

    Raises:
        MXNetError: if ``high < low``.
    """
    shape, dt, ctx = _resolve(shape, dtype, ctx, out, "randint", "int32", kwargs)
    if dt.kind not in "iu":
        raise ValueError(f"randint: dtype must be an integer type, got {dt.name}")
    if high < low:
        raise MXNetError(
            f"randint: low must be less or equal to high in uniform distribution "
            f"(low={low}, high={high})"
        )
    data = _draw("randint", ctx, shape, np.int32(low), np.int32(high))
    return _finish(data.astype(dt), ctx, out)


def shuffle(data: NDArray, out: NDArray | None = None, name: Any = None) -> NDArray:
    """Return a copy of ``data`` with its first axis randomly permuted (or write it to ``out``).

    Raises:
        MXNetError: for a 0-d ``data`` or an ``out`` of another shape.
    """
    if not isinstance(data, NDArray):
        raise TypeError(f"shuffle: data must be an NDArray, got {type(data)}")
    if data.ndim == 0:
        raise MXNetError("shuffle: data must have at least one dimension")
    if out is not None and out.shape != data.shape:
        raise MXNetError(f"shuffle: out shape {out.shape} differs from data shape {data.shape}")
    key = jax.device_put(next_key(data.context), data.context.jax_device)
    perm = jax.random.permutation(key, data.shape[0])
    return _finish(jnp.take(data._data, perm, axis=0), data.context, out)
