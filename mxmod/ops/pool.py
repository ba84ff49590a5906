"""Pooling and UpSampling (MXNet's ``Pooling``/``UpSampling``).

Pooling is one ``jax.lax.reduce_window`` (max/sum, or sum of powers for ``lp``); average
pooling divides by a divisor table computed once from the static shapes, following MXNet's
``count_include_pad`` rule. UpSampling ``nearest`` repeats pixels; ``bilinear`` is MXNet's
fixed depthwise Deconvolution with a learnable ``weight`` (initialised by ``Bilinear``).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ..base import MXNetError
from ._attrs import Param, choice, optional, p_bool, p_int, p_shape, p_shape_nonzero, p_uint64
from ._def import OpDef, register
from .conv import deconv, join_layout, layout_of, split_layout

_POOL_LAYOUTS = ("NCW", "NCHW", "NCDHW", "NWC", "NHWC", "NDHWC")


def _bad(msg: str) -> None:
    raise MXNetError(msg)


def _geometry(a, shape: tuple):
    """(layout, kernel, stride, pad, spatial, out_spatial) for data ``shape``."""
    if a.global_pool:
        nd = len(shape) - 2
        if nd not in (1, 2, 3):
            _bad(f"data {shape} must be 3-D, 4-D or 5-D (batch, channel, 1-3 spatial dims)")
        layout = layout_of(a.layout, nd, "data")
        _, _, sp = split_layout(shape, layout)
        return layout, sp, (1,) * nd, (0,) * nd, sp, (1,) * nd
    if not a.kernel:
        _bad("kernel is required unless global_pool=True; pass e.g. kernel=(2, 2)")
    nd = len(a.kernel)
    if nd not in (1, 2, 3):
        _bad(f"kernel {a.kernel} must have 1, 2 or 3 dimensions")
    layout = layout_of(a.layout, nd)
    if len(shape) != nd + 2:
        _bad(
            f"data {shape} must be {nd + 2}-D for kernel {a.kernel} "
            f"(batch, channel and {nd} spatial dims in layout {layout})"
        )
    stride = tuple(a.stride) or (1,) * nd
    pad = tuple(a.pad) or (0,) * nd
    for name, v in (("stride", stride), ("pad", pad)):
        if len(v) != nd:
            _bad(f"{name} {v} must have as many dimensions as kernel {a.kernel}")
    if any(s <= 0 for s in stride) or any(k <= 0 for k in a.kernel):
        _bad(f"kernel {a.kernel} and stride {stride} must be positive")
    _, _, sp = split_layout(shape, layout)
    out = []
    for x, k, s, p in zip(sp, a.kernel, stride, pad):
        if a.pooling_convention == "same":
            if p:
                _bad(f"pooling_convention='same' does not use pad; got pad {pad}, pass pad=(0,...)")
            out.append(-(-x // s) if x else 0)
            continue
        if x and k > x + 2 * p:
            _bad(
                f"kernel {a.kernel} does not fit input {sp} padded by {pad}: each kernel dim "
                f"must be <= input dim + 2*pad"
            )
        if not x:
            out.append(0)
        elif a.pooling_convention == "valid":
            out.append((x + 2 * p - k) // s + 1)
        else:
            out.append(-(-(x + 2 * p - k) // s) + 1)
    return layout, tuple(a.kernel), stride, pad, sp, tuple(out)


def pool_shape(a, s):
    data = s[0]
    if data is None:
        return s, [None]
    data = tuple(data)
    if a.pool_type == "lp" and a.p_value is None:
        _bad("pool_type='lp' needs p_value (1, 2 or 3)")
    layout, _, _, _, _, out = _geometry(a, data)
    n, c, _ = split_layout(data, layout)
    return [data], [join_layout(n, c, out, layout)] * _n_pool_outputs(a)


def _n_pool_outputs(a) -> int:
    """MXNet's oneDNN build gives channel-first, non-global max pooling a hidden second
    output (its workspace); JSON ``node_row_ptr`` counts it, so mxmod does too."""
    first = a.layout is None or a.layout[1] == "C"
    return 2 if a.pool_type == "max" and 1 <= len(a.kernel) <= 3 and first else 1


def _divisor(sp, kernel, stride, pad, out, include_pad: bool) -> np.ndarray:
    """MXNet's avg-pool window sizes (pad cells count if ``include_pad``, cells past the pad
    of the 'full' convention never do)."""
    per_dim = []
    for x, k, s, p, o in zip(sp, kernel, stride, pad, out):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, x + p)
        if not include_pad:
            start, end = np.maximum(start, 0), np.minimum(end, x)
        per_dim.append(np.maximum(end - start, 1))
    div = per_dim[0]
    for d in per_dim[1:]:
        div = np.multiply.outer(div, d)
    return div


def pool_lower(a, ins, aux, ctx):
    x = ins[0]
    layout, kernel, stride, pad, sp, out = _geometry(a, tuple(x.shape))
    c_ax = layout.index("C")
    sp_axes = [i for i in range(x.ndim) if i not in (0, c_ax)]

    def full_dims(vals, fill):
        it = iter(vals)
        return tuple(next(it) if i in sp_axes else fill for i in range(x.ndim))

    padding = []
    for xx, k, s, p, o in zip(sp, kernel, stride, pad, out):
        hi = max(0, (o - 1) * s + k - (xx + p))  # 'full'/'same' windows past the end
        padding.append((p, hi))
    win, strides = full_dims(kernel, 1), full_dims(stride, 1)
    it = iter(padding)
    pads = tuple(next(it) if i in sp_axes else (0, 0) for i in range(x.ndim))

    def window(v, init, op):
        return jax.lax.reduce_window(v, np.array(init, v.dtype), op, win, strides, pads)

    if a.pool_type == "max":
        low = -np.inf if jnp.issubdtype(x.dtype, jnp.floating) else jnp.iinfo(x.dtype).min
        y = window(x, low, jax.lax.max)
    elif a.pool_type == "sum":
        y = window(x, 0, jax.lax.add)
    elif a.pool_type == "avg":
        include = True if a.count_include_pad is None else a.count_include_pad
        div = _divisor(sp, kernel, stride, pad, out, include)
        shape = full_dims(div.shape, 1)
        y = window(x, 0, jax.lax.add) / jnp.asarray(div.reshape(shape), x.dtype)
    else:
        pv = a.p_value
        if pv not in (1, 2, 3):
            _bad(f"Pooling {ctx.node_name!r}: p_value {pv} is not supported; use 1, 2 or 3")
        y = window(x**pv if pv > 1 else x, 0, jax.lax.add)
        y = {1: lambda v: v, 2: jnp.sqrt, 3: jnp.cbrt}[pv](y)
    if _n_pool_outputs(a) == 2:
        return [y, jax.lax.stop_gradient(y)]  # stands in for MXNet's hidden workspace
    return [y]


def pool_check(a) -> str | None:
    """MXNet's Pooling attribute parser: a 1-3-D kernel, required unless global_pool."""
    if len(a.kernel) > 3:
        return f"kernel {a.kernel} has {len(a.kernel)} dimensions; pooling is 1-, 2- or 3-D"
    if not a.kernel and not a.global_pool:
        return "kernel is required unless global_pool=True; pass e.g. kernel=(2, 2)"
    return None


register(
    OpDef(
        name="Pooling",
        params={
            "kernel": Param(p_shape_nonzero, ()),
            "pool_type": Param(choice("avg", "lp", "max", "sum"), "max"),
            "global_pool": Param(p_bool, False),
            "cudnn_off": Param(p_bool, False),
            "pooling_convention": Param(choice("full", "same", "valid"), "valid"),
            "stride": Param(p_shape_nonzero, ()),
            "pad": Param(p_shape, ()),
            "p_value": Param(optional(p_int), None),
            "count_include_pad": Param(optional(p_bool), None),
            "layout": Param(optional(choice(*_POOL_LAYOUTS)), None),
        },
        num_outputs_total=_n_pool_outputs,
        infer_shape=pool_shape,
        lower=pool_lower,
        infer_type=lambda a, t: (t, [t[0]] * _n_pool_outputs(a)),
        check=pool_check,
    )
)


# ------------------------------------------------------------------- UpSampling
def _n_args(a) -> int:
    n = a.get("num_args")
    return 1 if n is None else p_int(n)


def _up_inputs(a):
    if a.sample_type == "bilinear":
        return ["data", "weight"]
    return [f"arg{i}" for i in range(_n_args(a))]


def _bilinear_geom(scale: int):
    k = 2 * scale - scale % 2
    return k, scale, int(math.ceil((scale - 1) / 2.0))


def _up_shape(a, s):
    if a.scale <= 0:
        _bad(f"scale {a.scale} must be a positive integer")
    data = s[0]
    if data is None:
        return s, [None]
    if len(data) != 4:
        _bad(f"data {tuple(data)} must be 4-D (batch, channel, height, width)")
    n, c, h, w = data
    oh, ow = h * a.scale, w * a.scale
    if a.sample_type == "bilinear":
        k, _, _ = _bilinear_geom(a.scale)
        return [tuple(data), (c, 1, k, k)], [(n, c, oh, ow)]
    shapes, channels = [tuple(data)], c
    for i, sh in enumerate(s[1:], start=1):
        if sh is None:
            return s, [None]
        if len(sh) != 4 or oh % sh[2] or ow % sh[3] or sh[2] == 0 or sh[3] == 0:
            _bad(
                f"input arg{i} {tuple(sh)} must be 4-D with height/width dividing the output "
                f"size {(oh, ow)}"
            )
        if a.multi_input_mode == "sum" and sh[1] != c:
            _bad(f"multi_input_mode='sum' needs equal channels; arg0 has {c}, arg{i} has {sh[1]}")
        if a.multi_input_mode == "concat":
            channels += sh[1]
        shapes.append(tuple(sh))
    return shapes, [(n, channels, oh, ow)]


def _up_lower(a, ins, aux, ctx):
    x0 = ins[0]
    if a.sample_type == "bilinear":
        k, st, p = _bilinear_geom(a.scale)
        c = x0.shape[1]
        return [deconv(x0, ins[1], "NCHW", (k, k), (st, st), (1, 1), (p, p), (0, 0), c)]
    oh, ow = x0.shape[2] * a.scale, x0.shape[3] * a.scale
    ups = [
        jnp.repeat(jnp.repeat(x, oh // x.shape[2], axis=2), ow // x.shape[3], axis=3) for x in ins
    ]
    if a.multi_input_mode == "sum":
        y = ups[0]
        for u in ups[1:]:
            y = y + u
        return [y]
    return [jnp.concatenate(ups, axis=1) if len(ups) > 1 else ups[0]]


register(
    OpDef(
        name="UpSampling",
        params={
            "scale": Param(p_int),
            "num_filter": Param(p_int, 0),
            "sample_type": Param(choice("bilinear", "nearest")),
            "multi_input_mode": Param(choice("concat", "sum"), "concat"),
            "workspace": Param(p_uint64, 512),
        },
        variadic="num_args",
        inputs=_up_inputs,
        infer_shape=_up_shape,
        lower=_up_lower,
        input_attrs={"weight": {"__init__": '["bilinear", {}]'}},
    )
)
