"""ONNX translations of shape operators: reshape, transpose, concat/split, slice, fill."""

from __future__ import annotations

import numpy as np

from .builder import INT64_MAX, INT64_MIN, GraphBuilder, NodeCtx
from .registry import register


@register("Flatten")
def flatten(b: GraphBuilder, n: NodeCtx) -> None:
    b.op("Flatten", [n.x], n.out, axis=1)


@register("Reshape")
def reshape(b: GraphBuilder, n: NodeCtx) -> None:
    spec = list(n.a.shape)  # (the deprecated target_shape's 0 means "inferred": resolved)
    if spec and not n.a.reverse and all(d >= -1 for d in spec) and spec.count(-1) <= 1:
        # 0 (copy the same-position dim) and -1 (inferred) mean the same in ONNX
        b.reshape(n.x, spec, n.out)
        return
    # MXNet's -2/-3/-4 codes, reverse and target_shape: resolved at the export shapes
    out = list(n.out_shapes[0])
    if n.dynamic_batch and out and n.in_shapes[0] and out[0] == n.in_shapes[0][0]:
        out[0] = 0  # keep the dynamic batch
    b.reshape(n.x, out, n.out)


@register("transpose")
def transpose(b: GraphBuilder, n: NodeCtx) -> None:
    axes = [n.axis(int(i)) for i in n.a.axes] or list(range(n.ndim))[::-1]
    b.op("Transpose", [n.x], n.out, perm=axes)


@register("SwapAxis")
def swap_axis(b: GraphBuilder, n: NodeCtx) -> None:
    perm = list(range(n.ndim))
    i, j = n.axis(int(n.a.dim1)), n.axis(int(n.a.dim2))
    perm[i], perm[j] = perm[j], perm[i]
    b.op("Transpose", [n.x], n.out, perm=perm)


@register("expand_dims")
def expand_dims(b: GraphBuilder, n: NodeCtx) -> None:
    b.unsqueeze(n.x, [n.axis(int(n.a.axis), n.ndim + 1)], n.out)


@register("squeeze")
def squeeze(b: GraphBuilder, n: NodeCtx) -> None:
    if n.a.axis is None:
        axes = [i for i, d in enumerate(n.in_shapes[0]) if d == 1]
        if n.dynamic_batch:
            axes = [i for i in axes if i != 0]
    else:
        axes = [n.axis(int(i)) for i in np.atleast_1d(n.a.axis)]
    if not axes:
        b.op("Identity", [n.x], n.out)
    elif len(axes) == n.ndim:  # MXNet keeps one dim: all-ones squeezes to (1,)
        b.reshape(n.x, [1], n.out)
    else:
        b.squeeze(n.x, axes, n.out)


@register("Concat")
def concat(b: GraphBuilder, n: NodeCtx) -> None:
    b.op("Concat", list(n.inputs), n.out, axis=n.axis(int(n.a.dim)))


@register("stack")
def stack(b: GraphBuilder, n: NodeCtx) -> None:
    axis = n.axis(int(n.a.axis), n.ndim + 1)
    parts = [b.unsqueeze(x, [axis]) for x in n.inputs]
    b.op("Concat", parts, n.out, axis=axis)


@register("SliceChannel")
def slice_channel(b: GraphBuilder, n: NodeCtx) -> None:
    axis = n.axis(int(n.a.axis))
    count = int(n.a.num_outputs)
    if not n.a.squeeze_axis:
        b.split(n.x, axis, count, list(n.outputs))
        return
    parts = b.split(n.x, axis, count, None)
    for part, out in zip(parts, n.outputs):
        b.squeeze(part, [axis], out)


def _slice(b: GraphBuilder, n: NodeCtx, starts, ends, axes, steps=None) -> None:
    inputs = [n.x, b.const(starts), b.const(ends), b.const(axes)]
    if steps is not None:
        inputs.append(b.const(steps))
    b.op("Slice", inputs, n.out)


@register("slice_axis")
def slice_axis(b: GraphBuilder, n: NodeCtx) -> None:
    end = INT64_MAX if n.a.end is None else int(n.a.end)
    _slice(b, n, [int(n.a.begin)], [end], [n.axis(int(n.a.axis))])


@register("slice")
def slice_(b: GraphBuilder, n: NodeCtx) -> None:
    count = len(n.a.begin)
    steps = [1 if s is None else int(s) for s in (n.a.step or [None] * count)]
    starts, ends = [], []
    for i in range(count):
        lo, hi, step = n.a.begin[i], n.a.end[i], steps[i]
        starts.append((0 if step > 0 else -1) if lo is None else int(lo))
        ends.append((INT64_MAX if step > 0 else INT64_MIN) if hi is None else int(hi))
    _slice(b, n, starts, ends, list(range(count)), steps)


@register("reverse")
def reverse(b: GraphBuilder, n: NodeCtx) -> None:
    axes = [n.axis(int(i)) for i in np.atleast_1d(n.a.axis)]
    _slice(b, n, [-1] * len(axes), [INT64_MIN] * len(axes), axes, [-1] * len(axes))


def _fill(b: GraphBuilder, n: NodeCtx, value: float) -> None:
    """``_zeros``/``_ones``/``_full``. Dims declared 0 (filled in by inference from a
    consumer, as mx.rnn's begin states) follow the dynamic input dim of the same size."""
    shape = tuple(n.out_shapes[0])
    declared = tuple(n.a.shape)
    follow = set()
    if len(declared) == len(shape):
        follow = {i for i, d in enumerate(declared) if d == 0}
    dtype = np.dtype(n.out_dtypes[0])
    fill = b.helper.make_tensor("value", b.onnx_type(dtype), [1], [dtype.type(value)])
    b.op("ConstantOfShape", [b.shape_tensor(shape, follow)], n.out, value=fill)


@register("_zeros")
def zeros(b: GraphBuilder, n: NodeCtx) -> None:
    _fill(b, n, 0.0)


@register("_ones")
def ones(b: GraphBuilder, n: NodeCtx) -> None:
    _fill(b, n, 1.0)


@register("_full")
def full(b: GraphBuilder, n: NodeCtx) -> None:
    _fill(b, n, float(n.a.value))


def _like(b: GraphBuilder, n: NodeCtx, value: float) -> None:
    dtype = np.dtype(n.out_dtypes[0])
    fill = b.helper.make_tensor("value", b.onnx_type(dtype), [1], [dtype.type(value)])
    b.op("ConstantOfShape", [b.op("Shape", [n.x])], n.out, value=fill)


@register("zeros_like")
def zeros_like(b: GraphBuilder, n: NodeCtx) -> None:
    _like(b, n, 0.0)


@register("ones_like")
def ones_like(b: GraphBuilder, n: NodeCtx) -> None:
    _like(b, n, 1.0)


@register("tile")
def tile(b: GraphBuilder, n: NodeCtx) -> None:
    reps = [int(r) for r in n.a.reps]
    x = n.x
    if len(reps) > n.ndim:  # MXNet promotes the input with leading 1-dims
        x = b.unsqueeze(x, list(range(len(reps) - n.ndim)))
    reps = [1] * (n.ndim - len(reps)) + reps
    b.op("Tile", [x, b.const(reps)], n.out)


@register("Pad")
def pad(b: GraphBuilder, n: NodeCtx) -> None:
    width = [int(w) for w in n.a.pad_width]
    pads = width[0::2] + width[1::2]
    inputs = [n.x, b.const(pads)]
    if n.a.mode == "constant":
        inputs.append(b.const(n.a.constant_value, n.in_dtypes[0]))
    b.op("Pad", inputs, n.out, mode=n.a.mode)


@register("broadcast_to")
def broadcast_to(b: GraphBuilder, n: NodeCtx) -> None:
    shape = [int(d) if int(d) != 0 else 1 for d in n.a.shape]  # 0 keeps the input's dim
    b.op("Expand", [n.x, b.const(shape)], n.out)


@register("broadcast_like")
def broadcast_like(b: GraphBuilder, n: NodeCtx) -> None:
    if n.a.lhs_axes is not None or n.a.rhs_axes is not None:
        raise n.unsupported("lhs_axes/rhs_axes")
    b.op("Expand", [n.x, b.op("Shape", [n.inputs[1]])], n.out)


@register("where")
def where(b: GraphBuilder, n: NodeCtx) -> None:
    if tuple(n.in_shapes[0]) != tuple(n.in_shapes[1]):
        raise n.unsupported("a 1-D condition selecting rows")
    cond = b.op("Cast", [n.x], to=b.onnx_type(np.bool_))
    b.op("Where", [cond, n.inputs[1], n.inputs[2]], n.out)
