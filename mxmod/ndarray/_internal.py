"""``mx.nd._internal``: MXNet's underscore-named operators, imperative.

``_crop_assign``/``_crop_assign_scalar`` (= ``_slice_assign``/``_slice_assign_scalar``)
write a value into a ``begin``/``end`` box of ``lhs``; the copy, fill and ``_scatter_*``
operators are in ``_internal_scatter.py``; every other name is the table operator of that
name (``_plus_scalar``...), as in MXNet.
"""

from __future__ import annotations

import sys

from typing import Any

from ._internal_scatter import (  # noqa: F401
    _copyto,
    _scatter_elemwise_div,
    _scatter_minus_scalar,
    _scatter_plus_scalar,
    _scatter_set_nd,
    _set_value,
)
from .ndarray import NDArray, slice_box as _box
from .zipfian import sample_unique_zipfian


def _slice_assign(
    lhs: NDArray, rhs: NDArray, begin: Any, end: Any, step: Any = (), out: NDArray | None = None
) -> NDArray:
    """Copy of ``lhs`` (or ``out`` written in place) with ``rhs`` in the box."""
    res = out if out is not None else lhs.copy()
    if res is not lhs and out is not None:
        res[:] = lhs
    res[_box(begin, end, step)] = rhs
    return res


def _slice_assign_scalar(
    lhs: NDArray, scalar: float, begin: Any, end: Any, step: Any = (), out: NDArray | None = None
) -> NDArray:
    """Copy of ``lhs`` (or ``out`` written in place) with ``scalar`` in the box."""
    return _slice_assign(lhs, scalar, begin, end, step, out)


_crop_assign = _slice_assign
_crop_assign_scalar = _slice_assign_scalar
_sample_unique_zipfian = sample_unique_zipfian


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    package = sys.modules[__package__]  # loaded before this module
    if name == "_square_sum":  # a sparse operator (row_sparse input)
        return package.sparse._square_sum
    return getattr(package, name)  # the package, loaded before this module
