"""Operators that build or rearrange arrays without arithmetic: the constant ranges
``_arange``/``_linspace``/``_eye`` (computed on the host), ``depth_to_space``/
``space_to_depth``, ``diag`` and ``_identity_with_attr_like_rhs`` (a shape tie)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ._attrs import REQUIRED, Param, optional, p_bool, p_dtype, p_float, p_int, p_str
from ._def import OpDef, fail, np_dtype, register
from .elemwise import merge_shapes
from .shape import _lower1, _unary, first_type


def _like_rhs_shape(a, s):
    both = merge_shapes(s, "_identity_with_attr_like_rhs: lhs and rhs")
    return [both, both], [both]


register(
    OpDef(
        name="_identity_with_attr_like_rhs",
        inputs=("lhs", "rhs"),
        infer_shape=_like_rhs_shape,
        infer_type=first_type,
        lower=lambda a, ins, aux, ctx: [ins[0]],
    )
)


# ------------------------------------------------------ ranges (host-computed constants)
def _arange_host(a):
    if a.infer_range:
        raise NotImplementedError(
            "arange(infer_range=True) is not supported by mxmod; give stop explicitly"
        )
    start, stop = (0.0, a.start) if a.stop is None else (a.start, a.stop)
    if a.step == 0 or a.repeat < 1:
        fail(f"arange: step must not be 0 and repeat must be >= 1 (got {a.step}, {a.repeat})")
    vals = np.arange(start, stop, a.step, dtype=np.float64)
    return np.repeat(vals, a.repeat).astype(np_dtype(a.dtype))


def _linspace_host(a):
    vals = np.linspace(a.start, a.stop, a.num, endpoint=a.endpoint, dtype=np.float64)
    return vals.astype(np_dtype(a.dtype))


def _eye_host(a):
    return np.eye(a.N, a.M or None, a.k, dtype=np_dtype(a.dtype))


_RANGE_COMMON = {"ctx": Param(p_str, ""), "dtype": Param(p_dtype, "float32")}
for _name, _host, _params in (
    (
        "_arange",
        _arange_host,
        {
            "start": Param(p_float, REQUIRED),
            "stop": Param(optional(p_float), None),
            "step": Param(p_float, 1.0),
            "repeat": Param(p_int, 1),
            "infer_range": Param(p_bool, False),
        },
    ),
    (
        "_linspace",
        _linspace_host,
        {
            "start": Param(p_float, REQUIRED),
            "stop": Param(p_float, REQUIRED),
            "num": Param(p_int, REQUIRED),
            "endpoint": Param(p_bool, True),
        },
    ),
    (
        "_eye",
        _eye_host,
        {"N": Param(p_int, REQUIRED), "M": Param(p_int, 0), "k": Param(p_int, 0)},
    ),
):
    register(
        OpDef(
            name=_name,
            params={**_RANGE_COMMON, **_params},
            positional=(*_params, *_RANGE_COMMON),
            inputs=(),
            infer_shape=lambda a, s, host=_host: (s, [host(a).shape]),
            infer_type=lambda a, t: (t, [np_dtype(a.dtype)]),
            lower=lambda a, ins, aux, ctx, host=_host: [jnp.asarray(host(a))],
        )
    )


# ---------------------------------------------------- depth_to_space / space_to_depth
def _blocks(a, s, name):
    if len(s) != 4:
        fail(f"{name}: data must be 4-D (N, C, H, W), got {tuple(s)}")
    b = a.block_size
    if b < 1:
        fail(f"{name}: block_size must be positive, got {b}")
    return b


def _d2s_shape(a, s):
    n, c, h, w = s
    b = _blocks(a, s, "depth_to_space")
    if c % (b * b):
        fail(f"depth_to_space: channels {c} must be a multiple of block_size^2 = {b * b}")
    return (n, c // (b * b), h * b, w * b)


def _s2d_shape(a, s):
    n, c, h, w = s
    b = _blocks(a, s, "space_to_depth")
    if h % b or w % b:
        fail(f"space_to_depth: height {h} and width {w} must be multiples of block_size {b}")
    return (n, c * b * b, h // b, w // b)


def _d2s(a, x):
    out = _d2s_shape(a, x.shape)  # validates first (imperative calls skip shape inference)
    n, c, h, w = x.shape
    b = a.block_size
    return x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2).reshape(out)


def _s2d(a, x):
    out = _s2d_shape(a, x.shape)
    n, c, h, w = x.shape
    b = a.block_size
    return x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4).reshape(out)


for _name, _shape_fn, _fn in (
    ("depth_to_space", _d2s_shape, _d2s),
    ("space_to_depth", _s2d_shape, _s2d),
):
    register(
        OpDef(
            name=_name,
            params={"block_size": Param(p_int, REQUIRED)},
            infer_shape=_unary(_shape_fn),
            lower=_lower1(_fn),
        )
    )


# ------------------------------------------------------------------------ diag
def _diag_shape(a, s):
    if len(s) == 1:
        n = s[0] + abs(a.k)
        return (n, n)
    if len(s) < 2:
        fail(f"diag: data must have at least 1 dimension, got {tuple(s)}")
    return tuple(jax.eval_shape(lambda x: _diag(a, x), jax.ShapeDtypeStruct(s, jnp.float32)).shape)


def _diag(a, x):
    if x.ndim == 1:
        return jnp.diag(x, k=a.k)
    return jnp.diagonal(x, offset=a.k, axis1=a.axis1, axis2=a.axis2)


register(
    OpDef(
        name="diag",
        params={"k": Param(p_int, 0), "axis1": Param(p_int, 0), "axis2": Param(p_int, 1)},
        infer_shape=_unary(_diag_shape),
        lower=_lower1(_diag),
    )
)
