"""NDArray ``__getitem__``/``__setitem__`` (MXNet 1.9.1 indexing rules).

Basic keys (ints, slices, None, ...) that select a contiguous block give a view
(see :mod:`mxmod.ndarray.ndarray`); other basic keys and integer-array keys
give copies. Assignment computes the updated array functionally
(``.at[idx].set``) and swaps it into the handle.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from . import _index
from ._device import HOST_MOVE_ELEMENTS, host_copy, on_host, to_device_of
from .ndarray import NDArray, _fresh, _put
from .tape import record_write


def _jax_slices(slices, int_axes=()):
    """Normalised slices as jax indices (a reversed slice's stop -1 means 'to the start')."""
    return tuple(
        s.start if ax in int_axes else slice(s.start, None if s.stop < 0 else s.stop, s.step)
        for ax, s in enumerate(slices)
    )


def get_item(arr: NDArray, key: Any) -> NDArray:
    """``arr[key]``, indexed like MXNet 1.9.1: contiguous basic indexing is a view; the
    rest copies.

    Raises:
        IndexError: out-of-bounds ints or too many indices; ValueError: float keys.
    """
    _index.check_key_types(key)
    if _index.is_basic_key(key):
        slices, _, out_shape = _index.normalize_basic_key(key, arr.shape)
        flat = _index.contiguous_flat_range(slices, arr.shape)
        if flat is not None:
            return NDArray._view(arr, flat[0], out_shape)
        out = arr._data[_jax_slices(slices)]
        return NDArray(out.reshape(out_shape), arr._ctx)
    return NDArray(arr._data[_advanced_key(arr, key)], arr._ctx)


def _advanced_key(arr: NDArray, key: Any) -> tuple:
    items = key if isinstance(key, tuple) else (key,)
    out = []
    for k in items:
        if isinstance(k, NDArray):
            k = _put(k._data, k._ctx, arr._ctx).astype(jnp.int32)
        elif isinstance(k, (list, np.ndarray)):
            k = np.asarray(k).astype(np.int32)
        out.append(k)
    return tuple(out)


def set_item(arr: NDArray, key: Any, value: Any) -> None:
    """``arr[key] = value`` (recorded inside ``autograd.record()`` when ``value`` is)."""
    whole = key is Ellipsis or (isinstance(key, slice) and key == slice(None))
    if not record_write(arr, value, lambda target, v: _set_item(target, key, v), whole):
        _set_item(arr, key, value)


def _set_item(arr: NDArray, key: Any, value: Any) -> None:
    """``arr[key] = value`` in place (``arr[:] = v``, ``arr[i] = v``, ``arr[1:3] = v``,
    ``arr[i, j] = v``), as a functional update swapped into ``arr``'s handle.

    ``value`` may be a number, numpy array, NDArray (any context) or list; it is cast to
    this array's dtype and must broadcast to the indexed shape.
    """
    _index.check_key_types(key)
    if _index.is_basic_key(key):
        slices, int_axes, indexed = _index.normalize_basic_key(key, arr.shape)
        sub_shape = tuple(
            len(range(s.start, s.stop, s.step)) for ax, s in enumerate(slices) if ax not in int_axes
        )
        # the value broadcasts against the indexed shape (int axes dropped, None axes kept),
        # as numpy; the region it fills has no None axes
        data = value_as(arr, value, indexed, key).reshape(sub_shape)
        if all(s == slice(0, n, 1) for s, n in zip(slices, arr.shape)):
            arr._set_data(data.reshape(arr.shape))
            return
        _write(arr, _jax_slices(slices, int_axes), data)
        return
    idx = _advanced_key(arr, key)
    sub_shape = tuple(jax.eval_shape(lambda x: x[idx], arr._data).shape)
    _write(arr, idx, value_as(arr, value, sub_shape, key))


def _write(arr: NDArray, idx: tuple, data: jax.Array) -> None:
    """``arr[idx] = data`` (``data`` in the indexed shape), by numpy for a small CPU array."""
    index_arrays = [k for k in idx if isinstance(k, jax.Array)]
    if on_host(arr._data, data, *index_arrays):
        host = host_copy(arr._data)
        try:
            host[tuple(np.asarray(k) if isinstance(k, jax.Array) else k for k in idx)] = data
        except IndexError:  # out-of-range indices: XLA's rules, as off the host
            pass
        else:
            arr._set_data(to_device_of(host, arr._data))
            return
    arr._set_data(arr._data.at[idx].set(data))


def value_as(arr: NDArray, value: Any, shape: tuple, key: Any) -> jax.Array:
    """``value`` broadcast to ``shape``, cast to ``arr``'s dtype, on ``arr``'s device."""
    dt = np.dtype(arr.dtype)
    if isinstance(value, NDArray):  # MXNet copies: the handles must not share a buffer
        data = _fresh(_put(value._data, value._ctx, arr._ctx), value._data)
    elif isinstance(value, jax.Array):
        dev = arr._ctx.jax_device
        try:
            here = value.devices() == {dev}
        except jax.errors.ConcretizationTypeError:  # a tracer: jit places it
            here = True
        data = value if here else jax.device_put(value, dev)
        data = _fresh(data, value)
    else:
        if isinstance(value, (bool, np.bool_)):
            value = int(value)
        try:
            host = np.asarray(value)
        except Exception as err:
            raise TypeError(
                f"cannot assign {type(value)} to an NDArray: use a number, a numpy array or "
                f"an NDArray"
            ) from err
        if host.dtype.kind not in "biuf":
            raise TypeError(
                f"cannot assign {host.dtype} data to an NDArray of {dt.name}: use a number, "
                f"a numpy array or an NDArray"
            )
        host = host.astype(dt, copy=False)
        if host.ndim == 0:
            if math.prod(shape) <= HOST_MOVE_ELEMENTS:  # no program per shape
                return jax.device_put(np.full(shape, host, dt), arr._ctx.jax_device)
            return jnp.full(shape, host, dtype=dt, device=arr._ctx.jax_device)
        data = jax.device_put(host, arr._ctx.jax_device)
    if data.dtype != dt:
        data = to_device_of(np.asarray(data).astype(dt), data) if on_host(data) else data.astype(dt)
    ds = tuple(data.shape)
    if ds != shape:
        extra = len(ds) - len(shape)
        if any(d != 1 for d in ds[:extra]) or any(
            d not in (1, t) for d, t in zip(ds[max(extra, 0) :], shape[max(-extra, 0) :])
        ):
            raise ValueError(
                f"cannot assign a value of shape {ds} to NDArray[{key!r}] of shape {shape}: "
                f"the value must broadcast to {shape}"
            )
        if on_host(data) and math.prod(shape) <= HOST_MOVE_ELEMENTS:
            host = np.asarray(data).reshape(ds[max(extra, 0) :])
            return to_device_of(np.array(np.broadcast_to(host, shape)), data)
        data = jnp.broadcast_to(data.reshape(ds[max(extra, 0) :]), shape)
    return data


NDArray.__getitem__ = get_item
NDArray.__setitem__ = set_item
