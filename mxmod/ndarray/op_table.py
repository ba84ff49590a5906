"""``mx.nd.<Op>`` for every operator of the table: the imperative form of each OpDef.

Each call parses MXNet-style attributes, runs the operator's lowering (jitted, cached
per operator, attributes and input shapes) in inference mode and wraps the outputs.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import xla_options
from ..base import MXNetError, match_inputs, named
from ..ops import LowerCtx, get_op
from ..ops._attrs import attr_str
from ..ops._def import positional_attrs
from ..program_store import program_key
from ..program_tiers import size_estimate, wrap
from ._random import next_key
from . import tape
from .ndarray import NDArray


@lru_cache(maxsize=512)
def _compiled(op_name: str, frozen_attrs: tuple, n_data: int, is_train: bool = False):
    op = get_op(op_name)
    attrs = op.parse(dict(frozen_attrs), op_name)

    def run(ins, key):
        ctx = LowerCtx(is_train=is_train, node_name=op_name, rng=key)
        res = op.lower(attrs, list(ins[:n_data]), list(ins[n_data:]), ctx)
        n_out = len(op.output_names(attrs))
        if not op.aux_names(attrs):
            return list(res)[:n_out]
        # in training mode, the running statistics the backward pass will write (MXNet's)
        moved = list(res[1]) if is_train and not op.aux_in_forward else []
        return list(res[0])[:n_out] + moved

    # mxmod's own operators are stored whole on disk (a later process runs them untraced)
    key = None
    if op_name != "Custom":
        key = program_key("nd", op_name, frozen_attrs, n_data, *(("train",) if is_train else ()))
    return wrap(xla_options.jit(run), key, size_estimate), attrs


def _array(x: Any, op_name: str, slot: str):
    if isinstance(x, NDArray):
        return x._data
    if isinstance(x, (np.ndarray, jax.Array)):
        return jnp.asarray(x)
    raise TypeError(f"mx.nd.{op_name}: input {slot!r} must be an NDArray, got {type(x).__name__}")


def _is_array(x: Any) -> bool:
    return isinstance(x, (NDArray, np.ndarray, jax.Array))


def nd_function(name: str):
    """The ``mx.nd.<name>`` function for operator ``name``."""
    op = get_op(name)

    def call(*args: Any, out: NDArray | None = None, name: str | None = None, **kwargs: Any):
        args, kwargs = positional_attrs(
            op, f"mx.nd.{op.name}", list(args), kwargs, _is_array, tail=("out", "name")
        )
        if out is None:  # given by position (MXNet's mx.nd functions end with out, name)
            out = kwargs.pop("out", None)
        kwargs.pop("name", None)
        outs_given = out if isinstance(out, (list, tuple)) else [out]
        if out is not None and not all(isinstance(t, NDArray) for t in outs_given):
            raise TypeError(
                f"mx.nd.{op.name}: out= must be an NDArray (or a list of them), got "
                f"{type(out).__name__} {out!r}"
            )
        named = {k: v for k, v in kwargs.items() if isinstance(v, (NDArray, np.ndarray, jax.Array))}
        # MXNet's generated functions pass an attribute given as None on as the string
        # 'None' (axis=None: flatten; an int attribute: a parse error) and a dtype of None
        # as np.dtype(None), float64; only an input given as None is left out.
        omitted = {k for k, v in kwargs.items() if v is None and k not in op.params}
        raw = {
            k: (np.dtype(v).name if k == "dtype" and not isinstance(v, str) else attr_str(v))
            for k, v in kwargs.items()
            if k not in named and k not in omitted
        }
        positional = (
            list(args[0])
            if op.variadic and len(args) == 1 and isinstance(args[0], (list, tuple))
            else list(args)
        )
        if op.variadic:
            raw[op.variadic] = str(len(positional))
        attrs = op.parse(raw, op.name)
        slots = op.input_names(attrs) + op.aux_names(attrs)
        # a None that names no input (of any configuration: ``bias`` when no_bias=True)
        # goes to the attribute parser in MXNet, which refuses it
        unknown = [] if callable(op.inputs) else sorted(omitted - set(slots))
        if unknown:
            op.parse({**raw, unknown[0]: "None"}, op.name)

        if len(positional) > len(slots):  # MXNet's (inputs..., out=None, name=None)
            if len(positional) == len(slots) + 1 and out is None:
                out = positional.pop()
            else:
                raise MXNetError(
                    f"mx.nd.{op.name} takes {len(slots)} inputs ({', '.join(slots)}) and then "
                    f"out=, got {len(positional)} arrays"
                )

        def missing(slot: str):
            raise MXNetError(f"mx.nd.{op.name} needs input {slot!r} (inputs: {', '.join(slots)})")

        given = match_inputs(f"mx.nd.{op.name}", slots, positional, named, missing)
        if given and set(raw) <= {op.variadic} and out is None and given[0].stype != "default":
            res = given[0]._sparse_unary(op.name, *given[1:])  # MXNet's sparse kernel
            if res is not NotImplemented:
                return res
        ins = [_array(x, op.name, slot) for x, slot in zip(given, slots)]
        n_data, train = len(op.input_names(attrs)), tape.is_training()
        fn, _ = _compiled(op.name, tuple(sorted(raw.items())), n_data, train)
        key = None
        if op.random:
            key = next_key()
        res = fn(ins, key)
        n_out = len(op.output_names(attrs))
        outs = [NDArray(o) for o in res[:n_out]]
        if len(res) > n_out:  # written if a backward runs through this call (recorded)
            tape.write_in_backward(given[n_data:], res[n_out:])
        if out is not None:
            targets = out if isinstance(out, (list, tuple)) else [out]
            for t, o in zip(targets, outs):
                t._set_data(o._data)
            return out
        return outs[0] if len(outs) == 1 else outs

    # inside autograd.record(): on the tape, and in training mode with train_mode=True
    return named(
        tape.recorded(call, f"mx.nd.{name}"),
        name,
        f"Imperative ``{op.name}`` (MXNet's ``mx.nd.{name}``), run in inference mode "
        "(training mode inside ``autograd.record()``/``train_mode()``).",
    )
