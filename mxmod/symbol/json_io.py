"""Symbol JSON in MXNet's exact text format (spec 10.2), and its checked reader."""

from __future__ import annotations

import os
from typing import Any

from ..base import MXNetError, MXNetFileError
from ..fileio import atomic_write
from ..ops import get_op
from . import json_schema, legacy_json, onednn_json
from .graph import Node, topo_order

MXNET_VERSION = 10901
_AMP_OPS = ("amp_cast", "amp_multicast")


# ------------------------------------------------------------------- writer
def _str(s: str) -> str:
    out = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return '"' + out.replace("\t", "\\t").replace("\r", "\\r") + '"'


def _obj(items: list[tuple[str, str]], indent: int) -> str:
    """An object whose values are already rendered; multi-line iff more than one key."""
    if len(items) <= 1:
        return "{" + "".join(f"{_str(k)}: {v}" for k, v in items) + "}"
    pad = "  " * (indent + 1)
    body = ", \n".join(f"{pad}{_str(k)}: {v}" for k, v in items)
    return "{\n" + body + "\n" + "  " * indent + "}"


def _arr(items: list[str], indent: int, force_multi: bool = False) -> str:
    if not force_multi and len(items) <= 10:
        return "[" + ", ".join(items) + "]"
    pad = "  " * (indent + 1)
    return "[\n" + ", \n".join(pad + i for i in items) + "\n" + "  " * indent + "]"


def _triple(t) -> str:
    return f"[{t[0]}, {t[1]}, {t[2]}]"


def graph_dict(sym: Any, remove_amp_cast: bool = True) -> dict:
    """The JSON structure as Python data (node order, versions, row pointers)."""
    heads = sym._outputs
    if remove_amp_cast:
        heads = _strip_amp(heads)
    order = topo_order(heads)
    index = {id(n): i for i, n in enumerate(order)}
    versions: dict[int, int] = {}
    nodes, row_ptr = [], [0]
    for node in order:
        inputs = []
        if not node.is_var:
            n_data = node.n_data_inputs()
            for k, (child, idx) in enumerate(node.inputs):
                version = 0
                if node.versions is not None and k < len(node.versions):
                    version = node.versions[k]  # as loaded (MXNet keeps them too)
                elif k >= n_data:
                    versions[id(child)] = versions.get(id(child), 0) + 1
                    version = versions[id(child)]
                inputs.append((index[id(child)], idx, version))
        entry = {
            "op": "null" if node.is_var else node.op.name,
            "name": node.name,
            "attrs": dict(node.attrs),
            "inputs": inputs,
        }
        if not node.is_var and node.subgraphs:
            entry["subgraphs"] = [graph_dict(sub, remove_amp_cast) for sub in node.subgraphs]
        nodes.append(entry)
        row_ptr.append(row_ptr[-1] + node.num_outputs())
    return {
        "nodes": nodes,
        "arg_nodes": [i for i, n in enumerate(order) if n.is_var],
        "node_row_ptr": row_ptr,
        "heads": [(index[id(n)], i, 0) for n, i in heads],
    }


def to_json(sym: Any, remove_amp_cast: bool = True) -> str:
    """``sym.tojson()``: MXNet's exact text of the graph of ``sym`` (a Symbol)."""
    g = graph_dict(sym, remove_amp_cast)
    top = _graph_items(g, 0)
    top.append(("attrs", _obj([("mxnet_version", f'["int", {MXNET_VERSION}]')], 1)))
    return _obj_multi(top, 0)


def _graph_items(g: dict, d: int) -> list:
    """A graph's rendered fields; ``d``: the indent of its object (a subgraph's is 4 deeper
    than its node's)."""
    rendered = []
    for n in g["nodes"]:
        items = [("op", _str(n["op"])), ("name", _str(n["name"]))]
        if n["attrs"]:
            attrs = sorted(n["attrs"].items(), key=lambda kv: kv[0].encode())
            items.append(("attrs", _obj([(k, _str(v)) for k, v in attrs], d + 3)))
        items.append(("inputs", _arr([_triple(t) for t in n["inputs"]], d + 3)))
        if n.get("subgraphs"):
            subs = [_obj_multi(_graph_items(sub, d + 4), d + 4) for sub in n["subgraphs"]]
            items.append(("subgraphs", _arr(subs, d + 3, force_multi=True)))
        rendered.append(_obj_multi(items, d + 2))
    return [
        ("nodes", _arr(rendered, d + 1, force_multi=True)),
        ("arg_nodes", _arr([str(i) for i in g["arg_nodes"]], d + 1)),
        ("node_row_ptr", _arr([str(i) for i in g["node_row_ptr"]], d + 1)),
        ("heads", _arr([_triple(t) for t in g["heads"]], d + 1)),
    ]


def _obj_multi(items, indent):
    pad = "  " * (indent + 1)
    return (
        "{\n" + ", \n".join(f"{pad}{_str(k)}: {v}" for k, v in items) + "\n" + "  " * indent + "}"
    )


def _strip_amp(heads):
    """The graph without ``amp_cast``/``amp_multicast`` nodes (MXNet's RemoveAmpCast): each
    consumer reads the cast's input instead, while a cast that is a head stays (MXNet's pass
    rewires inputs only: a converted net still returns float32); nodes are copied, the given
    graph is kept."""
    order = topo_order(heads)
    if not any(n.op is not None and n.op.name in _AMP_OPS for n in order):
        return heads
    new: dict[int, Node] = {}

    def entry(e):
        node, idx = e
        while node.op is not None and node.op.name in _AMP_OPS:
            node, idx = node.inputs[0 if node.op.name == "amp_cast" else idx]
        return (new[id(node)], idx)

    for node in order:
        if node.is_var:
            new[id(node)] = node
        else:
            n = Node(node.op, node.name, node.attrs, [])
            n._parsed = node._parsed
            n.versions = node.versions
            n.subgraphs = node.subgraphs
            new[id(node)] = n
    for node in order:
        if not node.is_var:
            new[id(node)].inputs = [entry(e) for e in node.inputs]
    return [(new[id(n)], i) for n, i in heads]


def save(sym: Any, fname: str, remove_amp_cast: bool = True) -> None:
    """Write ``tojson()`` atomically (temp file, fsync, rename)."""
    atomic_write(fname, to_json(sym, remove_amp_cast).encode("utf-8"))


# ------------------------------------------------------------------- reader
def heads_from_json(text: str, source: str = "JSON string", make_symbol=None) -> list:
    """The output entries of the graph in MXNet symbol JSON (current or legacy format):
    what ``mx.sym.load_json`` wraps in a Symbol.

    Refuses what MXNet's reader refuses (``json_schema``) and, beyond MXNet, graphs that
    would only fail later: no heads, cycles, variables with inputs, operators with more
    inputs than they take, output indices the node does not have, auxiliary states that
    are not variables, variables whose ``__dtype__`` is not a number. Nodes out of
    topological order load, as in MXNet (which sorts them). ``control_deps`` and
    ``backward_source_id`` are accepted and have no effect (mxmod runs the graph in
    data-flow order, which control dependencies cannot change).

    Raises:
        TypeError: ``text`` is not a str.
        MXNetFileError: the text is not a valid symbol file; the message names ``source``,
            the field (``nodes[3].inputs[0][0]``) and what was expected.
        NotImplementedError: the graph uses an operator or feature mxmod does not support.
    """
    if not isinstance(text, str):
        raise TypeError(f"load_json needs the JSON text as a str, got {type(text).__name__}")
    data = json_schema.parse(text, source)
    json_schema.check_graph(data, source)
    data = onednn_json.inline_fused(data, source)  # a graph saved after oneDNN partitioning
    return _heads(data, _version(data), source, make_symbol)


def _heads(data: dict, version: int, source: str, make_symbol) -> list:
    """The heads of a checked graph structure; ``make_symbol(heads)`` wraps the loop bodies
    of control-flow nodes (``subgraphs``)."""
    raws = data["nodes"]
    bodies = {}
    for i, raw in enumerate(raws):
        if raw.get("subgraphs"):
            if make_symbol is None:
                raise NotImplementedError(
                    f"{source}: nodes[{i}] ({raw['op']} {raw['name']!r}) holds subgraphs: "
                    f"load the file with mx.sym.load or mx.sym.load_json"
                )
            where = f"{source} nodes[{i}].subgraphs"
            bodies[i] = [
                make_symbol(_heads(sub, version, where, make_symbol)) for sub in raw["subgraphs"]
            ]
    nodes = [_node(raw, version, source, i, bodies.get(i)) for i, raw in enumerate(raws)]
    json_schema.check_arg_nodes(data, [n.is_var for n in nodes], source)
    for i, (raw, node) in enumerate(zip(raws, nodes)):
        _link(node, raw, nodes, version, source, f"nodes[{i}]")
    heads = [(nodes[h[0]], h[1]) for h in data["heads"]]
    if not heads:
        raise json_schema.fail(
            source, "heads", "empty (the graph has no outputs)", "at least one [node, output, 0]"
        )
    _check_acyclic(heads, nodes, source)
    index = {id(n): i for i, n in enumerate(nodes)}
    for node in topo_order(heads):
        if not node.is_var:
            _complete_inputs(node, version, source, f"nodes[{index[id(node)]}]")
    for k, (node, out) in enumerate(heads):
        _check_output(node, out, source, f"heads[{k}]")
    return heads


def _version(data: dict) -> int:
    v = (data.get("attrs") or {}).get("mxnet_version")
    return int(v[1]) if v is not None else 800  # a missing version means 0.8.0


def _node(raw: dict, version: int, source: str, i: int, subgraphs=None) -> Node:
    """A node without its inputs: attributes upgraded and parsed, operator resolved."""
    attrs, aside = legacy_json.node_attrs(raw), {}
    if version < MXNET_VERSION:  # hidden keys are set aside while parsing (legacy_json)
        attrs, aside = legacy_json.set_aside(attrs)
    if raw["op"] == "null":
        _check_int_flag(attrs, "__storage_type__", source, i, "'0' (default), '1' (row_sparse)")
        if attrs.get("__storage_type__", "0") not in ("0", "-1", "1", "2"):
            raise NotImplementedError(
                f"{source}: nodes[{i}] ({raw['name']!r}) has __storage_type__="
                f"{attrs['__storage_type__']}: mxmod knows 0 (default), 1 (row_sparse) and "
                f"2 (csr)"
            )
        _check_int_flag(attrs, "__dtype__", source, i, "'0' (float32), '2' (float16)")
        var = Node(None, raw["name"], attrs)
        legacy_json.put_back(var, aside)
        return var
    try:
        op = get_op(raw["op"])
    except MXNetError as e:
        raise MXNetFileError(
            f"{source}: nodes[{i}].op: {e}",
            source,
            f"nodes[{i}].op",
            "an operator mxmod implements",
        ) from None
    if version < 905 and op.name in ("argmax", "argmin") and attrs.get("axis") == "-1":
        attrs.pop("axis")
    node = Node(op, raw["name"], attrs)
    node.subgraphs = list(subgraphs or [])
    try:  # attributes parse, and the inputs/outputs they imply are defined
        node.parsed()
        node.input_slot_names()
        node.num_outputs()
    except (MXNetError, ValueError, TypeError) as e:
        raise json_schema.fail(
            source, f"nodes[{i}].attrs", str(e), f"attributes {op.name} accepts"
        ) from None
    except NotImplementedError as e:
        raise NotImplementedError(
            f"{source}: nodes[{i}] ({op.name} {raw['name']!r}): {e}"
        ) from None
    return node


def _check_int_flag(attrs: dict, key: str, source: str, i: int, examples: str) -> None:
    """A variable's ``__dtype__``/``__storage_type__`` is an integer flag (MXNet loads any
    text and fails at bind, e.g. ``invalid literal for int()``)."""
    flag = attrs.get(key)
    if flag is None:
        return
    try:
        int(flag)
    except (TypeError, ValueError):
        raise json_schema.fail(
            source,
            f"nodes[{i}].attrs.{key}",
            f"{flag!r} is not a {key.strip('_').replace('_', ' ')} flag",
            f"an integer flag such as {examples}",
        ) from None


def _link(node: Node, raw: dict, nodes: list, version: int, source: str, where: str) -> None:
    entries = raw["inputs"]
    if node.is_var:
        if entries:
            raise json_schema.fail(
                source,
                f"{where}.inputs",
                f"variable {node.name!r} has {len(entries)} inputs",
                "[] for a 'null' node",
            )
        return
    node.inputs = [(nodes[e[0]], e[1]) for e in entries]
    node.versions = [e[2] if len(e) > 2 else 0 for e in entries]
    if version < MXNET_VERSION:  # hidden keys go where MXNet's upgrade puts them
        aside = legacy_json.set_aside(legacy_json.node_attrs(raw))[1]
        legacy_json.put_back(node, aside, source, where)


def _check_acyclic(heads: list, nodes: list, source: str) -> None:
    """Iterative three-colour DFS: MXNet loads cyclic graphs (and fails later); we refuse."""
    index = {id(n): i for i, n in enumerate(nodes)}
    state: dict[int, int] = {}  # 1 on the stack, 2 done
    for head, _ in heads:
        if state.get(id(head)):
            continue
        stack = [(head, 0)]
        state[id(head)] = 1
        while stack:
            node, k = stack.pop()
            if k < len(node.inputs):
                stack.append((node, k + 1))
                child = node.inputs[k][0]
                mark = state.get(id(child))
                if mark == 1:
                    raise json_schema.fail(
                        source,
                        f"nodes[{index[id(node)]}].inputs[{k}]",
                        f"{node.name!r} depends on itself through {child.name!r} (a cycle)",
                        "an acyclic graph",
                    )
                if mark is None:
                    state[id(child)] = 1
                    stack.append((child, 0))
            else:
                state[id(node)] = 2


def _check_output(node: Node, out: int, source: str, where: str) -> None:
    n = node.num_outputs()
    if out >= n:
        raise json_schema.fail(
            source,
            where,
            f"output {out} of {node.name!r}, which has {n} output(s)",
            f"an output index below {n}",
        )


def _complete_inputs(node: Node, version: int, source: str, where: str) -> None:
    """Check the inputs of a reachable operator node; old files (< 0.9) did not store aux
    inputs: create them as MXNet's upgrader does."""
    slots = node.input_slot_names()
    if len(node.inputs) > len(slots):
        raise json_schema.fail(
            source,
            f"{where}.inputs",
            f"{node.op.name} {node.name!r} has {len(node.inputs)} inputs",
            f"{len(slots)} ({', '.join(slots)})",
        )
    if len(node.inputs) < len(slots):
        if version >= 900:
            raise json_schema.fail(
                source,
                f"{where}.inputs",
                f"{node.op.name} {node.name!r} has {len(node.inputs)} inputs",
                f"{len(slots)} ({', '.join(slots)})",
            )
        for slot in slots[len(node.inputs) :]:
            node.inputs.append((Node(None, f"{node.name}_{slot}", dict(node.attrs)), 0))
            node.versions.append(0)
    n_data = node.n_data_inputs()
    for k, (child, out) in enumerate(node.inputs):
        _check_output(child, out, source, f"{where}.inputs[{k}]")
        if k >= n_data and not child.is_var:
            raise json_schema.fail(
                source,
                f"{where}.inputs[{k}]",
                f"auxiliary state "
                f"{slots[k]!r} of {node.name!r} is the output of operator "
                f"{child.name!r}",
                "a variable node",
            )
    if version < 904:
        for slot, (child, _) in zip(slots, node.inputs):
            hook = node.op.input_attrs.get(slot)
            if hook and child.is_var:
                child.attrs.update(hook)


def heads_from_file(fname: Any, make_symbol=None) -> list:
    """The output entries of the graph in a ``-symbol.json`` file (``mx.sym.load``).

    Raises:
        TypeError: ``fname`` is not a path.
        MXNetFileError: the file is missing, unreadable, not UTF-8 text, or not a valid
            symbol file (see :func:`heads_from_json`).
    """
    if not isinstance(fname, (str, os.PathLike)):
        raise TypeError(f"fname required to be a string, got {type(fname).__name__}")
    fname = os.fspath(fname)
    if not os.path.isfile(fname):
        what = "is a folder, not a file" if os.path.isdir(fname) else "does not exist"
        raise MXNetFileError(f"symbol file {fname!r} {what}", repr(fname), "path")
    try:
        with open(fname, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise MXNetFileError(
            f"symbol file {fname!r} cannot be read ({e.strerror or e})", repr(fname), "open"
        ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise MXNetFileError(
            f"{fname!r} is not a text file; expected an MXNet symbol JSON "
            f"file (byte {e.start} is not UTF-8)",
            repr(fname),
            f"offset {e.start}",
            "UTF-8 JSON text",
        ) from None
    return heads_from_json(text, source=repr(fname), make_symbol=make_symbol)
