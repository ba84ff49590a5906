"""ONNX translations of elementwise arithmetic: binary, with a scalar, unary math, casts."""

from __future__ import annotations

import numpy as np

from .builder import GraphBuilder, NodeCtx
from .registry import register

_ARITH = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "maximum": "Max",
          "minimum": "Min", "power": "Pow", "mod": "Mod"}  # fmt: skip
# MXNet op -> ONNX op for the two-tensor forms (elemwise_*, _*, broadcast_*)
_BINARY = {
    "elemwise_add": "add", "elemwise_sub": "sub", "elemwise_mul": "mul", "elemwise_div": "div",
    "broadcast_add": "add", "broadcast_sub": "sub", "broadcast_mul": "mul",
    "broadcast_div": "div", "broadcast_maximum": "maximum", "broadcast_minimum": "minimum",
    "broadcast_power": "power", "_maximum": "maximum", "_minimum": "minimum",
    "_power": "power", "_mod": "mod", "broadcast_mod": "mod",
}  # fmt: skip
# comparisons: ONNX op and whether its operands are swapped / result negated
_COMPARE = {"equal": ("Equal", False, False), "not_equal": ("Equal", False, True),
            "greater": ("Greater", False, False), "greater_equal": ("Less", False, True),
            "lesser": ("Less", False, False), "lesser_equal": ("Greater", False, True)}  # fmt: skip


def _arith(b: GraphBuilder, n: NodeCtx, kind: str, lhs: str, rhs: str) -> None:
    if kind == "mod" and np.issubdtype(n.in_dtypes[0], np.floating):
        _float_mod(b, n, lhs, rhs)
    elif kind == "mod":  # integers: Python's % (the divisor's sign), as MXNet
        b.op("Mod", [lhs, rhs], n.out, fmod=0)
    else:
        b.op(_ARITH[kind], [lhs, rhs], n.out)


def _float_mod(b: GraphBuilder, n: NodeCtx, lhs: str, rhs: str) -> None:
    """MXNet's float mod takes the divisor's sign (Python's ``%``); ONNX's is C's fmod."""
    fmod = b.op("Mod", [lhs, rhs], fmod=1)
    zero = b.const(0, n.in_dtypes[0])
    differ = b.op("Not", [b.op("Equal", [b.op("Less", [fmod, zero]), b.op("Less", [rhs, zero])])])
    fix = b.op("And", [differ, b.op("Not", [b.op("Equal", [fmod, zero])])])
    b.op("Where", [fix, b.op("Add", [fmod, rhs]), fmod], n.out)


@register(*_BINARY)
def binary(b: GraphBuilder, n: NodeCtx) -> None:
    _arith(b, n, _BINARY[n.op], n.inputs[0], n.inputs[1])


def _compare(b: GraphBuilder, n: NodeCtx, kind: str, lhs: str, rhs: str) -> None:
    op, swap, negate = _COMPARE[kind]
    res = b.op(op, [rhs, lhs] if swap else [lhs, rhs])
    if negate:
        res = b.op("Not", [res])
    b.op("Cast", [res], n.out, to=b.onnx_type(n.out_dtypes[0]))  # MXNet gives 0/1 in its dtype


_COMPARE_OPS = {f"{p}{k}": k for k in _COMPARE for p in ("_", "broadcast_")}


@register(*_COMPARE_OPS)
def compare(b: GraphBuilder, n: NodeCtx) -> None:
    _compare(b, n, _COMPARE_OPS[n.op], n.inputs[0], n.inputs[1])


# _<kind>_scalar and the reversed _r<kind>_scalar forms
_SCALAR = {"_plus_scalar": ("add", False), "_minus_scalar": ("sub", False),
           "_rminus_scalar": ("sub", True), "_mul_scalar": ("mul", False),
           "_div_scalar": ("div", False), "_rdiv_scalar": ("div", True),
           "_power_scalar": ("power", False), "_rpower_scalar": ("power", True),
           "_maximum_scalar": ("maximum", False), "_minimum_scalar": ("minimum", False),
           "_mod_scalar": ("mod", False)}  # fmt: skip
_SCALAR_COMPARE = {f"_{k}_scalar": k for k in _COMPARE}


def _scalar(b: GraphBuilder, n: NodeCtx) -> str:
    return b.const(n.a.scalar, n.in_dtypes[0], base=f"{n.name}_scalar")


@register(*_SCALAR)
def with_scalar(b: GraphBuilder, n: NodeCtx) -> None:
    kind, reverse = _SCALAR[n.op]
    s = _scalar(b, n)
    _arith(b, n, kind, *((s, n.x) if reverse else (n.x, s)))


@register(*_SCALAR_COMPARE)
def compare_scalar(b: GraphBuilder, n: NodeCtx) -> None:
    _compare(b, n, _SCALAR_COMPARE[n.op], n.x, _scalar(b, n))


_UNARY = {"exp": "Exp", "log": "Log", "sqrt": "Sqrt", "abs": "Abs", "negative": "Neg",
          "reciprocal": "Reciprocal", "floor": "Floor", "ceil": "Ceil", "sin": "Sin",
          "cos": "Cos", "tan": "Tan", "arcsin": "Asin", "arccos": "Acos", "arctan": "Atan",
          "sinh": "Sinh", "cosh": "Cosh", "erf": "Erf", "sign": "Sign"}  # fmt: skip


@register(*_UNARY)
def unary(b: GraphBuilder, n: NodeCtx) -> None:
    b.op(_UNARY[n.op], [n.x], n.out)


@register("square", "rsqrt", "log1p", "expm1", "round", "rint", "fix", "trunc", "logical_not")
def unary_composite(b: GraphBuilder, n: NodeCtx) -> None:
    x, dt = n.x, n.in_dtypes[0]
    if n.op == "square":
        b.op("Mul", [x, x], n.out)
    elif n.op == "rsqrt":
        b.op("Reciprocal", [b.op("Sqrt", [x])], n.out)
    elif n.op == "log1p":
        b.op("Log", [b.op("Add", [x, b.const(1, dt)])], n.out)
    elif n.op == "expm1":
        b.op("Sub", [b.op("Exp", [x]), b.const(1, dt)], n.out)
    elif n.op == "round":  # halves away from zero (ONNX Round rounds them to even)
        mag = b.op("Floor", [b.op("Add", [b.op("Abs", [x]), b.const(0.5, dt)])])
        b.op("Mul", [b.op("Sign", [x]), mag], n.out)
    elif n.op == "rint":  # the nearer of floor and ceil, floor on a tie (ONNX Round: even)
        lo, hi = b.op("Floor", [x]), b.op("Ceil", [x])
        nearer_lo = b.op("LessOrEqual", [b.op("Sub", [x, lo]), b.op("Sub", [hi, x])])
        b.op("Where", [nearer_lo, lo, hi], n.out)
    elif n.op in ("fix", "trunc"):  # towards zero
        b.op("Mul", [b.op("Sign", [x]), b.op("Floor", [b.op("Abs", [x])])], n.out)
    else:  # logical_not: 1 where x == 0, in x's dtype
        zero = b.op("Equal", [x, b.const(0, dt)])
        b.op("Cast", [zero], n.out, to=b.onnx_type(dt))


@register("add_n")
def add_n(b: GraphBuilder, n: NodeCtx) -> None:
    b.op("Sum", list(n.inputs), n.out)


@register("Cast")
def cast(b: GraphBuilder, n: NodeCtx) -> None:
    b.op("Cast", [n.x], n.out, to=b.onnx_type(n.out_dtypes[0]))


@register("smooth_l1")
def smooth_l1(b: GraphBuilder, n: NodeCtx) -> None:
    """0.5 (s x)^2 where |x| < 1/s^2, else |x| - 0.5/s^2."""
    dt, s2 = n.in_dtypes[0], float(n.a.scalar) ** 2
    ax = b.op("Abs", [n.x])
    quad = b.op("Mul", [b.op("Mul", [n.x, n.x]), b.const(0.5 * s2, dt)])
    lin = b.op("Sub", [ax, b.const(0.5 / s2, dt)])
    b.op("Where", [b.op("Less", [ax, b.const(1.0 / s2, dt)]), quad, lin], n.out)


@register("cbrt")
def cbrt(b: GraphBuilder, n: NodeCtx) -> None:
    mag = b.op("Pow", [b.op("Abs", [n.x]), b.const(1.0 / 3.0, n.in_dtypes[0])])
    b.op("Mul", [b.op("Sign", [n.x]), mag], n.out)
