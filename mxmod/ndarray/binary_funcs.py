"""MXNet's module-level binary functions of ``mx.nd`` (``mx.nd.add``, ``mx.nd.divide`` ...).

As in MXNet 1.9.1, ``mx.nd.divide(a, b)`` is ``a / b``: either side may be a scalar,
two NDArrays broadcast, results keep the NDArray's dtype (comparisons give 1/0 in it),
and two plain numbers give a plain number.
"""

from __future__ import annotations

import operator
from typing import Any

import jax.numpy as jnp

from ..base import named, two_operands
from .ndarray import NDArray
from .ops import binary_fn

__all__ = [
    "add",
    "subtract",
    "multiply",
    "divide",
    "true_divide",
    "modulo",
    "power",
    "equal",
    "not_equal",
    "greater",
    "greater_equal",
    "lesser",
    "lesser_equal",
    "logical_and",
    "logical_or",
    "logical_xor",
]


def _by_operator(op, name: str, params=("lhs", "rhs")):
    def f(*args: Any, **kwargs: Any) -> Any:
        lhs, rhs = two_operands(f"mx.nd.{name}", params, args, kwargs)
        if not isinstance(lhs, NDArray) and not isinstance(rhs, NDArray):
            if hasattr(lhs, "shape") or hasattr(rhs, "shape"):
                raise TypeError(
                    f"mx.nd.{name}: give NDArrays or numbers, got {type(lhs).__name__} and "
                    f"{type(rhs).__name__}; wrap arrays with mx.nd.array()"
                )
        return op(lhs, rhs)

    doc = f"``mx.nd.{name}({', '.join(params)})``: element-wise; either side may be a scalar."
    return named(f, name, doc)


def _by_jnp(fn, name: str):
    def f(lhs: Any, rhs: Any) -> Any:
        return binary_fn(fn, name, lhs, rhs)

    return named(f, name, f"``mx.nd.{name}(lhs, rhs)``: element-wise 1/0 in the NDArray's dtype.")


add = _by_operator(operator.add, "add")
subtract = _by_operator(operator.sub, "subtract")
multiply = _by_operator(operator.mul, "multiply")
divide = _by_operator(operator.truediv, "divide")
true_divide = _by_operator(operator.truediv, "true_divide")
modulo = _by_operator(operator.mod, "modulo")
power = _by_operator(operator.pow, "power", ("base", "exp"))
equal = _by_operator(operator.eq, "equal")
not_equal = _by_operator(operator.ne, "not_equal")
greater = _by_operator(operator.gt, "greater")
greater_equal = _by_operator(operator.ge, "greater_equal")
lesser = _by_operator(operator.lt, "lesser")
lesser_equal = _by_operator(operator.le, "lesser_equal")
logical_and = _by_jnp(jnp.logical_and, "logical_and")
logical_or = _by_jnp(jnp.logical_or, "logical_or")
logical_xor = _by_jnp(jnp.logical_xor, "logical_xor")
