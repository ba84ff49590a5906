"""Symbol JSON in MXNet's exact text format (spec 10.2), and its tolerant reader."""
from __future__ import annotations

import json
import os

from ..base import MXNetError
from ..ops import get_op
from .graph import Node, topo_order
from .naming import HIDDEN_KEYS
from .symbol import Symbol

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


def graph_dict(sym: Symbol, remove_amp_cast: bool = True) -> dict:
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
        nodes.append({"op": "null" if node.is_var else node.op.name, "name": node.name,
                      "attrs": dict(node.attrs), "inputs": inputs})
        row_ptr.append(row_ptr[-1] + node.num_outputs())
    return {"nodes": nodes,
            "arg_nodes": [i for i, n in enumerate(order) if n.is_var],
            "node_row_ptr": row_ptr,
            "heads": [(index[id(n)], i, 0) for n, i in heads]}


def to_json(sym: Symbol, remove_amp_cast: bool = True) -> str:
    g = graph_dict(sym, remove_amp_cast)
    rendered = []
    for n in g["nodes"]:
        items = [("op", _str(n["op"])), ("name", _str(n["name"]))]
        if n["attrs"]:
            attrs = sorted(n["attrs"].items(), key=lambda kv: kv[0].encode())
            items.append(("attrs", _obj([(k, _str(v)) for k, v in attrs], 3)))
        items.append(("inputs", _arr([_triple(t) for t in n["inputs"]], 3)))
        rendered.append(_obj_multi(items, 2))
    top = [("nodes", _arr(rendered, 1, force_multi=True)),
           ("arg_nodes", _arr([str(i) for i in g["arg_nodes"]], 1)),
           ("node_row_ptr", _arr([str(i) for i in g["node_row_ptr"]], 1)),
           ("heads", _arr([_triple(t) for t in g["heads"]], 1)),
           ("attrs", _obj([("mxnet_version", f'["int", {MXNET_VERSION}]')], 1))]
    return _obj_multi(top, 0)


def _obj_multi(items, indent):
    pad = "  " * (indent + 1)
    return "{\n" + ", \n".join(f"{pad}{_str(k)}: {v}" for k, v in items) + "\n" + "  " * indent + "}"


def _strip_amp(heads):
    order = topo_order(heads)
    if not any(n.op is not None and n.op.name in _AMP_OPS for n in order):
        return heads
    raise NotImplementedError("remove_amp_cast: graphs with amp_cast nodes are not supported yet")


def save(sym: Symbol, fname: str, remove_amp_cast: bool = True) -> None:
    """Write ``tojson()`` atomically (temp file, fsync, rename)."""
    from ..fileio import atomic_write
    atomic_write(fname, to_json(sym, remove_amp_cast).encode("utf-8"))


# ------------------------------------------------------------------- reader
def load_json(text: str, source: str = "JSON string") -> Symbol:
    """Build a Symbol from MXNet symbol JSON (current or legacy format)."""
    try:
        data = json.loads(text)
    except ValueError as e:
        raise MXNetError(f"{source} is not valid JSON ({e}); expected an MXNet symbol file") from None
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list) or "heads" not in data:
        raise MXNetError(f"{source} is JSON but not an MXNet symbol: it needs 'nodes' and 'heads'")
    version = _version(data)
    built: list[Node] = []
    for i, raw in enumerate(data["nodes"]):
        try:
            built.append(_node(raw, built, version))
        except (KeyError, IndexError, TypeError) as e:
            raise MXNetError(f"{source}: node {i} is malformed ({type(e).__name__}: {e})") from None
    try:
        heads = [(built[h[0]], h[1] if len(h) > 1 else 0) for h in data["heads"]]
    except (IndexError, TypeError):
        raise MXNetError(f"{source}: 'heads' refers to nodes that do not exist") from None
    for node in topo_order(heads):
        if not node.is_var:
            _complete_inputs(node, version)
    return Symbol(heads)


def _version(data: dict) -> int:
    attrs = data.get("attrs") or {}
    v = attrs.get("mxnet_version")
    if isinstance(v, list) and len(v) == 2:
        return int(v[1])
    return 800


def _node(raw: dict, built: list, version: int) -> Node:
    attrs: dict[str, str] = {}
    for key in ("param", "attr", "attrs"):
        if isinstance(raw.get(key), dict):
            attrs.update({k: str(v) for k, v in raw[key].items()})
    inputs = [(built[e[0]], e[1] if len(e) > 1 else 0) for e in raw.get("inputs", [])]
    op_name = raw["op"]
    if version < MXNET_VERSION:
        attrs = {(f"__{k}__" if k in HIDDEN_KEYS else k): v for k, v in attrs.items()}
    if op_name == "null":
        return Node(None, raw["name"], attrs)
    op = get_op(op_name)
    moves = {}
    if version < MXNET_VERSION:
        for key in list(attrs):
            for hk in HIDDEN_KEYS:
                if key.endswith("_" + hk) and not key.startswith("__"):
                    moves[(key[: -len(hk) - 1], hk)] = attrs.pop(key)
    if version < 905 and op.name in ("argmax", "argmin") and attrs.get("axis") == "-1":
        attrs.pop("axis")
    node = Node(op, raw["name"], attrs, inputs)
    node.versions = [int(e[2]) if len(e) > 2 else 0 for e in raw.get("inputs", [])]
    slots = node.input_slot_names() if moves else []
    for (slot, hk), value in moves.items():
        if slot in slots and slots.index(slot) < len(inputs):
            child = inputs[slots.index(slot)][0]
            if child.is_var:
                child.attrs[f"__{hk}__"] = value
    return node


def _complete_inputs(node: Node, version: int) -> None:
    """Old files (< 0.9) did not store aux inputs; create them as MXNet's upgrader does."""
    slots = node.input_slot_names()
    if len(node.inputs) < len(slots):
        if version >= 900:
            raise MXNetError(f"{node.op.name} {node.name!r} has {len(node.inputs)} inputs but "
                             f"needs {len(slots)} ({', '.join(slots)})")
        for slot in slots[len(node.inputs):]:
            node.inputs.append((Node(None, f"{node.name}_{slot}", dict(node.attrs)), 0))
    if version < 904:
        for slot, (child, _) in zip(slots, node.inputs):
            hook = node.op.input_attrs.get(slot)
            if hook and child.is_var:
                child.attrs.update(hook)


def load(fname: str) -> Symbol:
    """``mx.sym.load``: read a ``-symbol.json`` file."""
    if not os.path.exists(fname):
        raise MXNetError(f"symbol file {fname!r} does not exist")
    with open(fname, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise MXNetError(f"{fname!r} is not a text file; expected an MXNet symbol JSON file") from None
    return load_json(text, source=repr(fname))
