"""``_contrib_SyncBatchNorm``: BatchNorm whose batch statistics cover every device.

MXNet 1.9.1's SyncBatchNorm (``mx.sym.contrib.SyncBatchNorm``, ``key`` and ``ndev``
attributes) exchanges per-device sums through a host-side barrier keyed by ``key``; on one
device its result is BatchNorm's (channel axis 1, ``fix_gamma`` default True, hidden outputs
``mean`` and ``var``: the biased batch variance, not BatchNorm's inverse std). mxmod computes
the statistics with ``jax.lax.psum`` over the mesh axis the program's batch is split on
(``LowerCtx.axis_name``), so inside the fused data-parallel step every device normalises
with the statistics of the whole batch; the gradient of the ``psum`` carries the cross-device
terms of BatchNorm's backward. With ``axis_name=None`` (one device, or a program not split
over a mesh) the statistics are the local batch's, which is MXNet's one-device result.
``ndev`` and ``key`` are accepted and only identify the layer, as in MXNet.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from ..base import MXNetError
from ._attrs import Param, p_int, p_str
from ._def import OpDef, register
from .norm import BN_PARAMS, BN_SLOTS, _f32, _sg, bn_shapes, bn_statistics


def _channel_axis(data):
    if len(data) < 2:
        raise MXNetError(f"data {tuple(data)} needs a channel axis 1 (batch, channel, ...)")
    return 1


def _shape(a, s):
    return bn_shapes(s, _channel_axis)


def batch_stats(xf, red: tuple, axis_name=None):
    """Per-channel mean and biased variance over ``red`` (and over ``axis_name``'s devices)."""
    count = math.prod(xf.shape[i] for i in red)
    s1 = jnp.sum(xf, axis=red)
    if axis_name is not None:
        s1 = jax.lax.psum(s1, axis_name)
        count = count * jax.lax.psum(1, axis_name)
    mean = s1 / count
    shp = tuple(xf.shape[1] if i == 1 else 1 for i in range(xf.ndim))
    s2 = jnp.sum(jnp.square(xf - mean.reshape(shp)), axis=red)
    if axis_name is not None:
        s2 = jax.lax.psum(s2, axis_name)
    return mean, s2 / count


def _lower(a, ins, aux, ctx):
    x, gamma, beta = ins
    mm, mv = aux
    red = tuple(i for i in range(x.ndim) if i != 1)
    shp = tuple(x.shape[1] if i == 1 else 1 for i in range(x.ndim))
    xf = _f32(x)
    stats = lambda: batch_stats(xf, red, ctx.axis_name)  # noqa: E731
    mean, var, new_mm, new_mv = bn_statistics(a, ctx, mm, mv, stats)
    scale = jax.lax.rsqrt(var + a.eps) * (1.0 if a.fix_gamma else _f32(gamma))
    y = (xf - mean.reshape(shp)) * scale.reshape(shp) + _f32(beta).reshape(shp)
    pdt = mm.dtype
    return [y.astype(x.dtype), _sg(mean).astype(pdt), _sg(var).astype(pdt)], [new_mm, new_mv]


register(
    OpDef(
        name="_contrib_SyncBatchNorm",
        params={**BN_PARAMS, "ndev": Param(p_int, 1), "key": Param(p_str)},
        infer_shape=_shape,
        lower=_lower,
        **BN_SLOTS,
    )
)
