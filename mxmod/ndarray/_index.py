"""Pure-Python shape helpers for NDArray: basic-index normalisation and MXNet reshape codes.

These follow MXNet 1.9.1's ``NDArray._get_nd_basic_indexing`` and
``InferReshapeShape`` so that views, result shapes and error messages match.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..base import MXNetError

__all__ = ["is_basic_key", "normalize_basic_key", "contiguous_flat_range", "infer_reshape"]


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def is_basic_key(key: Any) -> bool:
    """True if ``key`` holds only ints, slices, ``None`` and ``Ellipsis`` (MXNet basic indexing)."""
    items = key if isinstance(key, tuple) else (key,)
    return all(_is_int(k) or k is None or k is Ellipsis or isinstance(k, slice) for k in items)


def check_key_types(key: Any) -> None:
    """Raise like MXNet for index types NDArray never accepts (floats, strings, ...)."""
    items = key if isinstance(key, tuple) else (key,)
    for k in items:
        if isinstance(k, (float, np.floating, str, bytes, bool, np.bool_)):
            raise ValueError(
                f"NDArray does not support slicing with key {k!r} of type {type(k)}: use "
                f"integers, slices, None/..., or integer arrays"
            )


def normalize_basic_key(key: Any, shape: Sequence[int]):
    """Expand a basic key against ``shape``.

    Returns:
        ``(slices, int_axes, none_positions, result_shape)``: one ``slice``
        per axis of ``shape`` (ints turned into length-1 slices), the axes that
        were ints, the positions of ``None`` in the result and the MXNet
        result shape (``(1,)`` when every axis was an int, as MXNet 1.x does).

    Raises:
        IndexError: too many indices or an int out of bounds (MXNet's messages).
    """
    items = list(key) if isinstance(key, tuple) else [key]
    n_ell = sum(1 for k in items if k is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    n_real = sum(1 for k in items if k is not None and k is not Ellipsis)
    if n_real > len(shape):
        raise IndexError(f"too many indices ({n_real}) for array with {len(shape)} dimensions")
    if n_ell:
        pos = items.index(Ellipsis)
        items[pos : pos + 1] = [slice(None)] * (len(shape) - n_real)
    else:
        items += [slice(None)] * (len(shape) - n_real)
    slices, int_axes, result = [], [], []
    ax = 0
    for k in items:
        if k is None:
            result.append(1)
            continue
        n = shape[ax]
        if _is_int(k):
            k = int(k)
            if not -n <= k < n:
                raise IndexError(f"index {k} is out of bounds for axis {ax} with size {n}")
            k = k + n if k < 0 else k
            slices.append(slice(k, k + 1, 1))
            int_axes.append(ax)
        else:
            start, stop, step = k.indices(n)
            slices.append(slice(start, stop, step))
            result.append(len(range(start, stop, step)))
        ax += 1
    if not result:
        result = [1]
    return tuple(slices), int_axes, tuple(result)


def contiguous_flat_range(slices: Sequence[slice], shape: Sequence[int]):
    """Return ``(flat_begin, flat_end)`` if the region is contiguous in row-major memory.

    MXNet returns a view (shared memory) exactly in this case and a copy
    otherwise. Returns ``None`` for a non-contiguous region.
    """
    lens = [len(range(s.start, s.stop, s.step)) for s in slices]
    total = math.prod(lens)
    if total != 0:
        subset = False
        for s, n, ln in zip(reversed(slices), reversed(shape), reversed(lens)):
            if ln > 1 and s.step != 1:
                return None
            if subset and ln > 1:
                return None
            if ln < n:
                subset = True
    if total == 0:
        return 0, 0
    strides = [math.prod(shape[i + 1 :]) for i in range(len(shape))]
    begin = sum(s.start * st for s, st in zip(slices, strides))
    return begin, begin + total


def infer_reshape(src: Sequence[int], target: Sequence[int], reverse: bool = False) -> tuple:
    """Resolve MXNet's reshape codes (0, -1, -2, -3, -4) against ``src``.

    Args:
        src: the current shape.
        target: the requested shape with codes: 0 copy this dim, -1 infer,
            -2 copy all remaining dims, -3 merge two dims, -4 split a dim in two.
        reverse: resolve the codes from the right, as MXNet's ``reverse=True``.

    Returns:
        The concrete shape.

    Raises:
        MXNetError: for codes that cannot apply (MXNet's checks).
        ValueError: if the result does not hold the same number of elements.
    """
    src = tuple(int(d) for d in src)
    tgt = tuple(int(d) for d in target)
    if reverse:
        out = _infer(src[::-1], tgt[::-1], target)[::-1]
    else:
        out = _infer(src, tgt, target)
    if math.prod(out) != math.prod(src):
        raise ValueError(
            f"Cannot reshape array of size {math.prod(src)} into shape {tuple(target)}"
        )
    return out


def _infer(src: tuple, tgt: tuple, shown: Sequence[int]) -> tuple:
    def bad(msg: str) -> MXNetError:
        return MXNetError(f"reshape {tuple(shown)} of an array of shape {src}: {msg}")

    out: list = []
    src_idx, inf_idx, i = 0, -1, 0
    while i < len(tgt):
        p = tgt[i]
        if p == 0:
            if src_idx >= len(src):
                raise bad("code 0 copies a dimension that does not exist")
            out.append(src[src_idx])
            src_idx += 1
        elif p == -1:
            if inf_idx >= 0:
                raise bad("One and only one dim can be inferred (-1 given twice)")
            inf_idx = len(out)
            out.append(1)
            src_idx += 1
        elif p == -2:
            out.extend(src[src_idx:])
            src_idx = len(src)
        elif p == -3:
            if src_idx >= len(src) - 1:
                raise bad("code -3 merges two dimensions but fewer than two remain")
            out.append(src[src_idx] * src[src_idx + 1])
            src_idx += 2
        elif p == -4:
            if i + 2 >= len(tgt) or src_idx >= len(src):
                raise bad("code -4 needs a source dimension and two split sizes after it")
            d0, d1, d2 = src[src_idx], tgt[i + 1], tgt[i + 2]
            src_idx += 1
            i += 2
            if d1 == -1 and d2 == -1:
                raise bad("Split dims cannot both be -1.")
            if d1 == -1:
                d1 = d0 // d2 if d2 else 0
            if d2 == -1:
                d2 = d0 // d1 if d1 else 0
            if d1 * d2 != d0:
                raise bad(f"Split dims {d1}, {d2} do not divide original dim {d0}")
            out.extend([d1, d2])
        elif p < -1:
            raise bad(f"shape dim size must be >= -1, while received {p}")
        else:
            out.append(p)
            src_idx += 1
        i += 1
    if inf_idx >= 0:
        known = math.prod(d for j, d in enumerate(out) if j != inf_idx)
        out[inf_idx] = math.prod(src) // known if known else 0
    return tuple(out)
