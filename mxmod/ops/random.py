"""Sampling operators with no inputs: ``_random_uniform``/``_random_normal``
(``mx.sym.random_uniform``/``random_normal``, ``mx.sym.random.uniform``/``normal``).

Each node draws from its own ``ctx.key()``, a fresh key per forward (as the Dropout mask),
so results are reproducible under ``mx.random.seed`` but not MXNet's generator's values.
"""

from __future__ import annotations

import jax
import numpy as np

from ._attrs import Param, choice, p_float, p_shape, p_str
from ._def import OpDef, register


def _dtype_or_float32(name: str):
    return np.dtype("float32" if name == "None" else name)


def _sampler(draw):
    def lower(a, ins, aux, ctx):
        shape = tuple(a.shape)
        if not all(shape):
            shape = tuple(ctx.out_shapes[0]) if ctx.out_shapes and ctx.out_shapes[0] else shape
        dtype = _dtype_or_float32(a.dtype)
        return [draw(a, ctx.key(), shape).astype(dtype)]

    return lower


def _register(name, aliases, params, draw):
    register(
        OpDef(
            name=name,
            aliases=aliases,
            params={
                **params,
                "shape": Param(p_shape, ()),
                "ctx": Param(p_str, ""),
                "dtype": Param(choice("None", "float16", "float32", "float64"), "None"),
            },
            inputs=(),
            random=True,
            infer_shape=lambda a, s: (s, [tuple(a.shape) if all(a.shape) else None]),
            infer_type=lambda a, t: (t, [_dtype_or_float32(a.dtype)]),
            lower=_sampler(draw),
        )
    )


_register(
    "_random_uniform",
    ("random_uniform", "uniform"),
    {"low": Param(p_float, 0.0), "high": Param(p_float, 1.0)},
    lambda a, key, shape: jax.random.uniform(key, shape, minval=a.low, maxval=a.high),
)
_register(
    "_random_normal",
    ("random_normal", "normal"),
    {"loc": Param(p_float, 0.0), "scale": Param(p_float, 1.0)},
    lambda a, key, shape: a.loc + a.scale * jax.random.normal(key, shape),
)
