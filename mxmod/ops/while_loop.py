"""MXNet's ``_while_loop`` (``mx.sym.contrib.while_loop``): a condition graph and a step
graph over the node's inputs (``cond_input_locs``/``func_input_locs``: which node input
feeds each graph input; ``func_var_locs``: where each loop variable enters the step graph,
whose outputs are ``num_out_data`` step outputs then the new loop variables).

It runs as a ``lax.scan`` of ``max_iterations`` steps: a step runs (``lax.cond``) while the
condition (first element non-zero) has held at every step so far; the step outputs are
stacked along a new axis 0, zeros in the rows of steps that did not run (MXNet leaves them
unspecified); the node's outputs are those, then the final loop variables. Gradients flow
through the steps that ran; random operators draw from a key per step. Graphs with
auxiliary states are refused.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._attrs import Param, p_int, p_shape
from ._def import OpDef, fail, register
from .subgraph_infer import infer_through


def _graphs(a) -> list:
    graphs = a.get("subgraphs") or []
    if len(graphs) != 2:
        fail(
            "_while_loop needs its condition and step graphs: build it with "
            "mx.sym.contrib.while_loop"
        )
    return graphs


def _pairs(a):
    cond_g, func_g = _graphs(a)
    return ((cond_g, a.cond_input_locs), (func_g, a.func_input_locs))


def _shape(a, s):
    ins, (_, outs) = infer_through(_pairs(a), s, "infer_shape_partial")
    n = a.num_out_data
    steps = [None if o is None else (a.max_iterations, *o) for o in outs[:n]]
    return ins, steps + outs[n:]


def _type(a, t):
    ins, (_, outs) = infer_through(_pairs(a), t, "infer_type_partial")
    return ins, outs


def _lower(a, ins, aux, ctx):
    runs = []
    for graph in _graphs(a):
        if graph.list_auxiliary_states():
            raise NotImplementedError(
                f"_while_loop {ctx.node_name!r}: a graph with auxiliary states "
                f"({', '.join(graph.list_auxiliary_states())}) is not supported"
            )
        runs.append(ctx.lower_subgraph(graph))
    cond_g, func_g = _graphs(a)
    var_nodes = [a.func_input_locs[k] for k in a.func_var_locs]  # node input of each var

    def values_with(loop_vars):
        values = list(ins)
        for loc, v in zip(var_nodes, loop_vars):
            values[loc] = v
        return values

    def run(k, graph, locs, values, t):
        args = {n: values[loc] for n, loc in zip(graph.list_inputs(), locs)}
        key = None if ctx.rng is None else jax.random.fold_in(jax.random.fold_in(ctx.rng, k), t)
        return list(runs[k](args, {}, key, ctx.is_train)[0])

    def step_fn(loop_vars, t):
        outs = run(1, func_g, a.func_input_locs, values_with(loop_vars), t)
        return outs[: a.num_out_data], outs[a.num_out_data :]

    init = [ins[loc] for loc in var_nodes]
    shapes = jax.eval_shape(step_fn, init, 0)[0]

    def step(carry, t):
        loop_vars, active = carry
        (go,) = run(0, cond_g, a.cond_input_locs, values_with(loop_vars), t)
        go = active & (jnp.reshape(go, (-1,))[0] != 0)
        outs, new_vars = jax.lax.cond(
            go,
            lambda v: step_fn(v, t),
            lambda v: ([jnp.zeros(o.shape, o.dtype) for o in shapes], list(v)),
            loop_vars,
        )
        new_vars = [n.astype(v.dtype) for n, v in zip(new_vars, loop_vars)]
        return (new_vars, go), outs

    carry = (init, jnp.asarray(True))
    (final, _), stacked = jax.lax.scan(step, carry, jnp.arange(a.max_iterations))
    return [*stacked, *final]


register(
    OpDef(
        name="_while_loop",
        params={
            "num_args": Param(p_int),
            "num_outputs": Param(p_int),
            "num_out_data": Param(p_int),
            "max_iterations": Param(p_int),
            "cond_input_locs": Param(p_shape),
            "func_input_locs": Param(p_shape),
            "func_var_locs": Param(p_shape),
        },
        inputs=lambda a: [f"arg{i}" for i in range(a.num_args - 2)],
        outputs=lambda a: [f"output{i}" for i in range(a.num_outputs)],
        infer_shape=_shape,
        infer_type=_type,
        lower=_lower,
    )
)
