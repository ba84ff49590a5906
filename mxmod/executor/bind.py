"""``simple_bind`` / ``bind`` / ``Executor.reshape``: allocating and checking arrays."""

from __future__ import annotations


import numpy as np

from ..base import MXNetError
from ..ndarray import NDArray, array, sparse
from ..symbol.graph import aux_var_ids
from ..symbol.stype import infer_stypes, variable_stypes
from ..symbol.infer import propagate_shapes, propagate_types, unknown_shape_error
from .grad_check import check_differentiable
from .arrays import args_list, device_of, grad_reqs, group_contexts, out_specs, zeros
from .executor import Executor, compiled_for


def sparse_zeros(stype, shape, dtype, ctx, device):
    """A zero array of ``stype`` (MXNet allocates sparse arguments and gradients empty)."""
    if stype == "default":
        return zeros(shape, dtype, device, ctx)
    return sparse.zeros(stype, shape, ctx=ctx, dtype=dtype)


def simple_bind(
    sym,
    ctx,
    grad_req="write",
    type_dict=None,
    stype_dict=None,
    group2ctx=None,
    shared_arg_names=None,
    shared_exec=None,
    shared_buffer=None,
    **shapes,
) -> Executor:
    """Allocate every array from the given input shapes (``Symbol.simple_bind``).

    ``shared_arg_names`` and ``shared_buffer`` (MXNet's memory-sharing hints) are accepted
    and unused; arguments of ``shared_exec`` with the same name and shape are shared."""
    ctx, device = device_of(ctx)
    group_ctx = group_contexts(sym, group2ctx)
    # as MXNet, shapes of names the symbol lacks are not used (old predict scripts pass
    # softmax_label= to a symbol without the loss head); a missing input's shape is named
    # by shape inference
    inputs = set(sym.list_inputs())
    shapes = {n: s for n, s in shapes.items() if n in inputs}
    dynamic = compiled_for(sym).graph.dynamic_nodes
    if dynamic:
        raise MXNetError(
            f"simple_bind: the output shapes of {dynamic} depend on the input values "
            "(boolean_mask), so shape inference cannot decide the outputs and MXNet's "
            "simple_bind (and Module) cannot bind this graph either; bind it with "
            "Symbol.bind(ctx, args={...}), which runs it op by op"
        )
    order, inferred = propagate_shapes(sym, shapes)
    _, types = propagate_types(sym, dict(type_dict or {}))
    aux_ids = aux_var_ids(order)
    variables = [n for n in order if n.is_var]
    if any((id(n), 0) not in inferred for n in variables):
        raise unknown_shape_error(sym, shapes)
    arg_names = [n.name for n in variables if id(n) not in aux_ids]
    stypes = variable_stypes(sym, stype_dict)
    _, grad_stypes = infer_stypes(sym, stypes)
    reqs = grad_reqs(grad_req, arg_names)
    check_differentiable(sym, [n for n, r in reqs.items() if r != "null"])
    shared = shared_exec.arg_dict if shared_exec is not None else {}
    args, grads, aux_names, aux = [], [], [], []
    for n in variables:
        shape = inferred[(id(n), 0)]
        dtype = types.get((id(n), 0), "float32")
        if id(n) in aux_ids:
            aux_names.append(n.name)
            aux.append(zeros(shape, dtype, device, ctx))
            continue
        s = shared.get(n.name)
        where = group_ctx.get(n.name)  # a ctx_group's arrays live on (and name) its context
        label, dev = (where, where.jax_device) if where is not None else (ctx, device)
        new = sparse_zeros(stypes[n.name], shape, dtype, label, dev)
        args.append(s if s is not None and s.shape == shape else new)
        grad = sparse_zeros(grad_stypes[n.name], shape, dtype, label, dev)
        grads.append(None if reqs[n.name] == "null" else grad)
    return Executor(
        sym, ctx, arg_names, args, grads, reqs, aux_names, aux, out_specs(sym, inferred, types)
    )


def bind(
    sym,
    ctx,
    args,
    args_grad=None,
    grad_req="write",
    aux_states=None,
    group2ctx=None,
    shared_exec=None,
) -> Executor:
    """Bind user-provided arrays (``Symbol.bind``); shapes are checked by shape inference."""
    group_contexts(sym, group2ctx)  # checked; the given arrays stay where they are
    ctx, device = device_of(ctx)
    arg_names, aux_names = sym.list_arguments(), sym.list_auxiliary_states()

    def nd(v):
        return v if isinstance(v, NDArray) else array(np.asarray(v), ctx=ctx)

    arg_list = [nd(v) for v in args_list(args, arg_names, "args", True)]
    aux_list = [nd(v) for v in args_list(aux_states, aux_names, "aux_states", bool(aux_names))]
    grad_list = args_list(args_grad, arg_names, "args_grad", False)
    reqs = grad_reqs(grad_req, arg_names)
    if args_grad is None:
        reqs = {n: "null" for n in arg_names}
    grads = []
    for n, g in zip(arg_names, grad_list):
        if g is None:
            reqs[n] = "null"
        grads.append(None if reqs[n] == "null" else nd(g))
    check_differentiable(sym, [n for n, r in reqs.items() if r != "null"])
    arrays = dict(zip(arg_names + aux_names, arg_list + aux_list))
    _, shapes = propagate_shapes(sym, {n: a.shape for n, a in arrays.items()})
    _, types = propagate_types(sym, {n: np.dtype(a.dtype).name for n, a in arrays.items()})
    return Executor(
        sym,
        ctx,
        arg_names,
        arg_list,
        grads,
        reqs,
        aux_names,
        aux_list,
        out_specs(sym, shapes, types),
    )
