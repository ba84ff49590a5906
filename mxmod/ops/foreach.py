"""MXNet's ``_foreach`` (``mx.sym.contrib.foreach``): a loop body graph run once per slice
of its data along axis 0, carrying states, as one ``lax.scan``.

The node's inputs are the data arrays, the initial states, then the body's other inputs
(weights, outer values it reads); ``in_data_locs``/``in_state_locs``/``remain_locs`` say
which input of the body (``list_inputs()`` order) each feeds. The body's outputs are the
per-step data outputs (``num_out_data``, stacked along a new axis 0) then the new states;
the node's outputs are those stacked outputs, then the final states. Gradients flow through
the scan; random operators in the body draw from a key per step. A body with auxiliary
states (BatchNorm's moving statistics) is refused.
"""

from __future__ import annotations

import jax

from ._attrs import Param, p_int, p_shape
from ._def import OpDef, fail, register


def _body(a):
    subgraphs = a.get("subgraphs")
    if not subgraphs:
        fail("_foreach needs its loop body (a subgraph): build it with mx.sym.contrib.foreach")
    return subgraphs[0]


def _locs(a) -> tuple:
    n_data, n_state = len(a.in_data_locs), len(a.in_state_locs)
    if n_data + n_state + len(a.remain_locs) != a.num_args - 1:
        fail(
            f"_foreach: num_args {a.num_args} does not match {n_data} data, {n_state} states "
            f"and {len(a.remain_locs)} other inputs (plus the subgraph)"
        )
    return n_data, n_state


def _by_body_input(a, values: list, slice_data) -> dict:
    """Node input values keyed by the body input they feed (data sliced by ``slice_data``)."""
    names = _body(a).list_inputs()
    n_data, n_state = _locs(a)
    out = {}
    for i, loc in enumerate((*a.in_data_locs, *a.in_state_locs, *a.remain_locs)):
        v = values[i]
        out[names[loc]] = slice_data(v) if i < n_data and v is not None else v
    return out


def _shape(a, s):
    body = _body(a)
    n_data, n_state = _locs(a)
    known = {
        k: tuple(v) for k, v in _by_body_input(a, list(s), lambda v: v[1:]).items() if v is not None
    }
    args, outs, _ = body.infer_shape_partial(**known)
    inferred = dict(zip(body.list_arguments(), args))
    steps = next((v[0] for v in s[:n_data] if v is not None), None)
    names = body.list_inputs()
    ins = []
    for i, loc in enumerate((*a.in_data_locs, *a.in_state_locs, *a.remain_locs)):
        got = inferred.get(names[loc]) if s[i] is None else tuple(s[i])
        if s[i] is None and got is not None and i < n_data:
            got = None if steps is None else (steps, *got)
        ins.append(got)
    n_out = a.num_out_data
    out = [None if o is None or steps is None else (steps, *o) for o in outs[:n_out]]
    return ins, out + list(outs[n_out:])


def _type(a, t):
    body = _body(a)
    known = {k: v for k, v in _by_body_input(a, list(t), lambda v: v).items() if v is not None}
    args, outs, _ = body.infer_type_partial(**known)
    inferred = dict(zip(body.list_arguments(), args))
    names = body.list_inputs()
    locs = (*a.in_data_locs, *a.in_state_locs, *a.remain_locs)
    ins = [t[i] if t[i] is not None else inferred.get(names[loc]) for i, loc in enumerate(locs)]
    return ins, list(outs)


def _lower(a, ins, aux, ctx):
    body = _body(a)
    n_data, n_state = _locs(a)
    if body.list_auxiliary_states():
        raise NotImplementedError(
            f"_foreach {ctx.node_name!r}: a loop body with auxiliary states "
            f"({', '.join(body.list_auxiliary_states())}) is not supported"
        )
    run = ctx.lower_subgraph(body)
    names = body.list_inputs()
    data_names = [names[loc] for loc in a.in_data_locs]
    state_names = [names[loc] for loc in a.in_state_locs]
    fixed = {names[loc]: v for loc, v in zip(a.remain_locs, ins[n_data + n_state :])}

    def step(states, xs):
        slices, t = xs
        args = {**fixed, **dict(zip(data_names, slices)), **dict(zip(state_names, states))}
        key = None if ctx.rng is None else jax.random.fold_in(ctx.rng, t)  # one per step
        outs, _ = run(args, {}, key, ctx.is_train)
        return list(outs[a.num_out_data :]), list(outs[: a.num_out_data])

    steps = jax.numpy.arange(ins[0].shape[0]) if n_data else None
    init = list(ins[n_data : n_data + n_state])
    final, stacked = jax.lax.scan(step, init, (list(ins[:n_data]), steps))
    return [*stacked, *final]


def _outputs(a):
    return [f"output{i}" for i in range(a.num_outputs)]


register(
    OpDef(
        name="_foreach",
        params={
            "num_args": Param(p_int),
            "num_outputs": Param(p_int),
            "num_out_data": Param(p_int),
            "in_state_locs": Param(p_shape),
            "in_data_locs": Param(p_shape),
            "remain_locs": Param(p_shape),
        },
        inputs=lambda a: [f"arg{i}" for i in range(a.num_args - 1)],
        outputs=_outputs,
        infer_shape=_shape,
        infer_type=_type,
        lower=_lower,
    )
)
