"""MXNet's ``_cond`` (``mx.sym.contrib.cond``): three subgraphs (the predicate, the then
branch, the else branch) over the node's inputs (``cond_input_locs``/``then_input_locs``/
``else_input_locs``: which node input feeds each graph input, in ``list_inputs()`` order).
The predicate's first element chooses the branch (non-zero: then), as a ``lax.cond``:
only the chosen branch runs, and gradients flow through it. Both branches must give
outputs of the same shapes and types. Branches with auxiliary states are refused.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._attrs import Param, p_int, p_shape
from ._def import OpDef, fail, register
from .subgraph_infer import infer_through, merge


def _graphs(a) -> list:
    graphs = a.get("subgraphs") or []
    if len(graphs) != 3:
        fail("_cond needs its predicate, then and else graphs: build it with mx.sym.contrib.cond")
    if a.num_args != 3 + _n_inputs(a):
        fail(f"_cond: num_args {a.num_args} is not 3 graphs plus {_n_inputs(a)} inputs")
    return graphs


def _n_inputs(a) -> int:
    locs = (*a.cond_input_locs, *a.then_input_locs, *a.else_input_locs)
    return max(locs) + 1 if locs else 0


def _locs(a) -> tuple:
    return a.cond_input_locs, a.then_input_locs, a.else_input_locs


def _infer(method: str):
    def infer(a, values):
        ins, (_, then_outs, else_outs) = infer_through(zip(_graphs(a), _locs(a)), values, method)
        return ins, merge(then_outs, else_outs)

    return infer


def _lower(a, ins, aux, ctx):
    runs = []
    for graph in _graphs(a):
        if graph.list_auxiliary_states():
            raise NotImplementedError(
                f"_cond {ctx.node_name!r}: a branch with auxiliary states "
                f"({', '.join(graph.list_auxiliary_states())}) is not supported"
            )
        runs.append(ctx.lower_subgraph(graph))
    graphs = _graphs(a)

    def call(k, values):
        graph, locs = graphs[k], _locs(a)[k]
        args = {n: values[loc] for n, loc in zip(graph.list_inputs(), locs)}
        key = None if ctx.rng is None else jax.random.fold_in(ctx.rng, k)
        return list(runs[k](args, {}, key, ctx.is_train)[0])

    (pred,) = call(0, ins)
    chosen = jnp.reshape(pred, (-1,))[0] != 0
    return jax.lax.cond(chosen, lambda v: call(1, v), lambda v: call(2, v), list(ins))


register(
    OpDef(
        name="_cond",
        params={
            "num_args": Param(p_int),
            "num_outputs": Param(p_int),
            "cond_input_locs": Param(p_shape),
            "then_input_locs": Param(p_shape),
            "else_input_locs": Param(p_shape),
        },
        inputs=lambda a: [f"arg{i}" for i in range(a.num_args - 3)],
        # MXNet names one output "output" (foreach/while_loop keep output0)
        outputs=lambda a: (
            ["output"] if a.num_outputs == 1 else [f"output{i}" for i in range(a.num_outputs)]
        ),
        infer_shape=_infer("infer_shape_partial"),
        infer_type=_infer("infer_type_partial"),
        lower=_lower,
    )
)
