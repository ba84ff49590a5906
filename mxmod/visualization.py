"""Network pictures and summaries, as ``mxnet.visualization`` (``mx.viz``).

* :func:`print_summary` prints MXNet 1.9.1's Keras-style table, character for
  character, including its parameter-count rules (and their quirks: a
  FullyConnected layer counts only the first non-batch dimension of its input).
* :func:`plot_network` returns a ``graphviz.Digraph`` with MXNet's node labels,
  shapes and colours. Building the graph needs only the ``graphviz`` Python
  package; rendering it (``dot.render()``, ``dot.pipe()``) needs Graphviz's
  ``dot`` program, and graphviz raises ``ExecutableNotFound`` naming it when
  it is missing.
"""

from __future__ import annotations

import copy
import json
import re
import warnings
from typing import Any

from .symbol import Symbol

__all__ = ["print_summary", "plot_network"]

# Fill colours MXNet uses, by role.
_COLORS = {
    "input": "#8dd3c7",
    "conv_fc": "#fb8072",
    "activation": "#ffffb3",
    "batchnorm": "#bebada",
    "pooling": "#80b1d3",
    "shape": "#fdb462",
    "softmax": "#b3de69",
    "other": "#fccde5",
}
_WEIGHT_SUFFIXES = (
    "_weight",
    "_bias",
    "_beta",
    "_gamma",
    "_moving_var",
    "_moving_mean",
    "_running_var",
    "_running_mean",
)


def _numbers(text: str) -> list:
    """The digit groups of a shape attribute such as ``'(3, 3)'``."""
    return re.findall(r"\d+", text)


def _internal_shapes(symbol: Symbol, shape: dict) -> dict:
    internals = symbol.get_internals()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the ValueError below says what to do
        _, out_shapes, _ = internals.infer_shape(**shape)
    if out_shapes is None:
        raise ValueError(
            "Input shape is incomplete: give the shape of every data input, "
            "e.g. shape={'data': (1, 3, 224, 224)}"
        )
    return dict(zip(internals.list_outputs(), out_shapes))


def _layer_params(node: dict, pre_filter: int, out_shape: Any) -> int:
    """Parameter count MXNet's print_summary reports for one operator node."""
    op, attrs = node["op"], node.get("attrs", {})
    no_bias = attrs.get("no_bias") == "True"
    if op == "Convolution":
        count = pre_filter * int(attrs["num_filter"]) // int(attrs.get("num_group", "1"))
        for k in _numbers(attrs["kernel"]):
            count *= int(k)
        return count if no_bias else count + int(attrs["num_filter"])
    if op == "FullyConnected":
        return (pre_filter + (0 if no_bias else 1)) * int(attrs["num_hidden"])
    if op == "BatchNorm":
        return 2 * int(out_shape[1]) if out_shape is not None else 0
    if op == "Embedding":
        return int(attrs["input_dim"]) * int(attrs["output_dim"])
    return 0


def print_summary(
    symbol: Symbol,
    shape: dict | None = None,
    line_length: int = 120,
    positions: list = (0.44, 0.64, 0.74, 1.0),
) -> None:
    """Print a layer table of ``symbol``, as ``mx.viz.print_summary``.

    Args:
        symbol: the network.
        shape: input shapes (name -> tuple); with them the table shows each
            layer's output shape (without the batch axis) and parameter counts.
        line_length: width of the table.
        positions: column stops, as fractions of ``line_length`` (when the last
            is at most 1) or absolute character positions.

    Raises:
        TypeError: ``symbol`` is not a Symbol.
        ValueError: ``shape`` does not determine every shape.
    """
    if not isinstance(symbol, Symbol):
        raise TypeError("symbol must be Symbol")
    shape_dict = _internal_shapes(symbol, shape) if shape is not None else None
    conf = json.loads(symbol.tojson())
    nodes = conf["nodes"]
    heads = set(conf["heads"][0])  # MXNet's quirk: the numbers of the first head entry
    positions = list(positions)
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]

    def row(fields):
        line = ""
        for stop, field in zip(positions, fields):
            line = (line + str(field))[:stop]
            line += " " * (stop - len(line))
        print(line)

    def output_key(node):
        return node["name"] + "_output" if node["op"] != "null" else node["name"]

    def layer(node, out_shape):
        previous, pre_filter = [], 0
        if node["op"] != "null":
            for entry in node["inputs"]:
                src = nodes[entry[0]]
                if src["op"] != "null" or entry[0] in heads:
                    previous.append(src["name"])
                    if shape_dict is not None and output_key(src) in shape_dict:
                        pre_filter += int(shape_dict[output_key(src)][1:][0])
        full = shape_dict.get(node["name"] + "_output") if shape_dict is not None else None
        params = _layer_params(node, pre_filter, full)
        row(
            [
                f"{node['name']}({node['op']})",
                "x".join(str(x) for x in out_shape),
                params,
                previous[0] if previous else "",
            ]
        )
        for name in previous[1:]:
            row(["", "", "", name])
        return params

    print("_" * line_length)
    row(["Layer (type)", "Output Shape", "Param #", "Previous Layer"])
    print("=" * line_length)
    total = 0
    for i, node in enumerate(nodes):
        if node["op"] == "null" and i > 0:
            continue
        if node["op"] != "null" or i in heads:
            out_shape = []
            if shape_dict is not None and output_key(node) in shape_dict:
                out_shape = shape_dict[output_key(node)][1:]
            total += layer(node, out_shape)
        print(("=" if i == len(nodes) - 1 else "_") * line_length)
    print(f"Total params: {total}")
    print("_" * line_length)


def _node_style(node: dict) -> tuple:
    """(label, fill colour) of an operator node, as MXNet draws it."""
    op, name, attrs = node["op"], node["name"], node.get("attrs", {})
    if op == "Convolution":
        stride = "x".join(_numbers(attrs["stride"])) if "stride" in attrs else "1"
        kernel = "x".join(_numbers(attrs["kernel"]))
        return f"Convolution\n{kernel}/{stride}, {attrs['num_filter']}", _COLORS["conv_fc"]
    if op == "FullyConnected":
        return f"FullyConnected\n{attrs['num_hidden']}", _COLORS["conv_fc"]
    if op == "BatchNorm":
        return name, _COLORS["batchnorm"]
    if op == "Activation":
        return f"Activation\n{attrs['act_type']}", _COLORS["activation"]
    if op == "LeakyReLU":
        return f"LeakyReLU\n{attrs.get('act_type', 'Leaky')}", _COLORS["activation"]
    if op == "Pooling":
        kernel = "x".join(_numbers(attrs["kernel"])) if "kernel" in attrs else "[]"
        stride = "x".join(_numbers(attrs["stride"])) if "stride" in attrs else "1"
        return f"Pooling\n{attrs['pool_type']}, {kernel}/{stride}", _COLORS["pooling"]
    if op in ("Concat", "Flatten", "Reshape"):
        return name, _COLORS["shape"]
    if op == "Softmax":
        return name, _COLORS["softmax"]
    if op == "Custom":
        return attrs["op_type"], _COLORS["other"]
    return name, _COLORS["other"]


def _edge_label(src: dict, shape_dict: dict | None, type_dict: dict | None) -> str:
    key = src["name"]
    if src["op"] != "null":
        key += "_output"
        if "num_outputs" in src.get("attrs", {}):
            key += str(int(src["attrs"]["num_outputs"]) - 1)
    label = ""
    if shape_dict is not None:
        label = "x".join(str(x) for x in shape_dict[key][1:])
    if type_dict is not None:
        label += "(" + type_dict[key].__name__ + ")"
    return label


def plot_network(
    symbol: Symbol,
    title: str = "plot",
    save_format: str = "pdf",
    shape: dict | None = None,
    dtype: dict | None = None,
    node_attrs: dict | None = None,
    hide_weights: bool = True,
) -> Any:
    """Draw ``symbol`` as a ``graphviz.Digraph``, as ``mx.viz.plot_network``.

    Args:
        symbol: the network.
        title: the graph's name (and default file name when rendering).
        save_format: the render format, e.g. ``'pdf'``, ``'png'``, ``'svg'``.
        shape: input shapes; edges are then labelled with shapes (no batch axis).
        dtype: input dtypes; edges are then labelled with the type name.
        node_attrs: Graphviz node attributes overriding MXNet's defaults.
        hide_weights: hide weight/bias/gamma/beta/moving-statistics inputs.

    Returns:
        The ``graphviz.Digraph``; ``.render()``/``.view()`` need the ``dot`` program.

    Raises:
        ImportError: the ``graphviz`` Python package is missing.
        TypeError: ``symbol`` is not a Symbol.
        ValueError: ``shape``/``dtype`` do not determine every shape/type.
    """
    try:
        from graphviz import Digraph
    except ImportError as err:
        raise ImportError(
            "Draw network requires graphviz library: pip install graphviz "
            "(and Graphviz's dot program to render)"
        ) from err
    if not isinstance(symbol, Symbol):
        raise TypeError("symbol must be a Symbol")
    shape_dict = _internal_shapes(symbol, shape) if shape is not None else None
    type_dict = None
    if dtype is not None:
        internals = symbol.get_internals()
        _, out_types, _ = internals.infer_type(**dtype)
        if out_types is None:
            raise ValueError("Input type is incomplete: give the dtype of every data input")
        type_dict = dict(zip(internals.list_outputs(), out_types))
    nodes = json.loads(symbol.tojson())["nodes"]
    names = [n["name"] for n in nodes]
    if len(names) != len(set(names)):
        repeated = sorted({n for n in names if names.count(n) > 1})
        warnings.warn(
            "There are multiple variables with the same name in your graph, this may "
            "result in cyclic graph. Repeated names: " + ",".join(repeated),
            RuntimeWarning,
            stacklevel=2,
        )
    base_attr = {
        "shape": "box",
        "fixedsize": "true",
        "width": "1.3",
        "height": "0.8034",
        "style": "filled",
    }
    base_attr.update(node_attrs or {})
    dot = Digraph(name=title, format=save_format)
    hidden = set()
    for node in nodes:
        attr = copy.deepcopy(base_attr)
        if node["op"] == "null":
            if node["name"].endswith(_WEIGHT_SUFFIXES):
                if hide_weights:
                    hidden.add(node["name"])
                continue
            attr["shape"] = "oval"
            label, attr["fillcolor"] = node["name"], _COLORS["input"]
        else:
            label, attr["fillcolor"] = _node_style(node)
        dot.node(name=node["name"], label=label, **attr)
    for node in nodes:
        if node["op"] == "null":
            continue
        inputs = node["inputs"][:1] if node["op"] == "_contrib_BilinearResize2D" else node["inputs"]
        for entry in inputs:
            src = nodes[entry[0]]
            if src["name"] in hidden:
                continue
            dot.edge(
                tail_name=node["name"],
                head_name=src["name"],
                dir="back",
                arrowtail="open",
                label=_edge_label(src, shape_dict, type_dict),
            )
    return dot
