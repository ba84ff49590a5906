"""The per-node backward entries of ``mx.mon.Monitor`` (``fc1_backward_output0`` ...).

MXNet's monitor sees every node of the backward graph: node ``N``'s backward writes the
gradient that flows from ``N`` into each of its inputs, named ``N_backward_output<i>``
(``N_backward_output`` when ``N`` has one input). The fused step keeps no such tensors,
so they are recomputed for the monitored batch: the graph runs once more with a zero
"tap" added to every node input, and the VJP with respect to the taps is exactly each
node's contribution to its inputs' gradients.
"""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp

from ..ops import LowerCtx, get_op
from ..ops.sparse import dense
from ..symbol import load_json


def _is_float(x) -> bool:
    return jnp.issubdtype(x.dtype, jnp.floating)


def backward_taps(graph, args: dict, aux: dict, key, is_train: bool, head_grads) -> list:
    """``[(name, array)]`` of every node's backward outputs for one batch.

    ``graph`` is the symbol's ``GraphFn``; ``head_grads`` the gradients of its outputs
    (None: ones, as ``backward()`` without ``out_grads`` uses for loss outputs).
    """
    args = {n: dense(v) for n, v in args.items()}  # csr arguments: their dense values
    out_shapes = graph._out_shapes(args, aux) if graph._needs_shapes else {}

    def run(taps, record):
        env: dict = {}
        for i, node, refs, aux_refs, aux_vars, _ in graph._steps:
            if node is None:
                env[(i, 0)] = args[refs] if refs in args else aux[refs]
                continue
            ins = [env[r] + taps[(i, j)] if (i, j) in taps else env[r] for j, r in enumerate(refs)]
            if record is not None:
                record.extend(((i, j), x) for j, x in enumerate(ins))
            rng = (
                jax.random.fold_in(key, i)
                if (id(node) in graph._random_ids and key is not None)
                else None
            )
            ctx = LowerCtx(
                is_train=is_train,
                node_name=node.name,
                rng=rng,
                out_shapes=out_shapes.get(id(node)),
                lower_subgraph=graph.subgraph_fn,
            )
            res = node.op.lower(node.parsed(), ins, [env[r] for r in aux_refs], ctx)
            outs = res[0] if aux_vars else res
            for k, o in enumerate(outs):
                env[(i, k)] = o
        return [env[h] for h in graph._heads]

    seen: list = []
    run({}, seen)  # the node inputs' shapes and dtypes
    taps = {ref: jnp.zeros_like(x) for ref, x in seen if _is_float(x)}
    outs, vjp = jax.vjp(lambda t: run(t, None), taps)
    if head_grads is None:
        head_grads = [jnp.ones_like(o) for o in outs]
    (grads,) = vjp([jnp.asarray(g, o.dtype) for g, o in zip(head_grads, outs)])
    names = {i: (node.name, len(refs)) for i, node, refs, *_ in graph._steps if node is not None}
    result = []
    for (i, j), x in seen:
        name, n_in = names[i]
        suffix = "" if n_in == 1 else str(j)
        result.append((f"{name}_backward_output{suffix}", grads.get((i, j), jnp.zeros_like(x))))
    return result


def with_hidden_outputs(symbol):
    """``symbol`` with the outputs MXNet's monitor sees but ``list_outputs`` hides made
    visible (BatchNorm's ``mean`` and ``var``: ``output_mean_var=True``)."""
    graph = json.loads(symbol.tojson())
    changed = False
    for node in graph["nodes"]:
        if node["op"] == "null":
            continue
        op = get_op(node["op"])
        attrs = node.setdefault("attrs", {})
        if "output_mean_var" in op.params and attrs.get("output_mean_var") in (None, "False", "0"):
            attrs["output_mean_var"] = "True"
            changed = True
    return load_json(json.dumps(graph)) if changed else symbol


def in_run_order(taps: list) -> list:
    """Backward entries (``N_backward_output<i>``, graph order) in the order MXNet's
    backward pass runs them: last node first, each node's outputs in index order."""
    nodes: list = []
    for item in taps:
        node = item[0].rsplit("_backward_output", 1)[0]
        if nodes and nodes[-1][0] == node:
            nodes[-1][1].append(item)
        else:
            nodes.append((node, [item]))
    return [item for _, outs in reversed(nodes) for item in outs]
