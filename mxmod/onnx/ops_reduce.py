"""ONNX translations of reductions, arg-reductions and matrix products."""

from __future__ import annotations

import numpy as np

from .builder import GraphBuilder, NodeCtx
from .registry import register

_REDUCE = {"sum": "Sum", "mean": "Mean", "max": "Max", "min": "Min", "prod": "Prod"}


def _axes(n: NodeCtx, axis, exclude: bool = False):
    """MXNet's ``axis`` (None, int or tuple; ``exclude`` inverts it) as sorted ONNX axes,
    or None for all axes."""
    if axis is None or (not isinstance(axis, int) and len(axis) == 0):
        return None
    axes = sorted({n.axis(int(i)) for i in np.atleast_1d(axis)})
    if exclude:
        axes = [i for i in range(n.ndim) if i not in axes]
    return axes


def _finish(b: GraphBuilder, n: NodeCtx, y: str) -> None:
    """MXNet reduces to shape (1,) where ONNX gives a scalar; reshape where they differ."""
    b.reshape(y, list(n.out_shapes[0]), n.out)


@register(*_REDUCE)
def reduce(b: GraphBuilder, n: NodeCtx) -> None:
    axes = _axes(n, n.a.axis, bool(n.a.exclude))
    if axes == []:  # exclude=True over every axis: nothing reduced
        b.op("Identity", [n.x], n.out)
        return
    keep = bool(n.a.keepdims)
    if axes is None and not keep:
        _finish(b, n, b.reduce(_REDUCE[n.op], n.x, None, False))
    else:
        b.reduce(_REDUCE[n.op], n.x, axes, keep, n.out)


@register("norm")
def norm(b: GraphBuilder, n: NodeCtx) -> None:
    kind = {1: "L1", 2: "L2"}.get(int(n.a.ord))
    if kind is None:
        raise n.unsupported(f"ord={n.a.ord}")
    axes, keep = _axes(n, n.a.axis), bool(n.a.keepdims)
    if axes is None and not keep:
        _finish(b, n, b.reduce(kind, n.x, None, False))
    else:
        b.reduce(kind, n.x, axes, keep, n.out)


def _arg(b: GraphBuilder, n: NodeCtx, op: str) -> None:
    x, axis, keep = n.x, n.a.axis, bool(n.a.keepdims)
    if axis is None:  # over the flattened input
        x, axis = b.reshape(x, [-1]), 0
    idx = b.op(op, [x], axis=n.axis(int(axis)) if n.a.axis is not None else 0, keepdims=int(keep))
    if n.a.axis is None:
        idx = b.reshape(idx, list(n.out_shapes[0]))
    b.op("Cast", [idx], n.out, to=b.onnx_type(n.out_dtypes[0]))  # MXNet's indices are floats


@register("argmax")
def argmax(b: GraphBuilder, n: NodeCtx) -> None:
    _arg(b, n, "ArgMax")


@register("argmin")
def argmin(b: GraphBuilder, n: NodeCtx) -> None:
    _arg(b, n, "ArgMin")


def _swap_last(b: GraphBuilder, x: str, ndim: int) -> str:
    perm = list(range(ndim))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return b.op("Transpose", [x], perm=perm)


@register("dot")
def dot(b: GraphBuilder, n: NodeCtx) -> None:
    """MXNet's dot contracts lhs's last axis with rhs's first: MatMul when rhs is 2-D (or
    both are 1-D/2-D)."""
    lhs, rhs = n.inputs
    nl, nr = len(n.in_shapes[0]), len(n.in_shapes[1])
    if nr > 2 or (n.a.transpose_a and nl != 2) or (nr == 1 and n.a.transpose_b):
        raise n.unsupported(f"a {nl}-D by {nr}-D product with these transposes")
    if n.a.transpose_a:
        lhs = _swap_last(b, lhs, 2)
    if n.a.transpose_b and nr == 2:
        rhs = _swap_last(b, rhs, 2)
    if nl == 1 and nr == 1:  # MXNet gives shape (1,)
        _finish(b, n, b.op("MatMul", [lhs, rhs]))
    else:
        b.op("MatMul", [lhs, rhs], n.out)


@register("batch_dot")
def batch_dot(b: GraphBuilder, n: NodeCtx) -> None:
    lhs, rhs = n.inputs
    if n.a.transpose_a:
        lhs = _swap_last(b, lhs, len(n.in_shapes[0]))
    if n.a.transpose_b:
        rhs = _swap_last(b, rhs, len(n.in_shapes[1]))
    b.op("MatMul", [lhs, rhs], n.out)
