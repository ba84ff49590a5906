"""Symbol files saved after MXNet's oneDNN partitioning (e.g. a graph from
``get_backend_symbol('MKLDNN')`` saved with ``save_checkpoint``).

Such a file holds fused nodes (``_sg_mkldnn_conv``, ``_sg_mkldnn_fully_connected``...),
each carrying, as a subgraph, the operators it replaced (convolution, batch norm,
activation, sum...). XLA fuses those itself, so mxmod loads the graph they came from: every
fused node is replaced by its subgraph's operators, fed by the node's inputs (in the
subgraph's input order, as MXNet feeds them). Parameter and auxiliary-state names are the
file's; a graph saved again is the unpartitioned one, which MXNet loads too. A quantized
fused node (``quantized`` set) computes in int8 and is refused.
"""

from __future__ import annotations

from ..base import MXNetFileError

FUSED_PREFIX = "_sg_mkldnn_"


def _fused(raw) -> bool:
    return isinstance(raw, dict) and str(raw.get("op", "")).startswith(FUSED_PREFIX)


def inline_fused(data: dict, source: str) -> dict:
    """``data`` (a checked graph object) with its oneDNN fused nodes replaced by the
    operators of their subgraphs; ``data`` itself when it has none."""
    nodes = data["nodes"]
    if not any(_fused(raw) for raw in nodes):
        return data
    out = [dict(raw) for raw in nodes]
    replaced: dict = {}  # (fused node id, output) -> the entry that now computes it
    for i, raw in enumerate(nodes):
        if _fused(raw):
            _splice(i, raw, out, replaced, source)
    for raw in out:
        if raw.get("op") != "null":
            raw["inputs"] = [_resolve(e, replaced, source) for e in raw.get("inputs", [])]
    heads = [_resolve(e, replaced, source) for e in data["heads"]]
    keep = [k for k, raw in enumerate(out) if not _fused(raw)]
    index = {old: new for new, old in enumerate(keep)}
    final = []
    for k in keep:
        raw = out[k]
        if raw.get("op") != "null":
            raw["inputs"] = [[index[e[0]], *e[1:]] for e in raw["inputs"]]
        final.append(raw)
    graph = {key: v for key, v in data.items() if key not in ("nodes", "node_row_ptr")}
    graph["nodes"] = final
    graph["arg_nodes"] = [k for k, raw in enumerate(final) if raw.get("op") == "null"]
    graph["heads"] = [[index[e[0]], *e[1:]] for e in heads]
    return graph


def _splice(i: int, raw: dict, out: list, replaced: dict, source: str) -> None:
    """Append fused node ``i``'s subgraph operators to ``out``; note what computes each of
    its outputs in ``replaced``."""
    where = f"nodes[{i}] ({raw['op']} {raw.get('name')!r})"
    attrs = raw.get("attrs") or {}
    if str(attrs.get("quantized", "false")).lower() in ("true", "1"):
        raise NotImplementedError(
            f"{source}: {where} is a quantized oneDNN node (int8): mxmod runs float graphs; "
            "load the model saved before quantization"
        )
    subs = raw.get("subgraphs") or []
    if not subs:  # e.g. the attention kernels (_sg_mkldnn_selfatt_*): operators of their own
        raise NotImplementedError(
            f"{source}: {where} is a oneDNN fused operator without a subgraph; mxmod does "
            "not implement it: save the model before partitioning it"
        )
    if len(subs) != 1:
        raise MXNetFileError(
            f"{source}: {where} has {len(subs)} subgraphs; a oneDNN fused node holds one",
            source,
            f"{where}.subgraphs",
            "one subgraph",
        )
    sub = subs[0]
    inputs, args = raw.get("inputs", []), sub.get("arg_nodes", [])
    if len(args) != len(inputs):
        raise MXNetFileError(
            f"{source}: {where} has {len(inputs)} inputs but its subgraph {len(args)}",
            source,
            f"{where}.inputs",
            "one input per subgraph input",
        )
    local = {nid: list(entry) for nid, entry in zip(args, inputs)}  # sub node -> entry
    for j, node in enumerate(sub["nodes"]):
        if node.get("op") == "null":
            if j not in local:
                raise MXNetFileError(
                    f"{source}: {where}: subgraph variable {node.get('name')!r} is not an input",
                    source,
                    f"{where}.subgraphs[0].arg_nodes",
                    "every subgraph variable listed",
                )
            continue
        copy = dict(node)
        copy["inputs"] = [_inner(e, local, source) for e in node.get("inputs", [])]
        local[j] = [len(out), None]
        out.append(copy)
    for o, head in enumerate(sub["heads"]):
        replaced[(i, o)] = _inner(head, local, source)


def _inner(entry: list, local: dict, source: str) -> list:
    """A subgraph entry as an entry of the outer graph."""
    target = local.get(entry[0])
    if target is None:  # MXNet writes a subgraph's nodes in data-flow order
        raise MXNetFileError(
            f"{source}: a oneDNN fused node's subgraph reads node {entry[0]} before it is computed",
            source,
            "subgraphs[0].nodes",
            "nodes in data-flow order",
        )
    if target[1] is None:  # an operator copied out of the subgraph
        return [target[0], entry[1], 0]
    return list(target)  # a subgraph input: the outer entry that feeds it


def _resolve(entry: list, replaced: dict, source: str) -> list:
    """``entry``, following fused-node outputs to what computes them now."""
    seen = 0
    while (entry[0], entry[1]) in replaced:
        entry = replaced[(entry[0], entry[1])]
        seen += 1
        if seen > len(replaced):
            raise MXNetFileError(
                f"{source}: oneDNN fused nodes feed each other in a cycle",
                source,
                "nodes",
                "no cycle",
            )
    return list(entry)
