"""Mixed-precision casts: ``amp_cast`` and ``amp_multicast`` (MXNet 1.9.1 names, attributes
and outputs), the nodes ``mx.contrib.amp.convert_symbol`` inserts.

Unlike ``Cast``, both leave non-float inputs (integer labels, indices) untouched. The
gradient of a cast is cast back to the input's type (JAX's ``astype`` rule, as MXNet's).
"""

from __future__ import annotations

import jax.numpy as jnp

from ._attrs import REQUIRED, Param, p_bool, p_dtype, p_int
from ._def import OpDef, np_dtype, register
from ._vjp import identity_with_grad
from .dense import same_shape

_FLOATS = ("float16", "bfloat16", "float32", "float64")


def _is_float(d) -> bool:
    return d is not None and np_dtype(d).name in _FLOATS


def _cast_type(a, dtypes):
    d = dtypes[0]
    if d is None:
        return dtypes, [None]
    return dtypes, [np_dtype(a.dtype) if _is_float(d) else d]


def _cast_lower(a, ins, aux, ctx):
    x = ins[0]
    if jnp.issubdtype(x.dtype, jnp.floating):
        return [x.astype(np_dtype(a.dtype))]
    return [x]


register(
    OpDef(
        name="amp_cast",
        params={"dtype": Param(p_dtype, REQUIRED)},
        infer_shape=same_shape,
        infer_type=_cast_type,
        lower=_cast_lower,
    )
)


def _n(a) -> int:
    return int(a.num_outputs)


def _widest(a, dtypes):
    """The float type all float inputs are cast to: the widest (or, with ``cast_narrow``,
    the narrowest) of them; None while one is unknown."""
    floats = [np_dtype(d) for d in dtypes if d is not None and _is_float(d)]
    if any(d is None for d in dtypes) or not floats:
        return None
    order = {"float16": 0, "bfloat16": 0, "float32": 1, "float64": 2}
    pick = min if a.cast_narrow else max
    return pick(floats, key=lambda d: order[d.name])


def _multi_type(a, dtypes):
    w = _widest(a, dtypes)
    if w is None:
        return dtypes, [d if d is not None and not _is_float(d) else None for d in dtypes]
    return dtypes, [w if _is_float(d) else d for d in dtypes]


def _multi_shape(a, s):
    return s, list(s)


def _multi_lower(a, ins, aux, ctx):
    floats = [x.dtype for x in ins if jnp.issubdtype(x.dtype, jnp.floating)]
    if not floats:
        return list(ins)

    def bits(d):
        return jnp.finfo(d).bits

    target = (min if a.cast_narrow else max)(floats, key=bits)
    return [x.astype(target) if jnp.issubdtype(x.dtype, jnp.floating) else x for x in ins]


register(
    OpDef(
        name="amp_multicast",
        params={"num_outputs": Param(p_int, REQUIRED), "cast_narrow": Param(p_bool, False)},
        inputs=lambda a: [f"data_{i}" for i in range(_n(a))],
        outputs=lambda a: [f"output{i}" for i in range(_n(a))],
        infer_shape=_multi_shape,
        infer_type=_multi_type,
        lower=_multi_lower,
    )
)


# ------------------------------------------------------------------ loss scaling (mxmod)
_scale_grad = identity_with_grad(lambda g, scale: g * scale.reshape(()).astype(g.dtype))


def _scale_grad_shape(a, s):
    return [s[0], (1,)], [s[0]]


def _scale_grad_type(a, dtypes):
    return [dtypes[0], np_dtype("float32")], [dtypes[0]]


# mxmod-only (MXNet has no such operator): forward is the identity; backward multiplies
# the gradient by ``scale``. ``amp.insert_loss_scale`` puts one before each loss head so a
# compiled step can scale the backward pass by a traced loss scale.
register(
    OpDef(
        name="_amp_scale_grad",
        inputs=("data", "scale"),
        infer_shape=_scale_grad_shape,
        infer_type=_scale_grad_type,
        lower=lambda a, ins, aux, ctx: [_scale_grad(ins[0], ins[1])],
    )
)
