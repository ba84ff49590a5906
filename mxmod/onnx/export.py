"""``mx.onnx.export_model``: an MXNet symbol and its parameters -> an ONNX file."""

from __future__ import annotations

import logging
from typing import Any, Optional

import numpy as np

from ..symbol.graph import Node, topo_order
from .builder import GraphBuilder, NodeCtx
from .registry import check_opset, translation
from .shapes import GraphIO, Inferred, graph_inputs, infer, load_params, load_symbol

# the translation families register themselves on import
from . import ops_activation, ops_elemwise, ops_index, ops_nn, ops_reduce, ops_rnn  # noqa: F401
from . import ops_shape  # noqa: F401

_LOG = logging.getLogger(__name__)
_INSTALL = "pip install 'mxmod[onnx]'"


def require_onnx() -> Any:
    """The ``onnx`` package, or an ImportError naming the extra that installs it."""
    try:
        import onnx
    except ImportError as e:
        raise ImportError(
            f"mx.onnx needs the 'onnx' package (and 'onnxruntime' to run the result): {_INSTALL}"
        ) from e
    return onnx


def _unsupported_nodes(order: list, opset: int) -> list:
    return [n for n in order if not n.is_var and translation(n.op.name, opset) is None]


def check_supported(order: list, opset: int) -> None:
    """Raise NotImplementedError naming every operator (and a node of it) without an ONNX
    translation, before anything is built or written."""
    missing = _unsupported_nodes(order, opset)
    if not missing:
        return
    seen: dict = {}
    for n in missing:
        seen.setdefault(n.op.name, n.name)
    listed = ", ".join(f"{op} (node {name!r})" for op, name in seen.items())
    raise NotImplementedError(
        f"ONNX export: no ONNX translation in mxmod for operator(s) {listed} at opset {opset}; "
        "nothing was written (mx.onnx.get_operator_support() lists the supported operators)"
    )


class _Names:
    """Tensor names of every graph entry: variables by name, operator outputs as MXNet's
    exporter names them (the node name; ``name<k>`` for multi-output nodes)."""

    def __init__(self, b: GraphBuilder):
        self.b = b
        self.entry: dict = {}

    def var(self, node: Node) -> str:
        self.entry[(id(node), 0)] = self.b.claim(node.name)
        return node.name

    def outputs(self, node: Node, index: int) -> list:
        base = node.name if node.name not in self.b.taken else f"idx_{index}_{node.name}"
        count = len(node.op.output_names(node.parsed()))
        names = [base] if count == 1 else [f"{base}{k}" for k in range(count)]
        for k, name in enumerate(names):
            self.entry[(id(node), k)] = name
        return names

    def of(self, consumer: Node, child: Node, k: int) -> str:
        name = self.entry.get((id(child), k))
        if name is None:
            raise NotImplementedError(
                f"ONNX export: {consumer.op.name if consumer.op else 'output'} "
                f"{consumer.name!r} reads hidden output {k} of {child.name!r}"
            )
        return name


def _value_info(b: GraphBuilder, name: str, dtype: np.dtype, dims: list):
    return b.helper.make_tensor_value_info(name, b.onnx_type(dtype), dims)


def build_graph(onnx: Any, sym, params: dict, io: GraphIO, inferred: Inferred, opset: int,
                dynamic: bool, verbose: bool):  # fmt: skip
    """The ONNX ModelProto of ``sym`` with ``params`` as initializers."""
    b = GraphBuilder(onnx, opset)
    names = _Names(b)
    inputs = []
    for name, dtype, dims in zip(io.names, io.dtypes, io.declared):
        inputs.append(_value_info(b, name, dtype, dims))
    b.dynamic_dims = [(name, k, s[k]) for name, s, dims in zip(io.names, io.shapes, io.declared)
                      for k, d in enumerate(dims) if isinstance(d, str)]  # fmt: skip
    input_set = set(io.names)
    for index, node in enumerate(inferred.order):
        if node.is_var:
            names.var(node)
            if node.name not in input_set and node.name in params:
                b.initializer(node.name, params[node.name])
            continue
        if verbose:
            _LOG.info("Converting idx: %d, op: %s, name: %s", index, node.op.name, node.name)
        outs = names.outputs(node, index)
        ins = [names.of(node, c, k) for c, k in node.inputs]
        n = NodeCtx(
            op=node.op.name,
            name=node.name,
            a=node.parsed(),
            inputs=ins,
            params=[params.get(c.name) if c.is_var else None for c, _ in node.inputs],
            in_shapes=[inferred.shape(c, k) for c, k in node.inputs],
            out_shapes=[inferred.shape(node, k) for k in range(len(outs))],
            in_dtypes=[inferred.dtype(c, k) for c, k in node.inputs],
            out_dtypes=[inferred.dtype(node, k) for k in range(len(outs))],
            outputs=outs,
            dynamic_batch=io.dynamic_batch,
        )
        translation(node.op.name, opset)(b, n)
    outputs = _graph_outputs(b, names, sym, inferred, dynamic)
    # parameters no translation reads (a fix_gamma BatchNorm's gamma) stay out of the file
    read = {i for node in b.nodes for i in node.input} | {o.name for o in outputs}
    kept = [t for t in b.initializers if t.name in read]
    graph = b.helper.make_graph(b.nodes, "mxmod_exported_model", inputs, outputs, kept)
    model = b.helper.make_model(
        graph,
        producer_name="mxmod",
        opset_imports=[b.helper.make_opsetid("", opset)],
        ir_version=8,  # understood by every onnxruntime since 1.10
    )
    return model


def _graph_outputs(b: GraphBuilder, names: _Names, sym, inferred: Inferred, dynamic: bool):
    outputs, used = [], set()
    for node, k in sym._outputs:
        tensor = names.of(node, node, k) if not node.is_var else names.entry[(id(node), 0)]
        shape = inferred.shape(node, k)
        if node.is_var or tensor in used:  # a graph output needs its own tensor
            tensor = b.op("Identity", [tensor], b.fresh(f"{tensor}_output"))
        used.add(tensor)
        dims = [None] * len(shape) if dynamic else list(shape)
        outputs.append(_value_info(b, tensor, inferred.dtype(node, k), dims))
    return outputs


def export_model(
    sym,
    params,
    in_shapes=None,
    in_types=np.float32,
    onnx_file_path="model.onnx",
    verbose=False,
    dynamic=False,
    dynamic_input_shapes=None,
    run_shape_inference=False,
    input_type=None,
    input_shape=None,
    model_specific_logics=None,
    cheat_sheet=None,
    opset_version: Optional[int] = None,
):
    """Export an MXNet model to an ONNX file, as MXNet 1.9.1's ``mx.onnx.export_model``.

    Args:
      sym: a Symbol or the path of its ``-symbol.json``.
      params: the path of a ``.params`` file, a dict of all parameters (args and aux), or
        ``[arg_params, aux_params]``.
      in_shapes: one shape per graph input (the symbol's inputs not in ``params``, loss
        heads' labels excepted), e.g. ``[(1, 3, 224, 224)]``.
      in_types: one numpy dtype for every input, or a list of them.
      onnx_file_path: where the model is written; returned.
      verbose: log each node as it is converted.
      dynamic: make dimensions dynamic. Without ``dynamic_input_shapes`` the batch (first)
        dim of every input is (MXNet made every dim dynamic; mxmod's translations keep the
        others as exported so the graph stays valid).
      dynamic_input_shapes: per input, its shape with None for each dynamic dim.
      run_shape_inference: run ONNX shape inference on the result (a failure is logged
        and the model kept, as MXNet).
      input_type, input_shape: MXNet's old names of ``in_types`` and ``in_shapes``.
      model_specific_logics, cheat_sheet: MXNet's model-specific conversions (not in mxmod).
      opset_version: mxmod's addition: the ONNX opset written, 12..17 (default 13, MXNet's
        newest translation set).

    Returns:
      onnx_file_path.

    Raises:
      ImportError: ``onnx`` is not installed (``pip install 'mxmod[onnx]'``).
      NotImplementedError: an operator (or an option of one) has no translation; raised
        before the file is written, naming the operator and the node.
      ValueError: in_shapes/in_types do not match the graph's inputs.
    """
    onnx = require_onnx()
    if model_specific_logics is not None or cheat_sheet is not None:
        raise NotImplementedError(
            "export_model: model_specific_logics/cheat_sheet (MXNet's GluonNLP-specific "
            "conversions) are not supported by mxmod; export the plain symbol"
        )
    in_types = in_types if input_type is None else input_type
    in_shapes = in_shapes if input_shape is None else input_shape
    opset = check_opset(opset_version)
    sym, params = load_symbol(sym), load_params(params)
    check_supported(topo_order(sym._outputs), opset)
    io = graph_inputs(sym, params, in_shapes, in_types, dynamic, dynamic_input_shapes)
    inferred = infer(sym, params, io)
    model = build_graph(onnx, sym, params, io, inferred, opset, dynamic, verbose)
    onnx.checker.check_model(model)
    if run_shape_inference:
        try:
            model = onnx.shape_inference.infer_shapes(model)
        except Exception as e:  # MXNet keeps the model when ONNX's inference fails
            _LOG.warning("ONNX shape inference failed (%s); the model is kept without it", e)
    with open(onnx_file_path, "wb") as f:
        f.write(model.SerializeToString())
    _LOG.info("Input shape of the model %s", in_shapes)
    _LOG.info("Exported ONNX file %s saved to disk", onnx_file_path)
    return onnx_file_path
