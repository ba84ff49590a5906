"""``mx.nd.Custom`` and the host side of every ``Custom`` node: the user's ``CustomOp``
runs on NDArrays on ``cpu(0)`` holding copies of the values (see ``mxmod.operator``)."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from ..base import MXNetError, match_inputs
from ..context import cpu
from ..ops import get_op
from ..ops import custom as custom_op
from ..ops.custom import attr_value, create_operator, np_type, signature
from .ndarray import NDArray


def _host_arrays(values: list, ctx) -> list:
    """NDArrays on ``ctx`` holding ``values`` (host arrays), placed in one transfer."""
    host = [np.asarray(v) for v in values]
    host = [h.astype(jax.dtypes.canonicalize_dtype(h.dtype), copy=False) for h in host]
    return [NDArray(a, ctx) for a in jax.device_put(host, ctx.jax_device)]


def _read_back(arrays: list, specs: list, label: str, what: str) -> list:
    out = []
    for i, (arr, spec) in enumerate(zip(arrays, specs)):
        value = arr.asnumpy() if hasattr(arr, "asnumpy") else np.asarray(arr)
        if tuple(value.shape) != tuple(spec.shape):
            raise MXNetError(
                f"custom operator {label}: {what}[{i}] has shape {value.shape} after "
                f"the call but must keep shape {tuple(spec.shape)}"
            )
        out.append(value.astype(spec.dtype, copy=False))
    return out


def run_forward(
    op: Any, label: str, is_train: bool, ins: list, aux: list, out_specs: list
) -> tuple[list, list]:
    """Call ``op.forward`` on host copies; return the outputs and the aux states after it."""
    ctx = cpu(0)
    n_in, n_aux = len(ins), len(aux)
    arrays = _host_arrays([*ins, *aux, *(np.zeros(s.shape, s.dtype) for s in out_specs)], ctx)
    in_data, aux_data, out_data = arrays[:n_in], arrays[n_in : n_in + n_aux], arrays[n_in + n_aux :]
    try:
        with ctx:
            op.forward(
                is_train=is_train,
                req=["write"] * len(out_data),
                in_data=in_data,
                out_data=out_data,
                aux=aux_data,
            )
    except Exception as e:
        raise MXNetError(f"custom operator {label}: forward raised {type(e).__name__}: {e}") from e
    aux_specs = [np.asarray(a) for a in aux]
    return (
        _read_back(out_data, out_specs, label, "out_data"),
        _read_back(aux_data, aux_specs, label, "aux"),
    )


def run_backward(
    op: Any,
    label: str,
    out_grad: list,
    in_data: list,
    out_data: list,
    aux: list,
    in_specs: list,
) -> list:
    """Call ``op.backward`` on host copies (``None``: not a declared dependency, passed
    empty); return the input gradients."""
    ctx = cpu(0)
    empty = np.zeros((0,), np.float32)  # an undeclared dependency, as MXNet's empty NDArray
    groups = [[empty if v is None else v for v in g] for g in (out_grad, in_data, out_data, aux)]
    groups.append([np.zeros(s.shape, s.dtype) for s in in_specs])
    arrays = iter(_host_arrays([v for g in groups for v in g], ctx))
    og, ind, outd, aux_data, in_grad = ([next(arrays) for _ in g] for g in groups)
    try:
        with ctx:
            op.backward(
                req=["write"] * len(in_grad),
                out_grad=og,
                in_data=ind,
                out_data=outd,
                in_grad=in_grad,
                aux=aux_data,
            )
    except Exception as e:
        raise MXNetError(f"custom operator {label}: backward raised {type(e).__name__}: {e}") from e
    return _read_back(in_grad, in_specs, label, "in_grad")


custom_op.HOST_CALLS.update(forward=run_forward, backward=run_backward)


def nd_custom(
    *data: Any, op_type: str | None = None, out: Any = None, name: str | None = None, **kwargs: Any
):
    """``mx.nd.Custom``: run the registered Python operator ``op_type`` on NDArrays now.

    Inputs are the arguments then the aux states (positionally or by name); the user's
    ``forward`` runs with ``is_train=False`` (mxmod has no ``autograd.record``) and
    writes the aux NDArrays in place, as in MXNet.

    Raises:
      MXNetError: if ``op_type`` is missing or unknown, or an input is missing.
      TypeError: if an input is not an NDArray.
    """
    if op_type is None:
        raise MXNetError("mx.nd.Custom needs op_type=<the name given to @mx.operator.register>")
    named = {k: v for k, v in kwargs.items() if isinstance(v, (NDArray, np.ndarray))}
    raw = {k: attr_value(k, v) for k, v in kwargs.items() if k not in named}
    a = get_op("Custom").parse({"op_type": op_type, **raw}, name or "Custom")
    slots = list(a.arguments) + list(a.aux)
    if len(data) > len(slots):
        raise MXNetError(
            f"mx.nd.Custom {op_type!r} takes {len(slots)} inputs "
            f"({', '.join(slots)}), got {len(data)}"
        )

    def missing(slot: str):
        raise MXNetError(
            f"mx.nd.Custom {op_type!r} needs input {slot!r} (inputs: {', '.join(slots)})"
        )

    arrays = match_inputs(f"mx.nd.Custom {op_type!r}", slots, list(data), named, missing)
    for slot, x in zip(slots, arrays):
        if x is None:
            missing(slot)
        if not isinstance(x, NDArray):
            raise TypeError(
                f"mx.nd.Custom {op_type!r}: input {slot!r} must be an NDArray, got "
                f"{type(x).__name__}; wrap it with mx.nd.array()"
            )
    shapes = [x.shape for x in arrays]
    dtypes = [np.dtype(x.dtype).name for x in arrays]
    out_shapes, out_types = signature(a, shapes, dtypes)
    op = create_operator(a, shapes, dtypes)
    ctx = arrays[0].context if arrays else cpu(0)
    outs = [NDArray(np.zeros(s, np_type(t)), ctx) for s, t in zip(out_shapes, out_types)]
    n_arg = len(a.arguments)
    with ctx:
        op.forward(
            is_train=False,
            req=["write"] * len(outs),
            in_data=arrays[:n_arg],
            out_data=outs,
            aux=arrays[n_arg:],
        )
    if out is not None:
        targets = out if isinstance(out, (list, tuple)) else [out]
        for t, o in zip(targets, outs):
            t[:] = o
        return out
    return outs[0] if len(outs) == 1 else outs
