"""FullyConnected and Activation."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from ._attrs import Param, choice, int_at_least, p_bool
from ._def import OpDef, fail, register


def _fc_inputs(a):
    return ["data", "weight"] if a.no_bias else ["data", "weight", "bias"]


def _fc_shape(a, s):
    data = s[0]
    if data is None:
        return s, [None]
    if a.flatten:
        if len(data) < 1:
            fail(f"data must have at least 1 dimension, got {data}")
        in_dim = math.prod(data[1:])
        out = (data[0], a.num_hidden)
    else:
        in_dim = data[-1]
        out = tuple(data[:-1]) + (a.num_hidden,)
    shapes = [data, (a.num_hidden, in_dim)]
    if not a.no_bias:
        shapes.append((a.num_hidden,))
    return shapes, [out]


def _fc_lower(a, ins, aux, ctx):
    x, w = ins[0], ins[1]
    if a.flatten:
        x = x.reshape(x.shape[0], -1)
    # contract x's last axis with w's second: no transposed copy of the weight (XLA built
    # one element by element for constant weights, e.g. an exported StableHLO program)
    y = jnp.tensordot(x, w, axes=((x.ndim - 1,), (1,)))
    if not a.no_bias:
        y = y + ins[2]
    return [y]


register(
    OpDef(
        name="FullyConnected",
        params={
            "num_hidden": Param(int_at_least(1)),
            "no_bias": Param(p_bool, False),
            "flatten": Param(p_bool, True),
        },
        inputs=_fc_inputs,
        signature_inputs=("data", "weight", "bias"),
        infer_shape=_fc_shape,
        lower=_fc_lower,
    )
)

_ACTS = {
    "relu": jax.nn.relu,
    "sigmoid": jax.nn.sigmoid,
    "tanh": jnp.tanh,
    "softrelu": jax.nn.softplus,
    "softsign": lambda x: x / (1 + jnp.abs(x)),
}


def same_shape(a, s):
    """Elementwise rule: output shape equals the (first) input shape."""
    known = next((x for x in s if x is not None), None)
    if known is None:
        return s, [None]
    return [known] * len(s), [known]


register(
    OpDef(
        name="Activation",
        params={"act_type": Param(choice(*_ACTS))},
        infer_shape=same_shape,
        lower=lambda a, ins, aux, ctx: [_ACTS[a.act_type](ins[0])],
    )
)
