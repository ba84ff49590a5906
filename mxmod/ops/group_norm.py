"""``GroupNorm``: normalisation over groups of channels (MXNet 1.9.1's ``nn/group_norm``).

The channels (axis 1) split into ``num_groups`` groups; each sample's group is normalised
with its own mean and biased variance. In MXNet 1.9.1 ``gamma`` and ``beta`` hold one value
per *group*, shape ``(num_groups,)`` (not per channel), and the hidden outputs ``mean`` and
``std`` (``sqrt(var + eps)``) are ``(batch, num_groups)``. Every input and output shares one
dtype; float16/bfloat16 data is normalised in float32. MXNet's backward ignores head
gradients on ``mean``/``std``, so they leave the graph through ``stop_gradient``; the data,
gamma and beta gradients are JAX's derivative of the forward, which is MXNet's formula.
"""

from __future__ import annotations

import jax.numpy as jnp

from ._attrs import Param, int_at_least, p_bool, p_float
from ._def import OpDef, fail, register
from .norm import _f32, _sg


def _divisors(c: int) -> str:
    return ", ".join(str(d) for d in range(1, c + 1) if c % d == 0)


def _shape(a, s):
    data = s[0]
    g = a.num_groups
    if data is None:
        return [None, (g,), (g,)], [None, None, None]
    if len(data) < 3:
        fail(
            f"data {tuple(data)} must have at least 3 dims (batch, channel, spatial...); "
            f"reshape it, e.g. to {tuple(data) + (1,)}"
        )
    c = data[1]
    if c and c % g:
        fail(
            f"data {tuple(data)} has {c} channels (axis 1), which num_groups={g} does not "
            f"divide; use a num_groups that divides {c} ({_divisors(c)})"
        )
    stat = (data[0], g)
    return [tuple(data), (g,), (g,)], [tuple(data), stat, stat]


def _type(a, t):
    d = next((x for x in t if x is not None), None)
    if d is None:
        return t, [None] * 3
    return [d if x is None else x for x in t], [d] * 3


def _lower(a, ins, aux, ctx):
    x, gamma, beta = ins
    (_, want, _), _ = _shape(a, [x.shape, None, None])  # mx.nd calls skip inference
    for name, v in (("gamma", gamma), ("beta", beta)):
        if v.shape != want:
            fail(f"{name} given {v.shape} but data {x.shape} needs {want} (one per group)")
    n, g = x.shape[0], a.num_groups
    xg = _f32(x).reshape((n, g, -1))
    mean = jnp.mean(xg, axis=-1, keepdims=True)
    std = jnp.sqrt(jnp.mean(jnp.square(xg - mean), axis=-1, keepdims=True) + a.eps)
    y = (xg - mean) / std * _f32(gamma).reshape(1, g, 1) + _f32(beta).reshape(1, g, 1)
    return [
        y.reshape(x.shape).astype(x.dtype),
        _sg(mean).reshape(n, g).astype(x.dtype),
        _sg(std).reshape(n, g).astype(x.dtype),
    ]


register(
    OpDef(
        name="GroupNorm",
        params={
            "num_groups": Param(int_at_least(1), 1),
            "eps": Param(p_float, 1e-5),
            "output_mean_var": Param(p_bool, False),
        },
        inputs=("data", "gamma", "beta"),
        outputs=lambda a: ["output", "mean", "std"] if a.output_mean_var else ["output"],
        num_outputs_total=lambda a: 3,
        infer_shape=_shape,
        infer_type=_type,
        lower=_lower,
    )
)
