"""What ``export_model`` is given, made uniform: the symbol, the parameters, the graph
inputs with their shapes and types (static or dynamic), and every entry's inferred shape
and dtype."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ..ndarray import NDArray
from ..ndarray.io import load as nd_load
from ..symbol import Symbol
from ..symbol.creation import load as sym_load
from ..symbol.graph import Node, topo_order
from ..symbol.infer import propagate_shapes, propagate_types

# loss heads' label inputs are not graph inputs of the exported (inference) model
_LABEL_SLOTS = ("label",)


def load_symbol(sym: Any) -> Symbol:
    if isinstance(sym, (str, os.PathLike)):
        return sym_load(sym)
    if isinstance(sym, Symbol):
        return sym
    raise ValueError(
        f"export_model: sym must be a Symbol or the path of a '-symbol.json' file, got "
        f"{type(sym).__name__}"
    )


def _numpy(value: Any) -> np.ndarray:
    return value.asnumpy() if isinstance(value, NDArray) else np.asarray(value)


def load_params(params: Any) -> dict[str, np.ndarray]:
    """A ``.params`` path, one dict (args and aux), or ``[arg_params, aux_params]`` ->
    name -> numpy array (``arg:``/``aux:`` prefixes removed)."""
    if isinstance(params, (str, os.PathLike)):
        params = nd_load(os.fspath(params))
        if not isinstance(params, dict):
            raise ValueError(f"export_model: {params!r} holds a list of arrays, not named params")
    elif isinstance(params, (list, tuple)) and len(params) == 2:
        params = {**params[0], **params[1]}
    if not isinstance(params, dict):
        raise ValueError(
            "export_model: params must be a '.params' path, a dict of all parameters or "
            f"[arg_params, aux_params], got {type(params).__name__}"
        )
    out = {}
    for key, value in params.items():
        name = key.split(":", 1)[1] if key.startswith(("arg:", "aux:")) else key
        out[name] = _numpy(value)
    return out


def _labels(order: list[Node], params: dict) -> set[str]:
    """Variables used only as loss heads' label inputs (and MXNet's ``<last node>_label``)."""
    slots: dict[str, set] = {}
    for node in order:
        if node.is_var:
            continue
        names = node.op.input_names(node.parsed())
        for (child, _), slot in zip(node.inputs, names + [None] * len(node.inputs)):
            if child.is_var:
                slots.setdefault(child.name, set()).add(slot in _LABEL_SLOTS)
    labels = {name for name, kinds in slots.items() if kinds == {True}}
    ops = [n for n in order if not n.is_var]
    if ops:
        labels.add(ops[-1].name + "_label")
    return labels - set(params)


@dataclass
class GraphIO:
    """The exported graph's inputs: names, static shapes, declared dims (int or a symbolic
    name), numpy dtypes, and whether the batch (first) dim is dynamic."""

    names: list
    shapes: list
    declared: list
    dtypes: list
    dynamic_batch: bool


def graph_inputs(sym: Symbol, params: dict, in_shapes, in_types, dynamic: bool,
                 dynamic_input_shapes) -> GraphIO:  # fmt: skip
    order = topo_order(sym._outputs)
    labels = _labels(order, params)
    names = [n.name for n in order if n.is_var and n.name not in params and n.name not in labels]
    if in_shapes is None:
        raise ValueError(
            f"export_model: in_shapes is required: one shape per graph input {names} "
            "(the symbol's inputs that are not in params), e.g. in_shapes=[(1, 3, 224, 224)]"
        )
    shapes = [tuple(int(d) for d in s) for s in in_shapes]
    if len(shapes) != len(names):
        raise ValueError(
            f"export_model: in_shapes has {len(shapes)} shape(s) but the graph has "
            f"{len(names)} input(s) not in params: {names}; give one shape per input (a name "
            "listed here that is a parameter means params lacks it)"
        )
    types = in_types if isinstance(in_types, (list, tuple)) else [in_types] * len(names)
    if len(types) != len(names):
        raise ValueError(
            f"export_model: in_types has {len(types)} type(s) for {len(names)} input(s) {names}"
        )
    dtypes = [np.dtype(t) for t in types]
    declared: list = [list(s) for s in shapes]
    if dynamic_input_shapes is not None and not dynamic:
        raise ValueError("export_model: dynamic_input_shapes needs dynamic=True")
    if dynamic and dynamic_input_shapes is None:
        # mxmod: the batch (first) dim becomes dynamic; MXNet made every dim dynamic
        dynamic_input_shapes = [(None,) + s[1:] for s in shapes]
    if dynamic:
        if len(dynamic_input_shapes) != len(shapes):
            raise ValueError(
                f"export_model: dynamic_input_shapes has {len(dynamic_input_shapes)} "
                f"entries for {len(shapes)} input(s) {names}"
            )
        for i, (name, dyn, s) in enumerate(zip(names, dynamic_input_shapes, shapes)):
            if len(dyn) != len(s):
                raise ValueError(
                    f"export_model: dynamic_input_shapes[{i}] {tuple(dyn)} has {len(dyn)} dims "
                    f"but input {name!r} has shape {s}"
                )
            declared[i] = [
                d if d is not None else ("batch" if k == 0 else f"{name}_dim{k}")
                for k, d in enumerate(dyn)
            ]
    dynamic_batch = bool(declared) and bool(declared[0]) and isinstance(declared[0][0], str)
    return GraphIO(names, shapes, declared, dtypes, dynamic_batch)


@dataclass
class Inferred:
    """Every graph entry's shape and dtype at the export shapes, keyed ``(id(node), k)``."""

    order: list
    shapes: dict
    dtypes: dict

    def shape(self, node: Node, k: int) -> Optional[tuple]:
        return self.shapes.get((id(node), k))

    def dtype(self, node: Node, k: int) -> Optional[np.dtype]:
        d = self.dtypes.get((id(node), k))
        return None if d is None else np.dtype(d)


def infer(sym: Symbol, params: dict, io: GraphIO) -> Inferred:
    given_shapes = dict(zip(io.names, io.shapes))
    given_types = {n: d.name for n, d in zip(io.names, io.dtypes)}
    used = set(sym.list_inputs())
    for name, value in params.items():
        if name in used:
            given_shapes[name] = tuple(value.shape)
            given_types[name] = value.dtype.name
    order, shapes = propagate_shapes(sym, given_shapes)
    _, dtypes = propagate_types(sym, given_types)
    return Inferred(order, shapes, dtypes)
