"""ONNX operators computed at import when every input is known (``import_graph.py``): the
shape arithmetic exporters write (``Shape`` -> ``Gather`` -> ``Concat`` -> ``Reshape``),
``Constant`` nodes, and elementwise math on constants. numpy does the work, with ONNX's
semantics (numpy broadcasting, ``Reshape``'s 0 meaning "copy this dimension")."""

from __future__ import annotations

import numpy as np

_ONNX_DTYPES = {
    1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32,
    7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64,
}  # fmt: skip


def onnx_dtype(code: int):
    if code not in _ONNX_DTYPES:
        raise NotImplementedError(f"ONNX import: element type {code} is not supported")
    return _ONNX_DTYPES[code]


def axes_of(attrs: dict, inputs: list, position: int, opset: int, since: int):
    """An operator's ``axes``: the attribute before opset ``since``, the input at
    ``position`` from it (None when absent)."""
    if opset < since:
        return attrs.get("axes")
    if len(inputs) > position and inputs[position] is not None:
        return [int(a) for a in np.asarray(inputs[position]).ravel()]
    return None


def reshape_target(shape: tuple, target, allowzero: int = 0) -> tuple:
    target = [int(t) for t in np.asarray(target).ravel()]
    if not allowzero:
        target = [shape[i] if t == 0 else t for i, t in enumerate(target)]
    return tuple(target)


def _constant(attrs, inputs, opset):
    for key in ("value", "value_float", "value_int", "value_floats", "value_ints"):
        if key in attrs:
            value = attrs[key]
            if key in ("value_float", "value_floats"):
                return np.asarray(value, np.float32)
            if key in ("value_int", "value_ints"):
                return np.asarray(value, np.int64)
            return np.asarray(value)
    raise NotImplementedError(f"ONNX import: Constant with attributes {sorted(attrs)}")


def _slice(attrs, inputs, opset):
    x = inputs[0]
    if opset < 10:
        starts, ends = attrs["starts"], attrs["ends"]
        axes, steps = attrs.get("axes"), None
    else:
        starts, ends = inputs[1].ravel(), inputs[2].ravel()
        axes = inputs[3].ravel() if len(inputs) > 3 and inputs[3] is not None else None
        steps = inputs[4].ravel() if len(inputs) > 4 and inputs[4] is not None else None
    axes = list(range(len(starts))) if axes is None else list(axes)
    steps = [1] * len(starts) if steps is None else list(steps)
    index = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        index[int(a)] = slice(int(s), int(e), int(st))
    return x[tuple(index)]


def _squeeze(attrs, inputs, opset):
    axes = axes_of(attrs, inputs, 1, opset, 13)
    return np.squeeze(inputs[0], axis=None if axes is None else tuple(axes))


def _unsqueeze(attrs, inputs, opset):
    out, axes = inputs[0], axes_of(attrs, inputs, 1, opset, 13)
    rank = np.ndim(out) + len(axes)
    for a in sorted(a % rank for a in axes):
        out = np.expand_dims(out, a)
    return out


def _reshape(attrs, inputs, opset):
    target = attrs["shape"] if opset < 5 else inputs[1]
    target = reshape_target(np.shape(inputs[0]), target, attrs.get("allowzero", 0))
    return np.reshape(inputs[0], target)


def _range(attrs, inputs, opset):
    start, limit, delta = (np.asarray(v).item() for v in inputs)
    return np.arange(start, limit, delta, dtype=np.asarray(inputs[0]).dtype)


def _constant_of_shape(attrs, inputs, opset):
    value = np.asarray(attrs.get("value", np.zeros(1, np.float32))).ravel()
    return np.full(tuple(int(d) for d in np.asarray(inputs[0]).ravel()), value[0], value.dtype)


def _trilu(attrs, inputs, opset):
    k = int(np.asarray(inputs[1]).item()) if len(inputs) > 1 and inputs[1] is not None else 0
    return (np.triu if attrs.get("upper", 1) else np.tril)(inputs[0], k)


def _binary(fn):
    return lambda attrs, inputs, opset: fn(np.asarray(inputs[0]), np.asarray(inputs[1]))


def _div(a, b):
    if np.issubdtype(a.dtype, np.integer) and np.issubdtype(b.dtype, np.integer):
        return (np.trunc(a / b)).astype(np.result_type(a, b))  # C-style integer division
    return a / b


_FOLDERS = {
    "Constant": _constant,
    "Identity": lambda attrs, inputs, opset: inputs[0],
    "Shape": lambda attrs, inputs, opset: np.asarray(np.shape(inputs[0]), np.int64),
    "Size": lambda attrs, inputs, opset: np.asarray(np.size(inputs[0]), np.int64),
    "Gather": lambda attrs, inputs, opset: np.take(
        inputs[0], np.asarray(inputs[1]).astype(np.int64), axis=attrs.get("axis", 0)
    ),
    "Concat": lambda attrs, inputs, opset: np.concatenate(
        [np.atleast_1d(x) for x in inputs], axis=attrs["axis"]
    ),
    "Cast": lambda attrs, inputs, opset: np.asarray(inputs[0]).astype(onnx_dtype(attrs["to"])),
    "Slice": _slice,
    "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze,
    "Reshape": _reshape,
    "Flatten": lambda attrs, inputs, opset: np.reshape(
        inputs[0], (int(np.prod(np.shape(inputs[0])[: attrs.get("axis", 1)])), -1)
    ),
    "Transpose": lambda attrs, inputs, opset: np.transpose(inputs[0], attrs.get("perm")),
    "Range": _range,
    "ConstantOfShape": _constant_of_shape,
    "Expand": lambda attrs, inputs, opset: (
        np.asarray(inputs[0])
        * np.ones(tuple(int(d) for d in np.asarray(inputs[1]).ravel()), np.asarray(inputs[0]).dtype)
    ),
    "Tile": lambda attrs, inputs, opset: np.tile(inputs[0], np.asarray(inputs[1]).ravel()),
    "Trilu": _trilu,
    "Add": _binary(np.add),
    "Sub": _binary(np.subtract),
    "Mul": _binary(np.multiply),
    "Div": _binary(_div),
    "Equal": _binary(np.equal),
    "Less": _binary(np.less),
    "Greater": _binary(np.greater),
    "Min": lambda attrs, inputs, opset: np.minimum.reduce([np.asarray(x) for x in inputs]),
    "Max": lambda attrs, inputs, opset: np.maximum.reduce([np.asarray(x) for x in inputs]),
    "Neg": lambda attrs, inputs, opset: -np.asarray(inputs[0]),
    "Not": lambda attrs, inputs, opset: np.logical_not(inputs[0]),
    "Where": lambda attrs, inputs, opset: np.where(*[np.asarray(x) for x in inputs]),
    "Sqrt": lambda attrs, inputs, opset: np.sqrt(inputs[0]),
    "Floor": lambda attrs, inputs, opset: np.floor(inputs[0]),
    "Ceil": lambda attrs, inputs, opset: np.ceil(inputs[0]),
}
FOLDABLE = frozenset(_FOLDERS)


def fold(op_type: str, attrs: dict, inputs: list, opset: int):
    """The value of ``op_type`` on known ``inputs`` (one output). Shape values may hold a
    model's symbolic dimensions (an object array): moving them around works, computing
    with them raises NotImplementedError."""
    symbolic = any(np.asarray(v).dtype == object for v in inputs if v is not None)
    if symbolic and op_type == "Cast":
        return [np.asarray(inputs[0])]
    try:
        out = np.asarray(_FOLDERS[op_type](attrs, inputs, opset))
    except TypeError:
        if symbolic:
            raise NotImplementedError(
                f"ONNX import: {op_type} computes with a dimension the model leaves symbolic; "
                "give the model's inputs fixed dimensions"
            ) from None
        raise
    return [out]
