"""ONNX translations of indexing and sequence operators: take, one_hot, topk, the
Sequence* family, depth/space rearrangements, shape_array/size_array."""

from __future__ import annotations

import numpy as np

from .builder import GraphBuilder, NodeCtx
from .registry import register


def _int64(b: GraphBuilder, x: str) -> str:
    return b.op("Cast", [x], to=b.onnx_type(np.int64))


@register("take")
def take(b: GraphBuilder, n: NodeCtx) -> None:
    axis = n.axis(int(n.a.axis))
    size = n.in_shapes[0][axis]
    idx = _int64(b, n.inputs[1])
    if n.a.mode == "wrap":
        idx = b.op("Mod", [idx, b.const(size)], fmod=0)
    else:  # clip
        idx = b.op("Clip", [idx, b.const(0), b.const(size - 1)])
    b.op("Gather", [n.x, idx], n.out, axis=axis)


@register("one_hot")
def one_hot(b: GraphBuilder, n: NodeCtx) -> None:
    idx = _int64(b, n.x)
    depth = int(n.a.depth)
    # MXNet gives all off_value for a negative index; ONNX would count it from the end
    idx = b.op("Where", [b.op("Less", [idx, b.const(0)]), b.const(depth), idx])
    dtype = np.dtype(n.out_dtypes[0])
    values = b.const([n.a.off_value, n.a.on_value], dtype)
    b.op("OneHot", [idx, b.const([depth]), values], n.out, axis=-1)


@register("topk")
def topk(b: GraphBuilder, n: NodeCtx) -> None:
    kind = n.a.ret_typ
    if kind == "mask":
        raise n.unsupported("ret_typ='mask'")
    x, axis = n.x, n.a.axis
    if axis is None:  # over the flattened input
        x, axis = b.reshape(x, [-1]), 0
    size = int(np.prod(n.in_shapes[0])) if n.a.axis is None else n.in_shapes[0][n.axis(axis)]
    k = size if int(n.a.k) < 1 else int(n.a.k)
    values, indices = b.op("TopK", [x, b.const([k])], 2, axis=int(axis),
                           largest=0 if n.a.is_ascend else 1, sorted=1)  # fmt: skip
    idx_type = b.onnx_type(np.dtype(n.a.dtype))
    if kind == "indices":
        b.op("Cast", [indices], n.out, to=idx_type)
    elif kind == "value":
        b.op("Identity", [values], n.out)
    else:  # both
        b.op("Identity", [values], n.outputs[0])
        b.op("Cast", [indices], n.outputs[1], to=idx_type)


def _sequence_axes(n: NodeCtx) -> tuple[int, int]:
    axis = int(n.a.axis)
    return axis, 1 - axis


@register("SequenceMask")
def sequence_mask(b: GraphBuilder, n: NodeCtx) -> None:
    if not n.a.use_sequence_length:
        b.op("Identity", [n.x], n.out)
        return
    t_ax, b_ax = _sequence_axes(n)
    shape = [1] * n.ndim
    shape[t_ax] = n.in_shapes[0][t_ax]
    steps = b.const(np.arange(shape[t_ax]).reshape(shape))
    lens_shape = [1] * n.ndim
    lens_shape[b_ax] = -1
    lengths = b.reshape(_int64(b, n.inputs[1]), lens_shape)
    keep = b.op("Less", [steps, lengths])
    fill = b.const(n.a.value, n.in_dtypes[0])
    b.op("Where", [keep, n.x, fill], n.out)


@register("SequenceLast")
def sequence_last(b: GraphBuilder, n: NodeCtx) -> None:
    if n.a.use_sequence_length:
        raise n.unsupported("use_sequence_length=True")
    t_ax, _ = _sequence_axes(n)
    b.op("Gather", [n.x, b.const(-1)], n.out, axis=t_ax)


@register("SequenceReverse")
def sequence_reverse(b: GraphBuilder, n: NodeCtx) -> None:
    if not n.a.use_sequence_length:
        ends = b.const([np.iinfo(np.int64).min])
        b.op("Slice", [n.x, b.const([-1]), ends, b.const([0]), b.const([-1])], n.out)
        return
    lengths = _int64(b, n.inputs[1])
    b.op("ReverseSequence", [n.x, lengths], n.out, batch_axis=1, time_axis=0)


@register("depth_to_space")
def depth_to_space(b: GraphBuilder, n: NodeCtx) -> None:
    b.op("DepthToSpace", [n.x], n.out, blocksize=int(n.a.block_size), mode="DCR")


@register("space_to_depth")
def space_to_depth(b: GraphBuilder, n: NodeCtx) -> None:
    b.op("SpaceToDepth", [n.x], n.out, blocksize=int(n.a.block_size))


@register("shape_array")
def shape_array(b: GraphBuilder, n: NodeCtx) -> None:
    shape = b.op("Shape", [n.x])
    b.op("Cast", [shape], n.out, to=b.onnx_type(n.out_dtypes[0]))


@register("size_array")
def size_array(b: GraphBuilder, n: NodeCtx) -> None:
    size = b.reshape(b.op("Size", [n.x]), [1])
    b.op("Cast", [size], n.out, to=b.onnx_type(n.out_dtypes[0]))
