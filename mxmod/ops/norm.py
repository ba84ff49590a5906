"""Normalisation layers: BatchNorm (and ``_contrib_BatchNormWithReLU``), LayerNorm,
InstanceNorm, L2Normalization, LRN (GroupNorm: ``group_norm.py``).

Like MXNet, every op here computes statistics in float32 for float16/bfloat16 data and
returns MXNet's hidden outputs too (BatchNorm: mean and inverse std; LayerNorm: mean and
std; ...), so JSON graphs that reference them work. BatchNorm updates its moving
statistics in the forward pass of a training step (MXNet's CPU build writes them in the
backward pass; under ``forward_backward``/``fit`` the result is the same).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..base import MXNetError
from ._attrs import Param, choice, optional, p_bool, p_float, p_int, p_uint32
from ._def import OpDef, register

_LOW = ("float16", "bfloat16")
_sg = jax.lax.stop_gradient


def _bad(msg: str) -> None:
    raise MXNetError(msg)


def _f32(x):
    return x.astype(jnp.float32) if x.dtype in (jnp.float16, jnp.bfloat16) else x


def _axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        _bad(f"axis {axis} is out of range for {ndim}-D data")
    return axis % ndim


def _bshape(ndim: int, ax: int, c: int) -> tuple:
    return tuple(c if i == ax else 1 for i in range(ndim))


# -------------------------------------------------------------------- BatchNorm
# BatchNorm and _contrib_SyncBatchNorm (sync_bn.py) share the parameters, slots, shape and
# type rules and the moving-statistics update below.
def bn_shapes(s, channel_axis):
    """Shapes of a BatchNorm-like op: gamma, beta and the moving statistics are ``(C,)``
    with C the data's ``channel_axis(data_shape)`` dim; outputs: data and two ``(C,)``."""
    data = s[0]
    if data is None:
        c = next((x[0] for x in s[1:] if x is not None), None)
        if c is None:
            return s, [None, None, None]
        return [None] + [(c,)] * 4, [None, (c,), (c,)]
    c = data[channel_axis(data)]
    return [tuple(data)] + [(c,)] * 4, [tuple(data), (c,), (c,)]


def bn_shape(a, s):
    return bn_shapes(s, lambda data: _axis(a.axis, len(data)))


def _param_type(d):
    return "float32" if d in _LOW else d


def _bn_type(a, t):
    d = t[0]
    if d is None:
        return t, [None, None, None]
    p = _param_type(d)
    return [d] + [p if x is None else x for x in t[1:]], [d, p, p]


def _bn_infer(red: tuple, shp: tuple):
    """Inference-mode normalisation with MXNet's backward: its BatchNorm gradient after a
    ``forward(is_train=False)`` is the batch-statistics formula evaluated at the moving
    statistics (verified on MXNet 1.9.1), not the derivative of the affine forward."""

    @jax.custom_vjp
    def f(xf, g, beta, mean, invstd):
        return (xf - mean.reshape(shp)) * (g * invstd).reshape(shp) + beta.reshape(shp)

    def fwd(xf, g, beta, mean, invstd):
        return f(xf, g, beta, mean, invstd), (xf, g, mean, invstd)

    def bwd(res, dy):
        xf, g, mean, invstd = res
        xhat = (xf - mean.reshape(shp)) * invstd.reshape(shp)
        dx = (g * invstd).reshape(shp) * (
            dy - jnp.mean(dy, red, keepdims=True) - xhat * jnp.mean(dy * xhat, red, keepdims=True)
        )
        return (
            dx,
            jnp.sum(dy * xhat, red),
            jnp.sum(dy, red),
            jnp.zeros_like(mean),
            jnp.zeros_like(invstd),
        )

    f.defvjp(fwd, bwd)
    return f


def _bn_train(red: tuple, shp: tuple, eps: float):
    """Training-mode normalisation ``(y, mean, var)`` with a hand-written backward (the
    standard batch-statistics gradient; the mean and var outputs carry none, as MXNet's):
    two reductions each way and one elementwise pass, where differentiating the forward
    gives XLA several more kernels to compile per layer (and more passes over ``x``)."""

    def stats(xf):
        mean = jnp.mean(xf, red)
        return mean, jnp.mean(jnp.square(mean.reshape(shp) - xf), red)

    def forward(xf, g, beta):
        mean, var = stats(xf)
        scale = g * jax.lax.rsqrt(var + eps)
        y = xf * scale.reshape(shp) + (beta - mean * scale).reshape(shp)
        return (y, mean, var), (xf, g, mean, var)

    @jax.custom_vjp
    def f(xf, g, beta):
        return forward(xf, g, beta)[0]

    def bwd(res, cts):
        xf, g, mean, var = res
        dy = cts[0]
        invstd = jax.lax.rsqrt(var + eps)
        n = xf.size // mean.size
        # three spellings of x - mean, so that XLA shares none of them between kernels:
        # a shared one is stored (one more kernel and pass over x), where each reduction
        # and the elementwise pass recompute their own for free
        sum_dy = jnp.sum(dy, red)
        centre = jax.lax.optimization_barrier(mean)  # not the forward's (shared: stored)
        sum_dy_xhat = jnp.sum(dy * (xf - centre.reshape(shp)), red) * invstd
        xhat = xf * invstd.reshape(shp) - (mean * invstd).reshape(shp)
        k = g * invstd / n
        dx = k.reshape(shp) * (n * dy - sum_dy.reshape(shp) - xhat * sum_dy_xhat.reshape(shp))
        return dx, sum_dy_xhat, sum_dy

    f.defvjp(forward, bwd)
    return f


def bn_statistics(a, ctx, mm, mv, batch_stats):
    """``(mean, var, new_moving_mean, new_moving_var)``: in training (without
    ``use_global_stats``) ``batch_stats()`` and the momentum update, else the moving ones."""
    if ctx.is_train and not a.use_global_stats:
        mean, var = batch_stats()
        m = a.momentum
        new_mm = _sg(mm * m + mean.astype(mm.dtype) * (1 - m))
        new_mv = _sg(mv * m + var.astype(mv.dtype) * (1 - m))
        return mean, var, new_mm, new_mv
    return _f32(mm), _f32(mv), mm, mv


def bn_parts(a, ins, aux, ctx):
    """``(y, mean, var, new_aux)`` of a BatchNorm node: the batch statistics when training
    without ``use_global_stats``, else the moving ones."""
    x, gamma, beta = ins
    mm, mv = aux
    ax = _axis(a.axis, x.ndim)
    red = tuple(i for i in range(x.ndim) if i != ax)
    shp = _bshape(x.ndim, ax, x.shape[ax])
    xf = _f32(x)
    g = jnp.ones(x.shape[ax], xf.dtype) if a.fix_gamma else _f32(gamma)
    if ctx.is_train and not a.use_global_stats:
        y, mean, var = _bn_train(red, shp, a.eps)(xf, g, _f32(beta))
        _, _, new_mm, new_mv = bn_statistics(a, ctx, mm, mv, lambda: (mean, var))
        return y.astype(x.dtype), mean, var, [new_mm, new_mv]
    mean, var = _f32(mm), _f32(mv)
    invstd = jax.lax.rsqrt(var + a.eps)
    if not ctx.is_train:
        y = _bn_infer(red, shp)(xf, g, _f32(beta), _sg(mean), _sg(invstd))
    else:
        scale = g * invstd
        y = xf * scale.reshape(shp) + (_f32(beta) - mean * scale).reshape(shp)
    return y.astype(x.dtype), mean, var, [mm, mv]


def bn_lower(a, ins, aux, ctx):
    y, mean, var, new_aux = bn_parts(a, ins, aux, ctx)
    pdt = aux[0].dtype
    invstd = jax.lax.rsqrt(var + a.eps)
    return [y, _sg(mean).astype(pdt), _sg(invstd).astype(pdt)], new_aux


BN_PARAMS = {
    "eps": Param(p_float, 1e-3),
    "momentum": Param(p_float, 0.9),
    "fix_gamma": Param(p_bool, True),
    "use_global_stats": Param(p_bool, False),
    "output_mean_var": Param(p_bool, False),
}
BN_SLOTS = dict(
    inputs=("data", "gamma", "beta"),
    aux=("moving_mean", "moving_var"),
    outputs=lambda a: ["output", "mean", "var"] if a.output_mean_var else ["output"],
    num_outputs_total=lambda a: 3,
    infer_type=_bn_type,
    input_attrs={
        "moving_mean": {"__init__": '["zero", {}]'},
        "moving_var": {"__init__": '["one", {}]'},
    },
)

_BATCH_NORM = register(
    OpDef(
        name="BatchNorm",
        params={
            **BN_PARAMS,
            "axis": Param(p_int, 1),
            "cudnn_off": Param(p_bool, False),
            "min_calib_range": Param(optional(p_float), None),
            "max_calib_range": Param(optional(p_float), None),
        },
        infer_shape=bn_shape,
        lower=bn_lower,
        **BN_SLOTS,
    )
)


# ------------------------------------------------------------ BatchNormWithReLU
# MXNet's oneDNN-only fusion: BatchNorm's attributes, slots and statistics, ReLU on the
# output, and a fourth hidden output ``workspace`` (data's shape, the parameters' dtype)
# that holds the ReLU mask here. The gradient is BatchNorm's of the head gradient masked
# where the output is 0, which is MXNet's after a training forward; after an inference
# forward MXNet's backward reads a workspace that forward never wrote (its result is
# unspecified), so mxmod keeps BatchNorm's inference-mode rule there.
def _bnr_shape(a, s):
    ins, outs = bn_shape(a, s)
    return ins, outs + [outs[0]]


def _bnr_type(a, t):
    ins, outs = _bn_type(a, t)
    return ins, outs + [outs[1]]


def _bnr_lower(a, ins, aux, ctx):
    (y, mean, invstd), new_aux = bn_lower(a, ins, aux, ctx)
    on = y > 0
    return [jnp.where(on, y, jnp.zeros_like(y)), mean, invstd, on.astype(mean.dtype)], new_aux


register(
    OpDef(
        name="_contrib_BatchNormWithReLU",
        params=_BATCH_NORM.params,
        infer_shape=_bnr_shape,
        lower=_bnr_lower,
        **{**BN_SLOTS, "num_outputs_total": lambda a: 4, "infer_type": _bnr_type},
    )
)


# ------------------------------------------------------- LayerNorm, InstanceNorm
def _three_same(a, t):
    """Types of LayerNorm and InstanceNorm: data, gamma, beta and the 3 outputs alike."""
    d = next((x for x in t if x is not None), None)
    if d is None:
        return t, [None] * 3
    return [d if x is None else x for x in t], [d] * 3


def _ln_shape(a, s):
    data = s[0]
    if data is None:
        return s, [None, None, None]
    ax = _axis(a.axis, len(data))
    stat = tuple(1 if i == ax else d for i, d in enumerate(data))
    return [tuple(data), (data[ax],), (data[ax],)], [tuple(data), stat, stat]


def _ln_lower(a, ins, aux, ctx):
    x, gamma, beta = ins
    ax = _axis(a.axis, x.ndim)
    xf = _f32(x)
    mean = jnp.mean(xf, axis=ax, keepdims=True)
    var = jnp.mean(jnp.square(xf - mean), axis=ax, keepdims=True)
    std = jnp.sqrt(var + a.eps)
    shp = _bshape(x.ndim, ax, x.shape[ax])
    y = (xf - mean) / std * _f32(gamma).reshape(shp) + _f32(beta).reshape(shp)
    return [y.astype(x.dtype), mean.astype(x.dtype), std.astype(x.dtype)]


register(
    OpDef(
        name="LayerNorm",
        params={
            "axis": Param(p_int, -1),
            "eps": Param(p_float, 1e-5),
            "output_mean_var": Param(p_bool, False),
        },
        inputs=("data", "gamma", "beta"),
        outputs=lambda a: ["output", "mean", "std"] if a.output_mean_var else ["output"],
        num_outputs_total=lambda a: 3,
        infer_shape=_ln_shape,
        infer_type=_three_same,
        lower=_ln_lower,
    )
)


# ----------------------------------------------------------------- InstanceNorm
def _in_shape(a, s):
    data = s[0]
    if data is None:
        return s, [None, None, None]
    if len(data) < 3:
        _bad(f"data {tuple(data)} must have at least 3 dims (batch, channel, spatial...)")
    c = data[1]
    return [tuple(data), (c,), (c,)], [tuple(data), (data[0], c), (data[0], c)]


def _in_lower(a, ins, aux, ctx):
    x, gamma, beta = ins
    red = tuple(range(2, x.ndim))
    xf = _f32(x)
    mean = jnp.mean(xf, axis=red, keepdims=True)
    var = jnp.mean(jnp.square(xf - mean), axis=red, keepdims=True)
    shp = _bshape(x.ndim, 1, x.shape[1])
    y = (xf - mean) * jax.lax.rsqrt(var + a.eps) * _f32(gamma).reshape(shp) + _f32(beta).reshape(
        shp
    )
    n, c = x.shape[:2]
    return [
        y.astype(x.dtype),
        _sg(mean).reshape(n, c).astype(x.dtype),
        _sg(var).reshape(n, c).astype(x.dtype),
    ]


register(
    OpDef(
        name="InstanceNorm",
        params={"eps": Param(p_float, 1e-3)},
        inputs=("data", "gamma", "beta"),
        num_outputs_total=lambda a: 3,
        infer_shape=_in_shape,
        infer_type=_three_same,
        lower=_in_lower,
    )
)


# -------------------------------------------------------------- L2Normalization
def _l2_axes(mode: str, ndim: int) -> tuple:
    if mode == "instance":
        return tuple(range(1, ndim))
    if mode == "channel":
        return (1,)
    return tuple(range(2, ndim))


def _l2_shape(a, s):
    data = s[0]
    if data is None:
        return s, [None, None]
    if len(data) < 2 or (a.mode == "spatial" and len(data) < 3):
        _bad(f"data {tuple(data)} has too few dims for mode={a.mode!r}")
    axes = _l2_axes(a.mode, len(data))
    norm = tuple(d for i, d in enumerate(data) if i not in axes)
    return [tuple(data)], [tuple(data), norm]


def _l2_lower(a, ins, aux, ctx):
    x = ins[0]
    axes = _l2_axes(a.mode, x.ndim)
    xf = _f32(x)
    norm = jnp.sqrt(jnp.sum(jnp.square(xf), axis=axes, keepdims=True) + a.eps)
    return [(xf / norm).astype(x.dtype), _sg(jnp.squeeze(norm, axis=axes)).astype(x.dtype)]


register(
    OpDef(
        name="L2Normalization",
        params={
            "eps": Param(p_float, 1e-10),
            "mode": Param(choice("channel", "instance", "spatial"), "instance"),
        },
        num_outputs_total=lambda a: 2,
        infer_shape=_l2_shape,
        infer_type=lambda a, t: (t, [t[0], t[0]]),
        lower=_l2_lower,
    )
)


# ---------------------------------------------------------------------------- LRN
def _lrn_shape(a, s):
    data = s[0]
    if a.nsize <= 0 or a.nsize % 2 == 0:
        _bad(f"nsize {a.nsize} must be a positive odd number (the channel window)")
    if data is None:
        return s, [None, None]
    if len(data) != 4:
        _bad(f"data {tuple(data)} must be 4-D (batch, channel, height, width)")
    return [tuple(data)], [tuple(data), tuple(data)]


def _lrn_lower(a, ins, aux, ctx):
    x = ins[0]
    xf = _f32(x)
    half = a.nsize // 2
    sq = jax.lax.reduce_window(
        jnp.square(xf),
        np.array(0, xf.dtype),
        jax.lax.add,
        (1, a.nsize, 1, 1),
        (1, 1, 1, 1),
        ((0, 0), (half, half), (0, 0), (0, 0)),
    )
    norm = a.knorm + (a.alpha / a.nsize) * sq
    y = xf * norm ** (-a.beta)
    return [y.astype(x.dtype), _sg(norm).astype(x.dtype)]


register(
    OpDef(
        name="LRN",
        params={
            "alpha": Param(p_float, 1e-4),
            "beta": Param(p_float, 0.75),
            "knorm": Param(p_float, 2.0),
            "nsize": Param(p_uint32),
        },
        num_outputs_total=lambda a: 2,
        infer_shape=_lrn_shape,
        infer_type=lambda a, t: (t, [t[0], t[0]]),
        lower=_lrn_lower,
    )
)
