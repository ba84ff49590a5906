"""``Symbol`` arithmetic and comparisons (``a + b``, ``a * 2``, ``1 - a``, ``a > b``, ``abs(a)``).

As MXNet: two symbols make the element-wise operator, a symbol and a number the
``_scalar`` operator. Each entry also gives the name prefix MXNet's node takes
(``_plus0``, ``_plusscalar0``...). ``install()`` puts the methods on ``Symbol``.
"""

from __future__ import annotations

from typing import Any

from ..base import named
from .creation import make_op
from .symbol import Symbol

# method: (op for two symbols, its name hint, op with a number, its name hint)
BINARY = {
    "__add__": ("elemwise_add", "_plus", "_plus_scalar", "_plusscalar"),
    "__sub__": ("elemwise_sub", "_minus", "_minus_scalar", "_minusscalar"),
    "__mul__": ("elemwise_mul", "_mul", "_mul_scalar", "_mulscalar"),
    "__truediv__": ("elemwise_div", "_div", "_div_scalar", "_divscalar"),
    "__mod__": ("_mod", "_mod", "_mod_scalar", "_modscalar"),
    "__pow__": ("_power", "_power", "_power_scalar", "_powerscalar"),
    "__gt__": ("_greater", "_greater", "_greater_scalar", "_greater_scalar"),
    "__ge__": ("_greater_equal", "_greater_equal", "_greater_equal_scalar", None),
    "__lt__": ("_lesser", "_lesser", "_lesser_scalar", "_lesser_scalar"),
    "__le__": ("_lesser_equal", "_lesser_equal", "_lesser_equal_scalar", None),
    "__eq__": ("_equal", "_equal", "_equal_scalar", "_equal_scalar"),
    "__ne__": ("_not_equal", "_not_equal", "_not_equal_scalar", "_not_equal_scalar"),
}
# method: (op with the number on the left, its name hint)
REFLECTED = {
    "__rsub__": ("_rminus_scalar", "_rminusscalar"),
    "__rtruediv__": ("_rdiv_scalar", "_rdivscalar"),
    "__rmod__": ("_rmod_scalar", "_rmodscalar"),
    "__rpow__": ("_rpower_scalar", "_rpower_scalar"),
}
# Python's name for the same operation
ALIASES = {"__radd__": "__add__", "__rmul__": "__mul__", "__div__": "__truediv__",
           "__rdiv__": "__rtruediv__"}  # fmt: skip


def _scalar_op(a: Symbol, b: Any, op: str, hint: str) -> Symbol:
    if not isinstance(b, (int, float)) and not hasattr(b, "dtype"):
        raise TypeError(f"unsupported operand type for Symbol arithmetic: {type(b).__name__}")
    return make_op(op, [a], {"scalar": b}, hint=hint)


def _binary(name: str, op: str, hint: str, scalar_op: str, scalar_hint: str | None):
    def method(self: Symbol, other: Any) -> Symbol:
        if isinstance(other, Symbol):
            return make_op(op, [self, other], {}, hint=hint)
        return _scalar_op(self, other, scalar_op, scalar_hint or scalar_op)

    return named(method, name)


def _reflected(name: str, op: str, hint: str):
    def method(self: Symbol, other: Any) -> Symbol:
        return _scalar_op(self, other, op, hint)

    return named(method, name)


def __neg__(self: Symbol) -> Symbol:
    return self * -1.0


def __abs__(self: Symbol) -> Symbol:
    return make_op("abs", [self], {})


def install() -> None:
    for name, ops in BINARY.items():
        setattr(Symbol, name, _binary(name, *ops))
    for name, ops in REFLECTED.items():
        setattr(Symbol, name, _reflected(name, *ops))
    for name, same in ALIASES.items():
        setattr(Symbol, name, getattr(Symbol, same))
    Symbol.__neg__ = __neg__
    Symbol.__abs__ = __abs__
