"""``_contrib_gradientmultiplier`` (``mx.sym.contrib.gradientmultiplier``): the identity in
the forward pass; the backward multiplies the incoming gradient by ``scalar`` (cast to the
gradient's dtype, as MXNet's ``_contrib_backward_gradientmultiplier`` does). A negative
``scalar`` gives a gradient reversal layer. ``is_int`` is MXNet's scalar-parameter flag; like
MXNet's CPU kernel, it changes nothing here.
"""

from __future__ import annotations

import jax.numpy as jnp

from ._attrs import Param, p_bool, p_float
from ._def import OpDef, register
from ._vjp import identity_with_grad
from .dense import same_shape

_scaled_grad = identity_with_grad(lambda g, scalar: g * scalar.astype(g.dtype))


def _lower(a, ins, aux, ctx):
    x = ins[0]
    return [_scaled_grad(x, jnp.asarray(a.scalar, dtype=x.dtype))]


register(
    OpDef(
        name="_contrib_gradientmultiplier",
        params={"scalar": Param(p_float, 1.0), "is_int": Param(p_bool, True)},
        infer_shape=same_shape,
        lower=_lower,
    )
)
