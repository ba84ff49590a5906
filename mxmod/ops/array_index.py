"""Flat <-> multi-dimensional indices: ``ravel_multi_index`` and ``unravel_index``
(MXNet's ``_ravel_multi_index``/``_unravel_index``).

Indices are computed in int32 and returned in the input's dtype (float32 by default, as
MXNet). ``shape`` may start with -1 (unbounded first dimension); indices out of range are
not checked, as in MXNet.
"""

from __future__ import annotations

import jax.numpy as jnp

from ._attrs import Param, REQUIRED, p_shape
from ._def import OpDef, fail, register


def _strides(shape: tuple) -> list:
    if any(d < 0 for d in shape[1:]) or any(d == 0 for d in shape):
        fail(f"shape={shape}: every dimension must be positive (only the first may be -1)")
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= max(d, 1)
    return strides[::-1]


def _ravel_shape(a, s):
    data = s[0]
    if data is None:
        return s, [None]
    if data[0] != len(a.shape):
        fail(f"data has {data[0]} index rows for a shape of {len(a.shape)} dimensions {a.shape}")
    return s, [tuple(data[1:])]


def _ravel_lower(a, ins, aux, ctx):
    x = ins[0]
    _ravel_shape(a, [x.shape])  # mx.nd calls skip shape inference: its checks run here
    strides = _strides(tuple(a.shape))
    flat = sum(x[i].astype(jnp.int32) * st for i, st in enumerate(strides))
    return [flat.astype(x.dtype)]


def _unravel_lower(a, ins, aux, ctx):
    x = ins[0]
    strides = _strides(tuple(a.shape))
    flat = x.astype(jnp.int32)
    rows = []
    for i, st in enumerate(strides):
        q = flat // st
        rows.append(q if i == 0 and a.shape[0] < 0 else q % a.shape[i])
    return [jnp.stack(rows).astype(x.dtype)]


register(
    OpDef(
        name="_ravel_multi_index",
        aliases=("ravel_multi_index",),
        params={"shape": Param(p_shape, REQUIRED)},
        infer_shape=_ravel_shape,
        lower=_ravel_lower,
    )
)
register(
    OpDef(
        name="_unravel_index",
        aliases=("unravel_index",),
        params={"shape": Param(p_shape, REQUIRED)},
        infer_shape=lambda a, s: (s, [None if s[0] is None else (len(a.shape),) + tuple(s[0])]),
        lower=_unravel_lower,
    )
)
