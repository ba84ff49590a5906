"""ONNX elementwise, reduction and shape operators as MXNet symbols (``import_graph.py``).

A translation is ``(ctx, name, attrs, inputs) -> Symbol or [Symbols]``; ``ctx.arg(i)`` is
input ``i`` as a Symbol (a known array becomes a variable holding it). Broadcasting follows
ONNX (numpy): an input of lower rank gets leading axes first, as MXNet's ``broadcast_*``
operators want equal ranks."""

from __future__ import annotations

import numpy as np

from .. import symbol as S
from .import_fold import axes_of, onnx_dtype

FLOAT_MAX = float(np.finfo(np.float32).max)


def _rank(ctx, value):
    shape = ctx.shape_of(value)
    return None if shape is None else max(1, len(shape))  # a 0-d value enters as (1,)


def _scalar(value):
    """The Python number of a one-element known array, else None."""
    if isinstance(value, S.Symbol):
        return None
    arr = np.asarray(value)
    return float(arr.reshape(())) if arr.size == 1 and arr.ndim <= 1 else None


def _aligned(ctx, a, b, ia=0, ib=1):
    """``a`` and ``b`` (inputs ``ia``, ``ib``) as Symbols of equal rank."""
    ra, rb = _rank(ctx, a), _rank(ctx, b)
    a, b = ctx.arg_value(a, ia), ctx.arg_value(b, ib)
    if ra is not None and rb is not None:
        for _ in range(rb - ra):
            a = S.expand_dims(a, axis=0)
        for _ in range(ra - rb):
            b = S.expand_dims(b, axis=0)
    return a, b


_BROADCAST = {
    "Add": ("broadcast_add", lambda x, c: x + c, lambda c, x: c + x),
    "Sub": ("broadcast_sub", lambda x, c: x - c, lambda c, x: c - x),
    "Mul": ("broadcast_mul", lambda x, c: x * c, lambda c, x: c * x),
    "Div": ("broadcast_div", lambda x, c: x / c, lambda c, x: c / x),
    "Pow": ("broadcast_power", lambda x, c: x**c, lambda c, x: c**x),
    "Equal": ("broadcast_equal", lambda x, c: x == c, lambda c, x: x == c),
    "Greater": ("broadcast_greater", lambda x, c: x > c, lambda c, x: x < c),
    "Less": ("broadcast_lesser", lambda x, c: x < c, lambda c, x: x > c),
    "And": ("broadcast_logical_and", None, None),
    "Or": ("broadcast_logical_or", None, None),
    "Xor": ("broadcast_logical_xor", None, None),
}


def _binary(op_type):
    op_name, with_scalar, scalar_first = _BROADCAST[op_type]

    def convert(ctx, name, attrs, inputs):
        a, b = inputs
        if with_scalar is not None and _scalar(b) is not None:
            return with_scalar(ctx.arg_value(a, 0), _scalar(b))
        if scalar_first is not None and _scalar(a) is not None:
            return scalar_first(_scalar(a), ctx.arg_value(b, 1))
        lhs, rhs = _aligned(ctx, a, b)
        return getattr(S, op_name)(lhs, rhs, name=name)

    return convert


def _variadic(op_name):
    def convert(ctx, name, attrs, inputs):
        out = ctx.arg_value(inputs[0], 0)
        for i, value in enumerate(inputs[1:], 1):
            out, rhs = _aligned(ctx, out, value, 0, i)
            out = getattr(S, op_name)(out, rhs)
        return out

    return convert


def _mean(ctx, name, attrs, inputs):
    return _variadic("broadcast_add")(ctx, name, attrs, inputs) / float(len(inputs))


def _unary(fn_name, **fixed):
    return lambda ctx, name, attrs, inputs: getattr(S, fn_name)(ctx.arg(0), name=name, **fixed)


def _reduce(fn_name, axes_input_since):
    def convert(ctx, name, attrs, inputs):
        axes = axes_of(attrs, inputs, 1, ctx.opset, axes_input_since)
        if not axes and attrs.get("noop_with_empty_axes", 0):
            return S.identity(ctx.arg(0), name=name)
        keep = bool(attrs.get("keepdims", 1))
        kwargs = {"keepdims": keep}
        if axes:
            kwargs["axis"] = tuple(axes)
        return getattr(S, fn_name)(ctx.arg(0), name=name, **kwargs)

    return convert


def _norm_reduce(kind, axes_input_since):
    def convert(ctx, name, attrs, inputs):
        axes = axes_of(attrs, inputs, 1, ctx.opset, axes_input_since)
        keep = bool(attrs.get("keepdims", 1))
        axis = {"axis": tuple(axes)} if axes else {}
        x = ctx.arg(0)
        if kind == "sum_square":
            return S.sum(S.square(x), keepdims=keep, name=name, **axis)
        return S.norm(x, ord=1 if kind == "l1" else 2, keepdims=keep, name=name, **axis)

    return convert


def _mod(ctx, name, attrs, inputs):
    lhs, rhs = _aligned(ctx, inputs[0], inputs[1])
    if not attrs.get("fmod", 0):  # the divisor's sign, as MXNet's mod
        return S.broadcast_mod(lhs, rhs, name=name)
    # C's fmod: the dividend's sign
    whole = S.trunc(S.broadcast_div(lhs, rhs))
    return S.broadcast_sub(lhs, S.broadcast_mul(whole, rhs), name=name)


def _clip(ctx, name, attrs, inputs):
    if ctx.opset < 11:
        low, high = attrs.get("min", -FLOAT_MAX), attrs.get("max", FLOAT_MAX)
    else:
        low = _scalar(inputs[1]) if len(inputs) > 1 and inputs[1] is not None else -FLOAT_MAX
        high = _scalar(inputs[2]) if len(inputs) > 2 and inputs[2] is not None else FLOAT_MAX
        if low is None or high is None:
            raise NotImplementedError("ONNX import: Clip with computed bounds")
    return S.clip(ctx.arg(0), a_min=float(low), a_max=float(high), name=name)


def _reshape(ctx, name, attrs, inputs):
    target = attrs["shape"] if ctx.opset < 5 else inputs[1]
    if isinstance(target, S.Symbol):
        raise NotImplementedError("ONNX import: Reshape to a shape computed from the data")
    target = list(np.asarray(target).ravel())
    if attrs.get("allowzero", 0) and 0 in target:
        raise NotImplementedError("ONNX import: Reshape with allowzero=1 and a 0 dimension")
    shape = ctx.shape_of(inputs[0])
    for i, t in enumerate(target):
        if not isinstance(t, (int, np.integer)):  # a symbolic dimension
            # the input's own open dimension at the same place: MXNet's 0 copies it
            if shape is None or i >= len(shape) or shape[i] is not None or t.axis != i:
                raise NotImplementedError(
                    "ONNX import: Reshape to a dimension the model leaves symbolic; give the "
                    "model's inputs fixed dimensions"
                )
            target[i] = 0
    return S.Reshape(ctx.arg(0), shape=tuple(int(t) for t in target), name=name)


def _flatten(ctx, name, attrs, inputs):
    axis = attrs.get("axis", 1)
    if axis == 1:
        return S.Flatten(ctx.arg(0), name=name)
    shape = ctx.static_shape(inputs[0], "Flatten")
    axis = axis % len(shape) if axis < 0 else axis
    return S.Reshape(ctx.arg(0), shape=(int(np.prod(shape[:axis])), -1), name=name)


def _transpose(ctx, name, attrs, inputs):
    perm = attrs.get("perm")
    return S.transpose(ctx.arg(0), axes=tuple(perm) if perm else (), name=name)


def _concat(ctx, name, attrs, inputs):
    parts = [ctx.arg_value(v, i) for i, v in enumerate(inputs)]
    return S.Concat(*parts, dim=int(attrs["axis"]), num_args=len(parts), name=name)


def _squeeze(ctx, name, attrs, inputs):
    axes = axes_of(attrs, inputs, 1, ctx.opset, 13)
    return S.squeeze(ctx.arg(0), axis=tuple(axes) if axes else None, name=name)


def _unsqueeze(ctx, name, attrs, inputs):
    axes = axes_of(attrs, inputs, 1, ctx.opset, 13)
    out = ctx.arg(0)
    rank = _rank(ctx, inputs[0])
    if any(a < 0 for a in axes):
        if rank is None:
            raise NotImplementedError("ONNX import: Unsqueeze at negative axes of an unknown rank")
        axes = [a % (rank + len(axes)) for a in axes]
    for a in sorted(axes):
        out = S.expand_dims(out, axis=a)
    return out


def _slice(ctx, name, attrs, inputs):
    if ctx.opset < 10:
        starts, ends, axes, steps = attrs["starts"], attrs["ends"], attrs.get("axes"), None
    else:
        known = [np.asarray(v).ravel() if v is not None else None for v in inputs[1:]]
        if any(isinstance(v, S.Symbol) for v in inputs[1:]):
            raise NotImplementedError("ONNX import: Slice with bounds computed from the data")
        starts, ends = known[0], known[1]
        axes = known[2] if len(known) > 2 else None
        steps = known[3] if len(known) > 3 else None
    axes = list(range(len(starts))) if axes is None else [int(a) for a in axes]
    steps = [1] * len(starts) if steps is None else [int(s) for s in steps]
    out = ctx.arg(0)
    for start, end, axis, step in zip(starts, ends, axes, steps):
        if step != 1:
            raise NotImplementedError("ONNX import: Slice with a step other than 1")
        end = None if int(end) >= 2**31 - 1 else int(end)
        out = S.slice_axis(out, axis=axis, begin=int(start), end=end)
    return out


def _gather(ctx, name, attrs, inputs):
    axis = int(attrs.get("axis", 0))
    indices = inputs[1]
    if isinstance(indices, S.Symbol):
        return S.take(ctx.arg(0), indices, axis=axis, name=name)
    indices = np.asarray(indices)
    if indices.ndim == 0:
        i = int(indices)
        picked = S.slice_axis(ctx.arg(0), axis=axis, begin=i, end=None if i == -1 else i + 1)
        return S.squeeze(picked, axis=axis, name=name)
    return S.take(ctx.arg(0), ctx.sym(indices.astype(np.float32), name + "_indices"), axis=axis)


def _cast(ctx, name, attrs, inputs):
    return S.Cast(ctx.arg(0), dtype=np.dtype(onnx_dtype(attrs["to"])).name, name=name)


def _split(ctx, name, attrs, inputs):
    axis = int(attrs.get("axis", 0))
    sizes = attrs.get("split")
    if ctx.opset >= 13 and len(inputs) > 1 and inputs[1] is not None:
        sizes = [int(s) for s in np.asarray(inputs[1]).ravel()]
    count = len(sizes) if sizes else int(attrs.get("num_outputs", 0)) or len(ctx.node_outputs)
    if not sizes or len(set(sizes)) == 1:
        parts = S.SliceChannel(ctx.arg(0), num_outputs=count, axis=axis, name=name)
        return [parts[i] for i in range(count)]
    bounds = np.cumsum([0, *sizes])
    return [
        S.slice_axis(ctx.arg(0), axis=axis, begin=int(b), end=int(e))
        for b, e in zip(bounds[:-1], bounds[1:])
    ]


def _tile(ctx, name, attrs, inputs):
    reps = tuple(int(r) for r in np.asarray(inputs[1]).ravel())
    return S.tile(ctx.arg(0), reps=reps, name=name)


def _expand(ctx, name, attrs, inputs):
    shape = ctx.static_shape(inputs[0], "Expand")
    target = tuple(int(d) for d in np.asarray(inputs[1]).ravel())
    out = ctx.arg(0)
    for _ in range(len(target) - len(shape)):
        out = S.expand_dims(out, axis=0)
    return S.broadcast_to(out, shape=np.broadcast_shapes(shape, target), name=name)


def _where(ctx, name, attrs, inputs):
    """MXNet's ``where`` takes equal shapes: the three are broadcast to ONNX's common shape."""
    shapes = [ctx.shape_of(v) for v in inputs]
    parts = [ctx.arg_value(v, i) for i, v in enumerate(inputs)]
    if all(s is not None and None not in s for s in shapes) and len(set(shapes)) > 1:
        common = np.broadcast_shapes(*shapes)
        for i, shape in enumerate(shapes):
            for _ in range(len(common) - max(1, len(shape))):
                parts[i] = S.expand_dims(parts[i], axis=0)
            if tuple(shape) != tuple(common):
                parts[i] = S.broadcast_to(parts[i], shape=common)
    return S.where(*parts, name=name)


def _argmax(fn):
    def convert(ctx, name, attrs, inputs):
        keep = bool(attrs.get("keepdims", 1))
        return getattr(S, fn)(ctx.arg(0), axis=int(attrs.get("axis", 0)), keepdims=keep, name=name)

    return convert


TENSOR_CONVERTERS = {
    **{op: _binary(op) for op in _BROADCAST},
    "Sum": _variadic("broadcast_add"),
    "Max": _variadic("broadcast_maximum"),
    "Min": _variadic("broadcast_minimum"),
    "Mean": _mean,
    "Identity": _unary("identity"),
    "Neg": _unary("negative"),
    "Abs": _unary("abs"),
    "Exp": _unary("exp"),
    "Log": _unary("log"),
    "Sqrt": _unary("sqrt"),
    "Reciprocal": _unary("reciprocal"),
    "Floor": _unary("floor"),
    "Ceil": _unary("ceil"),
    "Round": _unary("round"),
    "Sign": _unary("sign"),
    "Erf": _unary("erf"),
    "Sin": _unary("sin"),
    "Cos": _unary("cos"),
    "Tan": _unary("tan"),
    "Not": _unary("logical_not"),
    "ReduceMean": _reduce("mean", 18),
    "ReduceSum": _reduce("sum", 13),
    "ReduceMax": _reduce("max", 18),
    "ReduceMin": _reduce("min", 18),
    "ReduceProd": _reduce("prod", 18),
    "ReduceL1": _norm_reduce("l1", 18),
    "ReduceL2": _norm_reduce("l2", 18),
    "ReduceSumSquare": _norm_reduce("sum_square", 18),
    "Mod": _mod,
    "ArgMax": _argmax("argmax"),
    "ArgMin": _argmax("argmin"),
    "Clip": _clip,
    "Reshape": _reshape,
    "Flatten": _flatten,
    "Transpose": _transpose,
    "Concat": _concat,
    "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze,
    "Slice": _slice,
    "Gather": _gather,
    "Cast": _cast,
    "Split": _split,
    "Tile": _tile,
    "Expand": _expand,
    "Where": _where,
}
