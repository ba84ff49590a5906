"""``moments`` (mean and variance over axes) and ``cumsum`` (MXNet 1.9.1's legacy-namespace
cumulative sum).

MXNet refuses ``moments`` without ``axes`` and ``cumsum`` with a negative axis; mxmod
takes every axis and counts a negative one from the end.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ._attrs import Param, optional, p_bool, p_dtype, p_int, p_shape
from ._def import OpDef, fail, np_dtype, register


def _moment_axes(a, ndim: int) -> tuple:
    axes = tuple(range(ndim)) if a.axes is None else tuple(a.axes)
    for ax in axes:
        if not -ndim <= ax < ndim:
            fail(f"axes={a.axes} has {ax}, out of range for an input of {ndim} dimensions")
    return tuple(sorted({ax % ndim for ax in axes}))


def _moments_shape(a, s):
    data = s[0]
    if data is None:
        return s, [None, None]
    axes = _moment_axes(a, len(data))
    if a.keepdims:
        out = tuple(1 if i in axes else d for i, d in enumerate(data))
    else:
        out = tuple(d for i, d in enumerate(data) if i not in axes) or (1,)
    return s, [out, out]


def _moments_lower(a, ins, aux, ctx):
    x = ins[0]
    axes = _moment_axes(a, x.ndim)
    xf = x.astype(jnp.float32) if x.dtype == jnp.float16 else x
    mean = jnp.mean(xf, axis=axes, keepdims=True)
    var = jnp.mean(jnp.square(xf - mean), axis=axes, keepdims=True)
    if not a.keepdims:
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes) or (1,)
        mean, var = mean.reshape(shape), var.reshape(shape)
    return [mean.astype(x.dtype), var.astype(x.dtype)]


register(
    OpDef(
        name="moments",
        params={"axes": Param(optional(p_shape), None), "keepdims": Param(p_bool, False)},
        outputs=("output0", "output1"),
        infer_shape=_moments_shape,
        lower=_moments_lower,
    )
)


def _cumsum_shape(a, s):
    data = s[0]
    if data is None:
        return s, [None]
    if a.axis is None:
        return s, [(int(np.prod(data)),)]
    if not -len(data) <= a.axis < len(data):
        fail(f"axis={a.axis} is out of range for an input of {len(data)} dimensions")
    return s, [tuple(data)]


def _cumsum_type(a, t):
    if a.dtype is not None:
        return t, [np_dtype(a.dtype)]
    return t, [t[0]]


def _cumsum_lower(a, ins, aux, ctx):
    x = ins[0]
    _cumsum_shape(a, [x.shape])  # mx.nd calls skip shape inference: its checks run here
    out = np_dtype(a.dtype) if a.dtype is not None else x.dtype
    if a.axis is None:
        return [jnp.cumsum(x.reshape(-1).astype(out))]
    return [jnp.cumsum(x.astype(out), axis=a.axis)]


register(
    OpDef(
        name="cumsum",
        params={"axis": Param(optional(p_int), None), "dtype": Param(optional(p_dtype), None)},
        inputs=("a",),
        infer_shape=_cumsum_shape,
        infer_type=_cumsum_type,
        lower=_cumsum_lower,
    )
)
