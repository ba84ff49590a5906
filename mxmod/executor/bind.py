"""``simple_bind`` / ``bind`` / ``Executor.reshape``: allocating and checking arrays."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..base import MXNetError
from ..symbol.infer import propagate_shapes, propagate_types, unknown_shape_error
from ..symbol.graph import aux_var_ids
from .executor import Executor

GRAD_REQS = ("write", "add", "null")


def _device(ctx):
    from ..context import Context, current_context

    if ctx is None:
        ctx = current_context()
    if isinstance(ctx, (list, tuple)):
        if len(ctx) != 1:
            raise MXNetError("an Executor runs on one context; use mx.mod.Module for several")
        ctx = ctx[0]
    if not isinstance(ctx, Context):
        raise TypeError(f"ctx must be a Context such as mx.cpu(), got {ctx!r}")
    return ctx, ctx.jax_device


def _group_devices(sym, group2ctx) -> dict:
    """``{variable: jax device}`` for the variables of the ``ctx_group``s ``group2ctx`` maps.

    The graph still runs as one XLA program on the executor's context; the arrays of a
    grouped variable live on (and its gradients return to) the group's context, as in
    MXNet."""
    from ..context import Context

    if not group2ctx:
        return {}
    if not isinstance(group2ctx, dict) or not all(
        isinstance(c, Context) for c in group2ctx.values()
    ):
        raise TypeError(f"group2ctx must map ctx_group names to Contexts, got {group2ctx!r}")
    out = {}
    for name, attrs in sym.attr_dict().items():
        group = attrs.get("__ctx_group__") or attrs.get("ctx_group")
        if group in group2ctx:
            out[name] = group2ctx[group].jax_device
    return out


def _grad_reqs(grad_req: Any, arg_names: list[str]) -> dict:
    if isinstance(grad_req, str):
        reqs = {n: grad_req for n in arg_names}
    elif isinstance(grad_req, (list, tuple)):
        if len(grad_req) != len(arg_names):
            raise MXNetError(
                f"grad_req list has {len(grad_req)} entries for {len(arg_names)} "
                f"arguments {arg_names}"
            )
        reqs = dict(zip(arg_names, grad_req))
    elif isinstance(grad_req, dict):
        extra = set(grad_req) - set(arg_names)
        if extra:
            raise MXNetError(
                f"grad_req names {sorted(extra)} that are not arguments; arguments are {arg_names}"
            )
        reqs = {n: grad_req.get(n, "null") for n in arg_names}
    else:
        raise TypeError(f"grad_req must be a str, list or dict, got {type(grad_req).__name__}")
    for n, r in reqs.items():
        if r not in GRAD_REQS:
            raise ValueError(f"grad_req {r!r} for {n!r} is invalid; use 'write', 'add' or 'null'")
    return reqs


def _zeros(shape, dtype, device):
    from ..ndarray import NDArray

    return NDArray(jax.device_put(jnp.zeros(shape, dtype), device))


def _out_specs(sym, shapes: dict, types: dict) -> list:
    """``(shape, dtype)`` of each output as inference found them (None where unknown)."""
    return [(shapes.get((id(n), i)), types.get((id(n), i))) for n, i in sym._outputs]


def simple_bind(
    sym,
    ctx,
    grad_req="write",
    type_dict=None,
    stype_dict=None,
    group2ctx=None,
    shared_exec=None,
    shared_buffer=None,
    **shapes,
) -> Executor:
    """Allocate every array from the given input shapes (``Symbol.simple_bind``)."""
    if stype_dict:
        raise NotImplementedError("simple_bind(stype_dict=...): sparse storage is not supported")
    ctx, device = _device(ctx)
    group_device = _group_devices(sym, group2ctx)
    inputs = set(sym.list_inputs())
    for name in shapes:
        if name not in inputs:
            raise MXNetError(
                f"simple_bind got a shape for {name!r}, which is not an input of the "
                f"symbol; its arguments are {sym.list_arguments()}"
            )
    order, inferred = propagate_shapes(sym, shapes)
    _, types = propagate_types(sym, dict(type_dict or {}))
    aux_ids = aux_var_ids(order)
    variables = [n for n in order if n.is_var]
    if any((id(n), 0) not in inferred for n in variables):
        raise unknown_shape_error(sym, shapes)
    arg_names = [n.name for n in variables if id(n) not in aux_ids]
    reqs = _grad_reqs(grad_req, arg_names)
    shared = shared_exec.arg_dict if shared_exec is not None else {}
    args, grads, aux_names, aux = [], [], [], []
    for n in variables:
        shape = inferred[(id(n), 0)]
        dtype = types.get((id(n), 0), "float32")
        if id(n) in aux_ids:
            aux_names.append(n.name)
            aux.append(_zeros(shape, dtype, device))
            continue
        s = shared.get(n.name)
        dev = group_device.get(n.name, device)
        args.append(s if s is not None and s.shape == shape else _zeros(shape, dtype, dev))
        grads.append(None if reqs[n.name] == "null" else _zeros(shape, dtype, dev))
    return Executor(
        sym, ctx, arg_names, args, grads, reqs, aux_names, aux, _out_specs(sym, inferred, types)
    )


def _args_list(values: Any, names: list[str], what: str, required: bool) -> list:
    if values is None:
        if required:
            raise MXNetError(f"bind needs {what} for {names}")
        return [None] * len(names)
    if isinstance(values, dict):
        extra = set(values) - set(names)
        if extra:
            raise MXNetError(
                f"bind: {what} has {sorted(extra)}, which the symbol does not have; "
                f"expected {names}"
            )
        missing = [n for n in names if n not in values]
        if missing and required:
            raise MXNetError(f"bind: {what} is missing {missing}")
        return [values.get(n) for n in names]
    values = list(values)
    if len(values) != len(names):
        raise MXNetError(
            f"bind: {what} has {len(values)} arrays but the symbol needs {len(names)} ({names})"
        )
    return values


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
    from ..ndarray import NDArray, array

    _group_devices(sym, group2ctx)  # checked; the given arrays stay where they are
    ctx, device = _device(ctx)
    arg_names, aux_names = sym.list_arguments(), sym.list_auxiliary_states()

    def nd(v):
        return v if isinstance(v, NDArray) else array(np.asarray(v), ctx=ctx)

    arg_list = [nd(v) for v in _args_list(args, arg_names, "args", True)]
    aux_list = [nd(v) for v in _args_list(aux_states, aux_names, "aux_states", bool(aux_names))]
    grad_list = _args_list(args_grad, arg_names, "args_grad", False)
    reqs = _grad_reqs(grad_req, arg_names)
    if args_grad is None:
        reqs = {n: "null" for n in arg_names}
    grads = []
    for n, g in zip(arg_names, grad_list):
        if g is None:
            reqs[n] = "null"
        grads.append(None if reqs[n] == "null" else nd(g))
    arrays = dict(zip(arg_names + aux_names, arg_list + aux_list))
    _, shapes = propagate_shapes(sym, {n: a.shape for n, a in arrays.items()})
    _, types = propagate_types(sym, {n: a._data.dtype.name for n, a in arrays.items()})
    return Executor(
        sym,
        ctx,
        arg_names,
        arg_list,
        grads,
        reqs,
        aux_names,
        aux_list,
        _out_specs(sym, shapes, types),
    )


def _prefix_or_zeros(arr, shape, device):
    """A reshaped argument: MXNet's smaller array is the start of the old one's memory
    (so it begins with the old values); a larger one is new, zero memory here."""
    from ..ndarray import NDArray

    size = int(np.prod(shape))
    if size > arr.size:
        return _zeros(shape, arr._data.dtype, device)
    return NDArray(jax.device_put(arr._data.reshape(-1)[:size].reshape(shape), device))


def reshape_executor(
    exe: Executor, partial_shaping: bool, allow_up_sizing: bool, shapes: dict
) -> Executor:
    sym = exe._symbol
    order, inferred = propagate_shapes(sym, shapes)
    if any(n.is_var and (id(n), 0) not in inferred for n in order):
        raise unknown_shape_error(sym, shapes)
    shape_of = {n.name: inferred[(id(n), 0)] for n in order if n.is_var}
    _, device = _device(exe._ctx)
    new_args, new_grads = [], []
    for n, a, g in zip(exe._arg_names, exe.arg_arrays, exe.grad_arrays):
        want = shape_of[n]
        if a.shape == want:
            new_args.append(a)
            new_grads.append(g)
            continue
        if n not in shapes and not partial_shaping:
            raise MXNetError(
                f"reshape: argument {n!r} would change from {a.shape} to {want}; "
                "pass partial_shaping=True to allow it"
            )
        if np.prod(want) > np.prod(a.shape) and not allow_up_sizing:
            raise MXNetError(
                f"reshape: {n!r} grows from {a.shape} to {want}; pass "
                "allow_up_sizing=True to allocate a larger array"
            )
        new_args.append(_prefix_or_zeros(a, want, device))
        new_grads.append(None if g is None else _prefix_or_zeros(g, want, device))
    new_aux = []
    for n, a in zip(exe._aux_names, exe.aux_arrays):
        if a.shape != shape_of[n]:
            raise MXNetError(
                f"reshape: aux state {n!r} would change from {a.shape} to {shape_of[n]}"
            )
        new_aux.append(a)
    _, types = propagate_types(
        sym,
        {
            n: a._data.dtype.name
            for n, a in zip(exe._arg_names + exe._aux_names, new_args + new_aux)
        },
    )
    new = Executor(
        sym,
        exe._ctx,
        exe._arg_names,
        new_args,
        new_grads,
        exe._grad_req,
        exe._aux_names,
        new_aux,
        _out_specs(sym, inferred, types),
    )
    new._shares_outputs_of = exe  # MXNet's reshaped executor writes into the base's memory
    return new
