"""Importing ONNX models as MXNet symbols (``mx.contrib.onnx.import_model``, MXNet 1.9.1's
onnx2mx).

An ONNX graph becomes one ``Symbol`` plus ``arg_params``/``aux_params``: graph inputs that
are not initializers are data variables under their ONNX names; initializers a layer reads
as weights become variables of the same names with their values in the params (a
BatchNormalization's mean and variance are aux states). Everything computable before
the data arrives is computed at import (``Constant`` nodes, initializers read as shapes,
axes or pads, and shape arithmetic: ``Shape`` of a tensor whose shape the graph's input
shapes fix, ``Gather``/``Concat``/``Unsqueeze``/``Cast``... on such values), so graphs
exported with shape computations import as MXNet's static operators. Operators are
translated by ``import_ops.py``; one without a translation raises NotImplementedError
naming it.

Differences from MXNet's importer: initializers need not be listed among the graph inputs
(ONNX IR 4 and later), and shape computations fold instead of failing.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .. import ndarray as nd
from .. import symbol as sym_mod
from ..base import MXNetError
from .export import require_onnx
from .import_fold import FOLDABLE, fold
from .import_ops import CONVERTERS


class ImportContext:
    """The graph being imported: each ONNX tensor name maps to a Symbol or a numpy array
    (a value known at import)."""

    def __init__(self, onnx, graph, opset: int):
        self.onnx = onnx
        self.opset = opset
        self.values: dict = {}
        self.params: dict = {}  # variable name -> numpy value
        self._variables: dict = {}
        self.input_shapes: dict = {}
        self.node_inputs: list = []  # the node being translated: its input names,
        self.node_values: list = []  # their values,
        self.node_outputs: list = []  # and its output names
        self._shapes: dict = {}  # id(Symbol) -> (Symbol, shape_of's answer)
        for tensor in graph.initializer:
            if not tensor.name.strip():
                raise MXNetError("ONNX import: an initializer has no name")
            self.values[tensor.name] = onnx.numpy_helper.to_array(tensor)
        for inp in graph.input:
            if inp.name in self.values:
                continue
            dims = [d.dim_value if d.dim_value > 0 else None for d in _dims(inp)]
            self.input_shapes[inp.name] = tuple(dims)
            self.values[inp.name] = sym_mod.Variable(inp.name)

    # -- what translations use

    def arg(self, i: int) -> "sym_mod.Symbol":
        """Input ``i`` of the node being translated, as a Symbol."""
        return self.sym(self.node_values[i], self.node_inputs[i])

    def arg_value(self, value: Any, i: int) -> "sym_mod.Symbol":
        """``value`` (input ``i``, possibly reshaped) as a Symbol named after input ``i``."""
        return self.sym(value, self.node_inputs[i])

    def sym(self, value: Any, name: str) -> "sym_mod.Symbol":
        """``value`` as a Symbol: a known array becomes a variable ``name`` (its value in
        the params), as MXNet's importer makes every initializer a variable."""
        if isinstance(value, sym_mod.Symbol):
            return value
        arr = np.asarray(value)
        if arr.dtype == np.float64:
            arr = arr.astype(np.float32)
        if arr.ndim == 0:  # MXNet shapes have no 0-d arrays: one element
            arr = arr.reshape(1)
        base, k = name, 0
        while name in self.params and self.params[name].shape != arr.shape:
            k += 1  # the same initializer read in another shape (PRelu's slope...)
            name = f"{base}_{k}"
        if name not in self._variables:
            self.params[name] = arr
            self._variables[name] = sym_mod.Variable(name, shape=arr.shape, dtype=arr.dtype)
        return self._variables[name]

    def shape_of(self, value: Any) -> Optional[tuple]:
        """The shape of a Symbol as far as the graph input shapes fix it (None for a
        dimension the model leaves symbolic), or of an array; None if even the rank is
        unknown."""
        if not isinstance(value, sym_mod.Symbol):
            return tuple(np.shape(value))
        cached = self._shapes.get(id(value))
        if cached is not None and cached[0] is value:
            return cached[1]
        shape = self._infer_shape(value)
        self._shapes[id(value)] = (value, shape)  # the Symbol kept: its id stays its own
        return shape

    def _infer_shape(self, value: "sym_mod.Symbol") -> Optional[tuple]:
        given = {k: tuple(d or 0 for d in v) for k, v in self.input_shapes.items()}
        given.update({k: v.shape for k, v in self.params.items()})
        wanted = set(value.list_arguments())
        try:
            _, out, _ = value.infer_shape_partial(**{k: v for k, v in given.items() if k in wanted})
        except MXNetError:
            return None
        if not out or out[0] is None or len(out[0]) == 0:
            return None
        return tuple(d if d else None for d in out[0])

    def static_shape(self, value: Any, what: str, known_from: int = 0) -> tuple:
        """``shape_of(value)``, its dimensions from ``known_from`` on required known."""
        shape = self.shape_of(value)
        if shape is None or None in shape[known_from:]:
            raise NotImplementedError(
                f"ONNX import: {what} needs the static shape of its input; give the model's "
                "inputs fixed dimensions"
            )
        return shape

    def rank(self, value: Any, what: str) -> int:
        return len(self.static_shape(value, what, known_from=len(self.shape_of(value) or ())))


class SymbolicDim:
    """A dimension the model leaves symbolic (``Shape`` of a tensor at ``axis``), carried
    through shape arithmetic until a ``Reshape`` copies it (MXNet's 0) or it is needed as a
    number (NotImplementedError)."""

    def __init__(self, axis: int):
        self.axis = axis

    def __repr__(self) -> str:
        return f"SymbolicDim({self.axis})"


def _dims(value_info):
    return value_info.type.tensor_type.shape.dim


def _attrs(onnx, node) -> dict:
    out = {}
    for a in node.attribute:
        value = onnx.helper.get_attribute_value(a)
        if isinstance(value, bytes):
            value = value.decode("utf8")
        elif isinstance(value, list):
            value = [v.decode("utf8") if isinstance(v, bytes) else v for v in value]
        if a.type == onnx.AttributeProto.TENSOR:
            value = onnx.numpy_helper.to_array(value)
        out[a.name] = value
    return out


def _opset(onnx, model) -> int:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return int(entry.version)
    return int(onnx.defs.onnx_opset_version())


def from_onnx(model) -> tuple:
    """``(symbol, arg_params, aux_params)`` of a loaded ``onnx.ModelProto``."""
    onnx = require_onnx()
    graph = model.graph
    ctx = ImportContext(onnx, graph, _opset(onnx, model))
    for node in graph.node:
        attrs = _attrs(onnx, node)
        inputs = [ctx.values[i] if i else None for i in node.input]
        name = node.name.strip() or None
        known = all(not isinstance(v, sym_mod.Symbol) for v in inputs if v is not None)
        if node.op_type == "Shape" and isinstance(inputs[0], sym_mod.Symbol):
            outs = [_shape_value(ctx, inputs[0], attrs)]
        elif node.op_type == "Size" and isinstance(inputs[0], sym_mod.Symbol):
            outs = [np.asarray(np.prod(ctx.static_shape(inputs[0], "Size")), np.int64)]
        elif node.op_type in FOLDABLE and (known or node.op_type == "Constant"):
            outs = fold(node.op_type, attrs, inputs, ctx.opset)
        elif node.op_type in CONVERTERS:
            ctx.node_inputs, ctx.node_values = list(node.input), inputs
            ctx.node_outputs = list(node.output)
            outs = CONVERTERS[node.op_type](ctx, name or node.output[0], attrs, inputs)
        else:
            raise NotImplementedError(
                f"ONNX import: operator {node.op_type} (node {node.name or node.output[0]!r}) "
                "has no translation to MXNet"
            )
        outs = outs if isinstance(outs, (list, tuple)) else [outs]
        for out_name, value in zip(node.output, outs):
            if out_name:
                ctx.values[out_name] = value
    heads = [ctx.sym(ctx.values[o.name], o.name) for o in graph.output]
    net = heads[0] if len(heads) == 1 else sym_mod.Group(heads)
    args = set(net.list_arguments())
    aux = set(net.list_auxiliary_states())
    arg_params = {k: nd.array(v, dtype=v.dtype) for k, v in ctx.params.items() if k in args}
    aux_params = {k: nd.array(v, dtype=v.dtype) for k, v in ctx.params.items() if k in aux}
    return net, arg_params, aux_params


def _shape_value(ctx, value, attrs) -> np.ndarray:
    """``Shape`` of a Symbol: int64 where the input shapes fix it, ``SymbolicDim`` where
    the model leaves a dimension open (an object array then); ``start``/``end`` (opset 15)."""
    shape = ctx.shape_of(value)
    if shape is None:
        raise NotImplementedError("ONNX import: Shape of a tensor of unknown rank")
    dims = [SymbolicDim(i) if d is None else d for i, d in enumerate(shape)]
    dims = dims[attrs.get("start", 0) : attrs.get("end", len(dims))]
    if any(isinstance(d, SymbolicDim) for d in dims):
        return np.array(dims, dtype=object)
    return np.asarray(dims, np.int64)


def import_model(model_file) -> tuple:
    """``(sym, arg_params, aux_params)`` of the ONNX model at ``model_file``, ready for
    ``Module.bind`` + ``set_params`` (data names: the model's non-initializer inputs)."""
    onnx = require_onnx()
    return from_onnx(onnx.load(model_file))


def get_model_metadata(model_file) -> dict:
    """The model's data inputs (name, shape, ONNX element type) and outputs (name, shape),
    as MXNet's ``get_model_metadata``: ``{'input_tensor_data': [...],
    'output_tensor_data': [...]}``; a symbolic dimension reads 0."""
    graph = require_onnx().load(model_file).graph
    params = {t.name for t in graph.initializer}
    inputs = [
        (i.name, tuple(d.dim_value for d in _dims(i)), i.type.tensor_type.elem_type)
        for i in graph.input
        if i.name not in params
    ]
    outputs = [(o.name, tuple(d.dim_value for d in _dims(o))) for o in graph.output]
    return {"input_tensor_data": inputs, "output_tensor_data": outputs}
