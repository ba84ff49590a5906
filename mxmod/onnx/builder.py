"""The ONNX graph under construction, and the view of one MXNet node a translation gets.

Translations never import ``onnx``: they call :class:`GraphBuilder` methods, which hold
the ``onnx`` module the driver imported (so ``mxmod.onnx`` imports without it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

# opset ranges that change an operator's signature (axes/split moved from attribute to input)
_AXES_AS_INPUT = 13  # Squeeze, Unsqueeze, ReduceSum, Split(split)
_REDUCE_AXES_AS_INPUT = 18  # ReduceMean/Max/Min/Prod/L1/L2
INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min


class GraphBuilder:
    """Collects ONNX nodes and initializers with unique tensor names.

    Args:
      onnx: the imported ``onnx`` module.
      opset: the target default-domain opset.
    """

    def __init__(self, onnx: Any, opset: int):
        self.onnx = onnx
        self.helper = onnx.helper
        self.opset = opset
        self.nodes: list = []
        self.initializers: list = []
        self.taken: set[str] = set()
        # (input name, axis, size at export) of every dynamic input dim
        self.dynamic_dims: list[tuple[str, int, int]] = []
        self._dims: dict = {}
        self._count = 0

    # -- names and constants ------------------------------------------------------------
    def claim(self, name: str) -> str:
        """Reserve ``name`` (a graph input, initializer or MXNet output name)."""
        self.taken.add(name)
        return name

    def fresh(self, base: str) -> str:
        """A tensor name not used yet, derived from ``base``."""
        while True:
            self._count += 1
            name = f"{base}__{self._count}"
            if name not in self.taken:
                return self.claim(name)

    def initializer(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(self.helper.make_tensor(
            name, self.helper.np_dtype_to_tensor_dtype(value.dtype), value.shape,
            np.ascontiguousarray(value).tobytes(), raw=True))  # fmt: skip
        return self.claim(name)

    def const(self, value: Any, dtype: Any = np.int64, base: str = "const") -> str:
        return self.initializer(self.fresh(base), np.asarray(value, dtype=dtype))

    def onnx_type(self, dtype: Any) -> int:
        return self.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))

    # -- nodes --------------------------------------------------------------------------
    def op(self, op_type: str, inputs: list, outputs: Any = None, base: str = "", **attrs):
        """Add one node; returns its output name (or list of names when ``outputs`` is a
        list or an int count). ``outputs`` None: one fresh name."""
        if outputs is None:
            outs = [self.fresh(base or op_type.lower())]
        elif isinstance(outputs, int):
            outs = [self.fresh(base or op_type.lower()) for _ in range(outputs)]
        elif isinstance(outputs, str):
            outs = [self.claim(outputs)]
        else:
            outs = [self.claim(o) for o in outputs]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        name = self.fresh(f"{base or outs[0]}_{op_type}")
        self.nodes.append(self.helper.make_node(op_type, list(inputs), outs, name=name, **attrs))
        return outs if isinstance(outputs, (list, int)) else outs[0]

    # -- operators whose signature depends on the opset ----------------------------------
    def unsqueeze(self, x: str, axes: list, out: Any = None) -> str:
        if self.opset >= _AXES_AS_INPUT:
            return self.op("Unsqueeze", [x, self.const(axes)], out)
        return self.op("Unsqueeze", [x], out, axes=list(axes))

    def squeeze(self, x: str, axes: list, out: Any = None) -> str:
        if self.opset >= _AXES_AS_INPUT:
            return self.op("Squeeze", [x, self.const(axes)], out)
        return self.op("Squeeze", [x], out, axes=list(axes))

    def split(self, x: str, axis: int, count: int, outs: Any) -> list:
        """Equal split into ``count`` parts (valid from opset 12 to 17 without sizes)."""
        return self.op("Split", [x], outs if outs is not None else count, axis=axis)

    def reduce(self, kind: str, x: str, axes: Optional[list], keepdims: bool, out=None):
        """``Reduce<kind>`` over ``axes`` (None: all axes)."""
        op = f"Reduce{kind}"
        as_input = self.opset >= (_AXES_AS_INPUT if kind == "Sum" else _REDUCE_AXES_AS_INPUT)
        if axes is None:
            return self.op(op, [x], out, keepdims=int(keepdims))
        if as_input:
            return self.op(op, [x, self.const(axes)], out, keepdims=int(keepdims))
        return self.op(op, [x], out, axes=list(axes), keepdims=int(keepdims))

    def reshape(self, x: str, shape: list, out: Any = None) -> str:
        return self.op("Reshape", [x, self.const(shape)], out)

    def dynamic_dim(self, size: int) -> Optional[str]:
        """A 1-element int64 tensor: the first dynamic input dim that had ``size`` at export
        (None if there is none)."""
        for name, axis, static in self.dynamic_dims:
            if static == size:
                key = (name, axis)
                if key not in self._dims:
                    shape = self.op("Shape", [name], base=f"{name}_shape")
                    self._dims[key] = self.op(
                        "Slice", [shape, self.const([axis]), self.const([axis + 1])],
                        base=f"{name}_dim{axis}")  # fmt: skip
                return self._dims[key]
        return None

    def shape_tensor(self, shape: tuple, follow: set) -> str:
        """An int64 shape tensor: ``shape`` with the dims in ``follow`` taken at run time from
        the dynamic input dim of the same export size (static where there is none)."""
        parts = [self.dynamic_dim(d) if i in follow else None for i, d in enumerate(shape)]
        if all(p is None for p in parts):
            return self.const(list(shape))
        parts = [p if p is not None else self.const([d]) for p, d in zip(parts, shape)]
        return self.op("Concat", parts, axis=0, base="shape")


@dataclass
class NodeCtx:
    """One MXNet operator node as its translation sees it.

    Attributes:
      op: canonical MXNet operator name; name: node name; a: parsed attributes.
      inputs: ONNX tensor names of the data inputs then aux states.
      params: per input, the parameter's numpy value (None for computed tensors).
      in_shapes/out_shapes, in_dtypes/out_dtypes: inferred at the export shapes.
      outputs: the tensor names the translation must write (MXNet's output names).
      dynamic_batch: the batch (first) dimension of the graph inputs is dynamic.
    """

    op: str
    name: str
    a: Any
    inputs: list
    params: list
    in_shapes: list
    out_shapes: list
    in_dtypes: list
    out_dtypes: list
    outputs: list
    dynamic_batch: bool = False
    extra: dict = field(default_factory=dict)

    def unsupported(self, what: str) -> NotImplementedError:
        return NotImplementedError(
            f"ONNX export: {self.op} node {self.name!r}: {what} has no ONNX translation "
            "in mxmod (see mx.onnx.get_operator_support())"
        )

    @property
    def out(self) -> str:
        return self.outputs[0]

    @property
    def x(self) -> str:
        return self.inputs[0]

    @property
    def ndim(self) -> int:
        return len(self.in_shapes[0])

    def axis(self, axis: int, ndim: Optional[int] = None) -> int:
        """``axis`` made non-negative for an input of ``ndim`` dims (default: input 0)."""
        n = self.ndim if ndim is None else ndim
        return axis + n if axis < 0 else axis
