"""Quantization operators of MXNet 1.9.1 (``mx.nd.contrib``/``mx.sym.contrib``):
``quantize``, ``quantize_v2``, ``dequantize`` and ``requantize`` (JSON names
``_contrib_<name>``).

A range is symmetric about 0 with ``real_range = max(|min|, |max|)``; values round half to
even and saturate. The scales are those of MXNet's CPU build (oneDNN), measured on it
(``tests/fixtures/gen_quantize_goldens.py``): ``quantize`` 127 (int8) and 255 (uint8) per
``real_range``, ``quantize_v2`` and ``dequantize`` 127.5 and 255.5, ``requantize`` 127 and
255. uint8 keeps only the non-negative half. ``quantize_v2`` without a calibrated range
uses the data's own; so does ``requantize`` (where MXNet's oneDNN kernel returns a
swapped, sign-flipped range: mxmod quantizes with the data's range instead).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ._attrs import Param, choice, optional, p_float
from ._def import OpDef, fail, register

INT32_MAX = 2147483647.0
_TYPES = {"int8": (jnp.int8, -128, 127), "uint8": (jnp.uint8, 0, 255)}


def _real_range(lo, hi):
    return jnp.maximum(jnp.abs(lo), jnp.abs(hi)).astype(jnp.float32)


def _saturate(x, scale, out_type: str):
    dtype, lo, hi = _TYPES[out_type]
    return jnp.clip(jnp.rint(x * scale), lo, hi).astype(dtype)


def _scale(levels: float, real_range):
    """``levels / real_range``; 0 for an all-zero range (every value quantizes to 0)."""
    safe = jnp.where(real_range > 0, real_range, 1.0)
    return jnp.where(real_range > 0, jnp.float32(levels) / safe, 0.0).astype(jnp.float32)


def _scalar(x):
    return jnp.reshape(x, (-1,))[0].astype(jnp.float32)


def _range_out(x):
    return jnp.reshape(x.astype(jnp.float32), (1,))


def _ranged_shape(a, s):
    """Data of any shape and two (1,) range inputs; the data's shape and two (1,) ranges."""
    data = s[0]
    for name, r in zip(("min_range", "max_range"), s[1:3]):
        if r is not None and tuple(r) != (1,):
            fail(f"{name} must have shape (1,), got {tuple(r)}")
    return [data, (1,), (1,)], [None if data is None else tuple(data), (1,), (1,)]


def _check_type(op: str, got, allowed: tuple) -> None:
    if got is not None and np.dtype(got).name not in allowed:
        fail(
            f"{op}: the data must be {' or '.join(allowed)}, got {np.dtype(got).name} "
            f"(cast it, e.g. data.astype('{allowed[0]}'))"
        )


# ------------------------------------------------------------------- quantize
def _quantize_lower(a, ins, aux, ctx):
    x, lo, hi = ins
    _check_type("quantize", x.dtype, ("float32",))  # mx.nd calls skip type inference
    real = _real_range(_scalar(lo), _scalar(hi))
    levels = 127.0 if a.out_type == "int8" else 255.0
    out = _saturate(x, _scale(levels, real), a.out_type)
    if a.out_type == "int8":
        return [out, _range_out(-real), _range_out(real)]
    return [out, _range_out(_scalar(lo)), _range_out(_scalar(hi))]


def _quantize_type(a, t):
    _check_type("quantize", t[0], ("float32",))
    f32 = np.dtype(np.float32)
    return [f32, f32, f32], [np.dtype(a.out_type), f32, f32]


register(
    OpDef(
        name="_contrib_quantize",
        inputs=("data", "min_range", "max_range"),
        outputs=("output0", "output1", "output2"),
        params={"out_type": Param(choice("int8", "uint8"), "uint8")},
        infer_shape=_ranged_shape,
        infer_type=_quantize_type,
        lower=_quantize_lower,
    )
)


# ---------------------------------------------------------------- quantize_v2
def _calibrated(a) -> bool:
    given = (a.min_calib_range is not None, a.max_calib_range is not None)
    if given[0] != given[1]:
        fail("quantize_v2: give both min_calib_range and max_calib_range, or neither")
    return given[0]


def _v2_type(a) -> str:
    if a.out_type != "auto":
        return a.out_type
    # MXNet: uint8 when the calibrated range is non-negative, int8 otherwise
    return "uint8" if _calibrated(a) and a.min_calib_range >= 0 else "int8"


def _quantize_v2_lower(a, ins, aux, ctx):
    _check_type("quantize_v2", ins[0].dtype, ("float32",))
    x = ins[0]
    if _calibrated(a):
        lo, hi = jnp.float32(a.min_calib_range), jnp.float32(a.max_calib_range)
    else:
        lo, hi = jnp.min(x), jnp.max(x)
    real = _real_range(lo, hi)
    out_type = _v2_type(a)
    levels = 127.5 if out_type == "int8" else 255.5
    out = _saturate(x, _scale(levels, real), out_type)
    if out_type == "int8":
        return [out, _range_out(-real), _range_out(real)]
    return [out, _range_out(lo), _range_out(hi)]


def _quantize_v2_type(a, t):
    _check_type("quantize_v2", t[0], ("float32",))
    f32 = np.dtype(np.float32)
    return [f32], [np.dtype(_v2_type(a)), f32, f32]


register(
    OpDef(
        name="_contrib_quantize_v2",
        outputs=("output0", "output1", "output2"),
        params={
            "out_type": Param(choice("auto", "int8", "uint8"), "int8"),
            "min_calib_range": Param(optional(p_float), None),
            "max_calib_range": Param(optional(p_float), None),
        },
        infer_shape=lambda a, s: (s, [None if s[0] is None else tuple(s[0]), (1,), (1,)]),
        infer_type=_quantize_v2_type,
        lower=_quantize_v2_lower,
    )
)


# ------------------------------------------------------------------ dequantize
def _dequantize_lower(a, ins, aux, ctx):
    q, lo, hi = ins
    _check_type("dequantize", q.dtype, ("int8", "uint8"))
    levels = 127.5 if q.dtype == jnp.int8 else 255.5
    real = _real_range(_scalar(lo), _scalar(hi))
    return [q.astype(jnp.float32) * (real / jnp.float32(levels))]


def _dequantize_shape(a, s):
    ins, outs = _ranged_shape(a, s)
    return ins, outs[:1]


def _dequantize_type(a, t):
    _check_type("dequantize", t[0], ("int8", "uint8"))
    f32 = np.dtype(np.float32)
    return [t[0], f32, f32], [f32]


register(
    OpDef(
        name="_contrib_dequantize",
        inputs=("data", "min_range", "max_range"),
        params={"out_type": Param(choice("float32"), "float32")},
        infer_shape=_dequantize_shape,
        infer_type=_dequantize_type,
        lower=_dequantize_lower,
    )
)


# ------------------------------------------------------------------ requantize
def _requantize_lower(a, ins, aux, ctx):
    q, lo, hi = ins
    _check_type("requantize", q.dtype, ("int32",))
    real_in = _real_range(_scalar(lo), _scalar(hi))
    x = q.astype(jnp.float32) * (real_in / jnp.float32(INT32_MAX))
    if _calibrated(a):
        lo_out, hi_out = jnp.float32(a.min_calib_range), jnp.float32(a.max_calib_range)
    else:
        lo_out, hi_out = jnp.min(x), jnp.max(x)
    real = _real_range(lo_out, hi_out)
    levels = 127.0 if a.out_type == "int8" else 255.0
    out = _saturate(x, _scale(levels, real), a.out_type)
    low = -real if a.out_type == "int8" else jnp.float32(0)
    return [out, _range_out(low), _range_out(real)]


def _requantize_type(a, t):
    _check_type("requantize", t[0], ("int32",))
    f32 = np.dtype(np.float32)
    return [np.dtype(np.int32), f32, f32], [np.dtype(a.out_type), f32, f32]


register(
    OpDef(
        name="_contrib_requantize",
        inputs=("data", "min_range", "max_range"),
        outputs=("output0", "output1", "output2"),
        params={
            "out_type": Param(choice("int8", "uint8"), "int8"),
            "min_calib_range": Param(optional(p_float), None),
            "max_calib_range": Param(optional(p_float), None),
        },
        infer_shape=_ranged_shape,
        infer_type=_requantize_type,
        lower=_requantize_lower,
    )
)
