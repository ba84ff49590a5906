"""Allocating, checking and resizing an executor's arrays (``bind``, ``simple_bind``,
``Executor.reshape``)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..base import MXNetError
from ..context import Context, current_context
from ..ndarray import NDArray, sparse
from ..ndarray.sparse import BaseSparseNDArray
from ..symbol.infer import propagate_shapes, propagate_types, unknown_shape_error

GRAD_REQS = ("write", "add", "null")


def device_of(ctx):
    if ctx is None:
        ctx = current_context()
    if isinstance(ctx, (list, tuple)):
        if len(ctx) != 1:
            raise MXNetError("an Executor runs on one context; use mx.mod.Module for several")
        ctx = ctx[0]
    if not isinstance(ctx, Context):
        raise TypeError(f"ctx must be a Context such as mx.cpu(), got {ctx!r}")
    return ctx, ctx.jax_device


def group_contexts(sym, group2ctx) -> dict:
    """``{variable: Context}`` for the variables of the ``ctx_group``s ``group2ctx`` maps.

    The graph still runs as one XLA program on the executor's context; the arrays of a
    grouped variable live on (and its gradients return to) the group's context, as in
    MXNet."""
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
            out[name] = group2ctx[group]
    return out


def grad_reqs(grad_req: Any, arg_names: list[str]) -> dict:
    if isinstance(grad_req, str):
        reqs = {n: grad_req for n in arg_names}
    elif isinstance(grad_req, (list, tuple)):
        if len(grad_req) != len(arg_names):
            raise MXNetError(
                f"grad_req list has {len(grad_req)} entries for {len(arg_names)} "
                f"arguments {arg_names}"
            )
        reqs = dict(zip(arg_names, grad_req))
    elif isinstance(grad_req, dict):  # names that are not arguments go unused (MXNet)
        reqs = {n: grad_req.get(n, "null") for n in arg_names}
    else:
        raise TypeError(f"grad_req must be a str, list or dict, got {type(grad_req).__name__}")
    for n, r in reqs.items():
        if r not in GRAD_REQS:
            raise ValueError(f"grad_req {r!r} for {n!r} is invalid; use 'write', 'add' or 'null'")
    return reqs


def zeros(shape, dtype, device, ctx=None):
    """Zeros on ``device``, reported as ``ctx`` when that is the context of ``device``
    (``cpu(1)`` on a one-CPU machine shares its device with ``cpu(0)``, as MXNet's)."""
    return on_ctx(jax.device_put(jnp.zeros(shape, dtype), device), ctx)


def on_ctx(data, ctx):
    """``data`` as an NDArray of ``ctx`` when it lives on ``ctx``'s device."""
    if ctx is not None and data.devices() == {ctx.jax_device}:
        return NDArray(data, ctx)
    return NDArray(data)


def out_specs(sym, shapes: dict, types: dict) -> list:
    """``(shape, dtype)`` of each output as inference found them (None where unknown)."""
    return [(shapes.get((id(n), i)), types.get((id(n), i))) for n, i in sym._outputs]


def args_list(values: Any, names: list[str], what: str, required: bool) -> list:
    if values is None:
        if required:
            raise MXNetError(f"bind needs {what} for {names}")
        return [None] * len(names)
    if isinstance(values, dict):  # names the symbol lacks are not read, as MXNet: one
        # parameter dict is bound against each of its sub-symbols (autoencoder solvers)
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


def prefix_or_zeros(arr, shape, device):
    """A reshaped argument: MXNet's smaller array is the start of the old one's memory
    (so it begins with the old values); a larger one is new, zero memory here."""
    if isinstance(arr, BaseSparseNDArray):  # a sparse argument starts empty
        return sparse.zeros(arr.stype, shape, ctx=arr.context, dtype=arr.dtype)
    size = int(np.prod(shape))
    if size > arr.size:
        return zeros(shape, arr._data.dtype, device)
    return NDArray(jax.device_put(arr._data.reshape(-1)[:size].reshape(shape), device))


def reshaped_arrays(exe: Any, partial_shaping: bool, allow_up_sizing: bool, shapes: dict):
    """``(args, grads, aux, out_specs)`` of ``exe`` for new input ``shapes``: unchanged
    arrays are shared, the others made (``Executor.reshape``'s checks and MXNet's rules)."""
    sym = exe._symbol
    order, inferred = propagate_shapes(sym, shapes)
    if any(n.is_var and (id(n), 0) not in inferred for n in order):
        raise unknown_shape_error(sym, shapes)
    shape_of = {n.name: inferred[(id(n), 0)] for n in order if n.is_var}
    _, device = device_of(exe._ctx)
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
        new_args.append(prefix_or_zeros(a, want, device))
        new_grads.append(None if g is None else prefix_or_zeros(g, want, device))
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
    return new_args, new_grads, new_aux, out_specs(sym, inferred, types)


def to_jax(value: Any, like: Any, what: str):
    if isinstance(value, BaseSparseNDArray):
        value = value.tostype("default")
    arr = value._data if isinstance(value, NDArray) else jnp.asarray(np.asarray(value))
    if tuple(arr.shape) != tuple(like.shape):
        raise MXNetError(
            f"{what}: got shape {tuple(arr.shape)} but the executor is bound with "
            f"{tuple(like.shape)}; use reshape() to bind new shapes"
        )
    arr = arr.astype(like.dtype) if arr.dtype != like.dtype else arr
    sharding = getattr(like, "sharding", None)
    if sharding is not None and getattr(arr, "sharding", None) != sharding:
        arr = jax.device_put(arr, sharding)  # the value lands where the executor runs
    return arr


def set_argument(target: NDArray, value: Any, what: str) -> None:
    """Write ``value`` into a bound argument array (a sparse one keeps its storage type)."""
    if not isinstance(target, BaseSparseNDArray):
        target._set_data(to_jax(value, target._data, what))
        return
    if tuple(value.shape) != tuple(target.shape):
        raise MXNetError(
            f"{what}: got shape {tuple(value.shape)} but the executor is bound with "
            f"{tuple(target.shape)}; use reshape() to bind new shapes"
        )
    if type(value) is type(target):
        target._set_parts(target.shape, value._sdata.astype(target.dtype), list(value._saux))
        return
    if isinstance(value, BaseSparseNDArray):
        value = value.tostype("default")
    target._set_data(value.asnumpy() if isinstance(value, NDArray) else np.asarray(value))
