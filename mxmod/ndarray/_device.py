"""Device and buffer helpers for NDArray: context lookup, moves, copies, view reads/writes."""

from __future__ import annotations

import math
import warnings
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..base import np_dtype
from ..context import Context, current_context

_PLATFORM_TO_TYPE = {"cpu": "cpu", "gpu": "gpu", "cuda": "gpu", "rocm": "gpu", "tpu": "tpu"}


def ctx_of(data: Any) -> Context:
    """Best-effort Context of a jax.Array: its single device, else the current context."""
    try:
        devs = data.devices()
    except Exception:  # tracers and exotic arrays
        return current_context()
    if len(devs) != 1:
        return current_context()
    dev = next(iter(devs))
    kind = _PLATFORM_TO_TYPE.get(dev.platform, dev.platform)
    try:
        same = jax.local_devices(backend=dev.platform)
        return Context(kind, same.index(dev))
    except (RuntimeError, ValueError):
        return current_context()


HOST_MOVE_ELEMENTS = 1 << 16  # small CPU arrays: slicing and writes done by numpy


def on_host(*arrays: Any) -> bool:
    """Whether data movement over ``arrays`` (all concrete, small, on one CPU device) is
    done by numpy: the same values, and no XLA program compiled per shape (a short job's
    imperative indexing would otherwise compile one for every new shape)."""
    device = None
    for x in arrays:
        if isinstance(x, jax.core.Tracer) or not isinstance(x, jax.Array):
            return False
        if x.size > HOST_MOVE_ELEMENTS or len(x.sharding.device_set) != 1:
            return False
        (d,) = x.sharding.device_set
        if d.platform != "cpu" or (device is not None and d != device):
            return False
        device = d
    return device is not None


def host_copy(x: jax.Array) -> np.ndarray:
    """A writable numpy copy of the CPU array ``x``."""
    return np.array(x, copy=True)


def to_device_of(host: np.ndarray, like: jax.Array) -> jax.Array:
    (device,) = like.sharding.device_set
    return jax.device_put(host, device)


def _write_flat(src, begin, new):
    if on_host(src, new):
        host = host_copy(src)
        host.reshape(-1)[begin : begin + new.size] = np.asarray(new).reshape(-1)
        return to_device_of(host, src)
    return _write_flat_jit(src, begin, new)


@jax.jit
def _write_flat_jit(src, begin, new):
    flat = jax.lax.dynamic_update_slice(src.reshape(-1), new.reshape(-1), (begin,))
    return flat.reshape(src.shape)


def _read_flat(src, begin: int, shape: tuple):
    size = math.prod(shape)
    if on_host(src):
        host = np.asarray(src).reshape(-1)[begin : begin + size].reshape(shape)
        return to_device_of(np.array(host), src)
    if begin == 0 and size == src.size:
        return src.reshape(shape)
    return _read_flat_jit(src, begin, size, shape)


@partial(jax.jit, static_argnums=(2, 3))
def _read_flat_jit(src, begin, size, shape):
    return jax.lax.dynamic_slice(src.reshape(-1), (begin,), (size,)).reshape(shape)


def _fresh(out: jax.Array, *srcs: jax.Array) -> jax.Array:
    """``out``, copied if it is one of ``srcs``: results promised as new arrays must not share
    a buffer with their inputs, or donating one buffer (jit ``donate_argnums``) kills both.
    The copy is a device transfer, not a program compiled per shape."""
    if not any(out is s for s in srcs):
        return out
    if isinstance(out, jax.core.Tracer):
        return jnp.copy(out)
    return jax.device_put(out, may_alias=False)


HOST_FILL_BYTES = 1 << 20  # filled on the host and copied up to this size (any device)


def host_filled(shape: tuple, value: Any, dtype: Any) -> np.ndarray:
    """``np.full``; zeros come from ``np.zeros``, whose pages the OS hands over already
    zeroed (a bind's parameter and optimizer arrays: no pass over the memory)."""
    v = np.asarray(value)
    if np.all(v == 0) and not np.any(np.signbit(v.real)):  # -0.0 keeps its sign
        return np.zeros(shape, dtype)
    return np.full(shape, value, dtype)


def zeros_like(x: Any, dtype: Any = None) -> jax.Array:
    """``jnp.zeros_like(x, dtype)`` with ``x``'s placement; made on the host and copied
    when on a CPU or small, so no program is compiled per shape (optimizer states)."""
    return filled_like(x, 0, dtype)


def filled_like(x: Any, value: Any, dtype: Any = None) -> jax.Array:
    """``jnp.full_like(x, value, dtype)``, made as :func:`zeros_like` makes zeros."""
    if isinstance(x, jax.core.Tracer) or not isinstance(x, jax.Array):
        return jnp.full_like(x, value, dtype=dtype)
    dt = np.dtype(dtype or x.dtype)
    on_cpu = all(d.platform == "cpu" for d in x.sharding.device_set)
    if on_cpu or x.size * dt.itemsize <= HOST_FILL_BYTES:
        # as placed as ``x`` (an uncommitted ``x`` gets an uncommitted result, as jnp's)
        host = host_filled(x.shape, value, dt)
        return jax.device_put(host, x.sharding if x.committed else None)
    return jnp.full_like(x, value, dtype=dt)


def jax_dtype(dtype: Any) -> np.dtype:
    """:func:`mxmod.base.np_dtype`, narrowed to what JAX stores (64-bit -> 32-bit without x64)."""
    return np.dtype(jax.dtypes.canonicalize_dtype(np_dtype(dtype)))


def requested_dtype(dtype: Any, op: str) -> np.dtype:
    """``dtype`` as JAX stores it. A 64-bit dtype that JAX narrows to 32 bits (its x64 mode
    is off, mxmod's default) gives a warning naming the fix: MXNet computes it in 64 bits.
    (Refusing it would stop programs whose numpy float64 data flows in as ``dtype=x.dtype``.)
    """
    want = np_dtype(dtype)
    got = jax_dtype(want)
    if got != want:
        warnings.warn(
            f"{op}: dtype={want.name!r} needs JAX's x64 mode, which is off: mxmod computes in "
            f"{got.name}; start Python with JAX_ENABLE_X64=1 (or call "
            "jax.config.update('jax_enable_x64', True) before creating arrays) to compute in "
            f"64 bits as MXNet does, or use dtype={got.name!r}",
            stacklevel=3,
        )
    return got


def shape_tuple(shape: Any) -> tuple:
    """An MXNet shape argument (an int or a sequence of ints) as a tuple, checked."""
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    try:
        out = tuple(int(d) for d in shape)
    except TypeError:
        raise TypeError(f"shape must be an int or a tuple of ints, got {shape!r}") from None
    if any(d < 0 for d in out):
        raise ValueError(f"shape {out} has a negative dimension")
    return out


def _put(data: jax.Array, src: Context, dst: Context) -> jax.Array:
    """Move ``data`` from context ``src`` to ``dst`` (no-op when they map to one device)."""
    if src == dst:
        return data
    dev = dst.jax_device
    if src.jax_device == dev:
        return data
    return jax.device_put(data, dev)
