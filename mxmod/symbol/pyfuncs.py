"""MXNet's Python-level functions of ``mx.sym`` that pick an operator by argument kind:
``maximum``, ``minimum``, ``power``/``pow``, ``hypot`` (two symbols: the element-wise
operator; a symbol and a number: the ``_scalar`` operator; two numbers: the number), and
the constant ranges ``arange``, ``linspace``, ``eye``."""

from __future__ import annotations

import math
import numbers
from typing import Any

from ..base import named, two_operands
from .creation import creator, op_function
from .symbol import Symbol

__all__ = [
    "maximum",
    "minimum",
    "power",
    "pow",
    "hypot",
    "arange",
    "linspace",
    "eye",
    "histogram",
    "split_v2",
]


def _dispatch(name: str, both: str, scalar: str, rscalar: str, py, params=("left", "right")):
    def f(*args: Any, name: Any = None, **kwargs: Any) -> Any:
        left, right = two_operands(f"mx.sym.{f.__name__}", params, args, kwargs)
        kw = {} if name is None else {"name": name}
        if isinstance(left, Symbol) and isinstance(right, Symbol):
            return op_function(both)(left, right, **kw)
        if isinstance(left, Symbol) and isinstance(right, numbers.Number):
            return op_function(scalar)(left, scalar=right, **kw)
        if isinstance(left, numbers.Number) and isinstance(right, Symbol):
            return op_function(rscalar)(right, scalar=left, **kw)
        if isinstance(left, numbers.Number) and isinstance(right, numbers.Number):
            return py(left, right)
        raise TypeError(
            f"mx.sym.{f.__name__}: give Symbols or numbers, got {type(left).__name__} and "
            f"{type(right).__name__}"
        )

    doc = f"``mx.sym.{name}({', '.join(params)})``: element-wise; either side may be a number."
    return named(f, name, doc)


maximum = _dispatch("maximum", "_maximum", "_maximum_scalar", "_maximum_scalar", max)
minimum = _dispatch("minimum", "_minimum", "_minimum_scalar", "_minimum_scalar", min)
power = _dispatch(
    "power", "_power", "_power_scalar", "_rpower_scalar", lambda a, b: a**b, ("base", "exp")
)
pow = power  # noqa: A001  (MXNet's name)
hypot = _dispatch("hypot", "_hypot", "_hypot_scalar", "_hypot_scalar", math.hypot)


def _dtype_kw(dtype: Any) -> dict:
    return {} if dtype is None else {"dtype": dtype}


def arange(start, stop=None, step=1.0, repeat=1, infer_range=False, name=None, dtype=None):
    """Values in ``[start, stop)`` by ``step``, each repeated ``repeat`` times (float32)."""
    return op_function("_arange")(
        start=start,
        stop=stop,
        step=step,
        repeat=repeat,
        infer_range=infer_range,
        name=name,
        **_dtype_kw(dtype),
    )


def linspace(start, stop, num, endpoint=True, name=None, dtype=None):
    """``num`` evenly spaced values from ``start`` to ``stop``."""
    return op_function("_linspace")(
        start=start, stop=stop, num=num, endpoint=endpoint, name=name, **_dtype_kw(dtype)
    )


def eye(N, M=0, k=0, dtype=None, **kwargs):
    """2-D array with ones on diagonal ``k``."""
    return op_function("_eye")(N=N, M=M, k=k, **_dtype_kw(dtype), **kwargs)


def histogram(a, bins=10, range=None, **kwargs):  # noqa: A002
    """A ``_histogram`` node: ``bins`` equal bins over ``range`` (required in a symbol), or
    the bins whose edges the Symbol ``bins`` gives."""
    if isinstance(bins, Symbol):
        return creator("_histogram")(a, bins, **kwargs)
    if range is None:
        raise ValueError(
            "mx.sym.histogram: give range=(low, high) (a symbol has no data to pick it from)"
        )
    return creator("_histogram")(a, bin_cnt=int(bins), range=tuple(range), **kwargs)


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False, name=None):
    """``mx.sym.split_v2``: equal sections (an int) or parts between the given cut points
    (a tuple), along ``axis``; ``squeeze_axis`` drops the axis from parts of size 1."""
    kw = {} if name is None else {"name": name}
    return ary.split_v2(indices_or_sections, axis=axis, squeeze_axis=squeeze_axis, **kw)
