"""What MXNet's symbol-JSON reader accepts, checked before a graph is built.

MXNet 1.9.1 reads symbol files with dmlc's typed JSON reader (nnvm ``LoadJSON``): every
field has one type, unknown fields are errors, node ids and output indices are unsigned
32-bit integers (so strings, null, floats, booleans and negative ids are refused), entries
have 2 or 3 numbers, attribute values are strings, and only the escapes ``\\" \\\\ \\n \\t
\\r`` exist. These checks reproduce those refusals (tested against MXNet's verdicts on
mutated files, ``tests/fixtures/gen_symbol_verdicts.py``) and bound what a file can make
the reader do: nesting depth and node count. Every failure is a
:class:`~mxmod.base.MXNetFileError` naming the file, the field path and what was expected.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from ..base import MXNetFileError

MAX_DEPTH = 64  # MXNet's own files nest 5 deep (plus 4 per level of subgraphs)
MAX_NODES = 1_000_000
_U32 = 2**32
_GRAPH_KEYS = {"nodes", "arg_nodes", "node_row_ptr", "heads", "attrs"}
_NODE_KEYS = {
    "op",
    "name",
    "inputs",
    "attrs",
    "attr",
    "param",
    "control_deps",
    "backward_source_id",
    "subgraphs",
}
_STRING_RE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_ESCAPE_RE = re.compile(r"\\(.)", re.S)
_NOT_BRACKET_RE = re.compile(r"[^\[\]{}]+")
_DEPTH_DELTA = {"[": 1, "{": 1, "]": -1, "}": -1}
# dmlc "any" types nnvm registers, for the graph-level attrs: name -> value check.
_ANY_TYPES = {
    "int": lambda v: _is_i32(v),
    "size_t": lambda v: _is_int(v) and 0 <= v < 2**64,
    "str": lambda v: isinstance(v, str),
    "list_int": lambda v: isinstance(v, list) and all(_is_i32(x) for x in v),
    "list_str": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
    "list_shape": lambda v: (
        isinstance(v, list) and all(isinstance(s, list) and all(_is_int(x) for x in s) for s in v)
    ),
}


def _is_i32(v: Any) -> bool:
    return _is_int(v) and -(2**31) <= v < 2**31


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def fail(source: str, where: str, problem: str, expected: str = "") -> MXNetFileError:
    """The error of a symbol file MXNet would refuse."""
    exp = f" (expected {expected})" if expected else ""
    return MXNetFileError(
        f"{source}: {where}: {problem}{exp}; not a valid MXNet symbol file", source, where, expected
    )


def parse(text: str, source: str) -> Any:
    """JSON text -> Python data, refusing what dmlc's reader refuses; trailing text after
    the top-level object is ignored, as MXNet does."""
    if "\x00" in text:  # MXNet reads the text as a C string: it would end here
        raise fail(
            source,
            f"character {text.index(chr(0))}",
            "NUL character in the text",
            "JSON text without NUL characters",
        )
    brackets = _NOT_BRACKET_RE.sub("", _STRING_RE.sub("", text))
    depth = max(itertools.accumulate(_DEPTH_DELTA[c] for c in brackets), default=0)
    if depth > MAX_DEPTH:
        raise fail(
            source, "structure", f"nested {depth} levels deep", f"at most {MAX_DEPTH} levels"
        )
    for esc in _ESCAPE_RE.finditer(text) if "\\" in text else ():  # only inside strings
        if esc.group(1) not in '"\\ntr':
            line = text.count("\n", 0, esc.start()) + 1
            raise fail(
                source,
                f"line {line}",
                f"string escape '\\{esc.group(1)}' in "
                f"{text[max(0, esc.start() - 20) : esc.start() + 20]!r}",
                'only \\" \\\\ \\n \\t \\r escapes',
            )
    try:
        data, _ = json.JSONDecoder(strict=False).raw_decode(text.lstrip(" \t\r\n"))
    except ValueError as e:
        raise MXNetFileError(
            f"{source} is not valid JSON ({e}); expected an MXNet symbol file",
            source,
            f"line {getattr(e, 'lineno', '?')}",
            "MXNet symbol JSON",
        ) from None
    except RecursionError:  # unreachable after the depth check; kept as a last guard
        raise fail(
            source, "structure", "nested too deeply", f"at most {MAX_DEPTH} levels"
        ) from None
    return data


def _entry(value: Any, source: str, where: str, n_nodes: int) -> tuple[int, int, int]:
    if not isinstance(value, list) or len(value) not in (2, 3):
        raise fail(
            source,
            where,
            f"{_short(value)} is not an entry",
            "[node_id, output_index] or [node_id, output_index, version]",
        )
    for k, v in enumerate(value):
        limit = (-_U32 // 2, _U32) if k == 2 else (0, _U32)
        if not _is_int(v) or not limit[0] <= v < limit[1]:
            raise fail(
                source,
                f"{where}[{k}]",
                f"{_short(v)} is not an unsigned 32-bit int",
                "a non-negative integer",
            )
    if value[0] >= n_nodes:
        raise fail(
            source,
            f"{where}[0]",
            f"node id {value[0]} does not exist",
            f"an id below the node count {n_nodes}",
        )
    return value[0], value[1], (value[2] if len(value) == 3 else 0)


def _short(v: Any) -> str:
    text = json.dumps(v) if not isinstance(v, str) else repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _str_map(value: Any, source: str, where: str) -> dict:
    if not isinstance(value, dict):
        raise fail(source, where, f"{_short(value)} is not an object", "a map of strings")
    for k, v in value.items():
        if not isinstance(v, str):
            raise fail(
                source,
                f"{where}[{k!r}]",
                f"value {_short(v)} is not a string",
                "attribute values stored as strings, e.g. \"64\"",
            )
    return value


def _id_list(value: Any, source: str, where: str, n_nodes: int) -> list[int]:
    if not isinstance(value, list):
        raise fail(source, where, f"{_short(value)} is not a list", "a list of node ids")
    for k, v in enumerate(value):
        if not _is_int(v) or not 0 <= v < _U32:
            raise fail(
                source, f"{where}[{k}]", f"{_short(v)} is not a node id", "a non-negative integer"
            )
        if v >= n_nodes:
            raise fail(
                source,
                f"{where}[{k}]",
                f"node id {v} does not exist",
                f"an id below the node count {n_nodes}",
            )
    return value


def check_graph(data: Any, source: str, where: str = "") -> None:
    """Check a parsed graph object field by field (types, ids in range, known keys)."""
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list) or "heads" not in data:
        raise MXNetFileError(
            f"{source} is JSON but not an MXNet symbol: it needs 'nodes' and 'heads'",
            source,
            where or "top level",
            "an object with nodes, arg_nodes and heads",
        )
    unknown = sorted(set(data) - _GRAPH_KEYS)
    if unknown:
        raise fail(source, f"{where}{unknown[0]}", "unknown field", f"only {sorted(_GRAPH_KEYS)}")
    nodes = data["nodes"]
    if len(nodes) > MAX_NODES:
        raise fail(source, f"{where}nodes", f"{len(nodes)} nodes", f"at most {MAX_NODES}")
    for i, raw in enumerate(nodes):
        _check_node(raw, source, f"{where}nodes[{i}]", len(nodes))
    heads = data["heads"]
    if not isinstance(heads, list):
        raise fail(
            source,
            f"{where}heads",
            f"{_short(heads)} is not a list",
            "a list of [node_id, output_index, version] entries",
        )
    for k, e in enumerate(heads):
        _entry(e, source, f"{where}heads[{k}]", len(nodes))
    if "node_row_ptr" in data:
        ptr = data["node_row_ptr"]
        if not isinstance(ptr, list) or not all(_is_int(v) and 0 <= v < _U32 for v in ptr):
            raise fail(
                source,
                f"{where}node_row_ptr",
                f"{_short(ptr)} is not a list of counts",
                "non-negative integers",
            )
    if "attrs" in data:
        _check_graph_attrs(data["attrs"], source, f"{where}attrs")


def check_arg_nodes(data: dict, is_var: list[bool], source: str) -> None:
    """``arg_nodes`` is required and lists variables only (after the nodes are built)."""
    if "arg_nodes" not in data:
        raise fail(source, "arg_nodes", "missing field", "the list of variable node ids")
    ids = _id_list(data["arg_nodes"], source, "arg_nodes", len(is_var))
    for k, nid in enumerate(ids):
        if not is_var[nid]:
            raise fail(
                source,
                f"arg_nodes[{k}]",
                f"node {nid} is an operator",
                "ids of variable ('null') nodes",
            )


def _check_node(raw: Any, source: str, where: str, n_nodes: int) -> None:
    if not isinstance(raw, dict):
        raise fail(
            source,
            where,
            f"{_short(raw)} is not an object",
            'a node {"op": ..., "name": ..., "inputs": [...]}',
        )
    unknown = sorted(set(raw) - _NODE_KEYS)
    if unknown:
        raise fail(source, f"{where}.{unknown[0]}", "unknown field", f"only {sorted(_NODE_KEYS)}")
    for key in ("op", "name", "inputs"):
        if key not in raw:
            raise fail(source, f"{where}.{key}", "missing field", "op, name and inputs")
    for key in ("op", "name"):
        if not isinstance(raw[key], str):
            raise fail(source, f"{where}.{key}", f"{_short(raw[key])} is not a string", "a string")
    if not isinstance(raw["inputs"], list):
        raise fail(
            source, f"{where}.inputs", f"{_short(raw['inputs'])} is not a list", "a list of entries"
        )
    for k, e in enumerate(raw["inputs"]):
        _entry(e, source, f"{where}.inputs[{k}]", n_nodes)
    for key in ("attrs", "attr", "param"):
        if key in raw:
            _str_map(raw[key], source, f"{where}.{key}")
    if "control_deps" in raw:
        _id_list(raw["control_deps"], source, f"{where}.control_deps", n_nodes)
    if "backward_source_id" in raw:
        v = raw["backward_source_id"]
        if not _is_int(v) or not -_U32 // 2 <= v < _U32 // 2:
            raise fail(
                source, f"{where}.backward_source_id", f"{_short(v)} is not an int", "an integer"
            )
    if "subgraphs" in raw:
        subs = raw["subgraphs"]
        if not isinstance(subs, list):
            raise fail(
                source, f"{where}.subgraphs", f"{_short(subs)} is not a list", "a list of graphs"
            )
        for k, sub in enumerate(subs):
            check_graph(sub, source, f"{where}.subgraphs[{k}].")


def _check_graph_attrs(attrs: Any, source: str, where: str) -> None:
    if not isinstance(attrs, dict):
        raise fail(
            source, where, f"{_short(attrs)} is not an object", '{"mxnet_version": ["int", 10901]}'
        )
    for key, value in attrs.items():
        here = f"{where}[{key!r}]"
        if not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], str)):
            raise fail(
                source,
                here,
                f"{_short(value)} is not a typed value",
                '["<type name>", value], e.g. ["int", 10901]',
            )
        check = _ANY_TYPES.get(value[0])
        if check is None:
            raise fail(
                source, here, f"type {value[0]!r} is not registered", f"one of {sorted(_ANY_TYPES)}"
            )
        if not check(value[1]) or (key == "mxnet_version" and value[0] != "int"):
            raise fail(
                source,
                here,
                f"{_short(value[1])} is not a {value[0]!r} value",
                '["int", <version>]' if key == "mxnet_version" else f"a {value[0]}",
            )
