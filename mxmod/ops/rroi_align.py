"""MXNet's ``_contrib_RROIAlign``: ROI Align over rotated regions (text detection).

Each ROI is ``[batch_index, center_x, center_y, width, height, angle_degrees]`` (scaled by
``spatial_scale``; width and height at least 1). Every output bin averages ``gh x gw``
bilinear samples (``sampling_ratio``, or ``ceil(size / pooled_size)`` per ROI), taken on
the bin's grid in the ROI's frame and rotated by the angle about the centre, with MXNet
1.9.1's CPU rules: a point outside ``[-1, H] x [-1, W]`` reads 0, one in ``[-1, 0)`` reads
row/column 0, one past the last row/column reads it. The samples run as a loop over grid
points (the adaptive count is data-dependent), so, as in MXNet, the operator has no
gradient.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from ._attrs import Param, p_float, p_int, p_shape
from ._def import OpDef, fail, register


def _pooled(a) -> tuple:
    ps = tuple(a.pooled_size)
    if len(ps) != 2 or min(ps) <= 0:
        fail(f"pooled_size {a.pooled_size} must be 2 positive ints (height, width)")
    return ps


def _shape(a, s):
    data, rois = s
    ph, pw = _pooled(a)
    if data is not None and len(data) != 4:
        fail(f"data {tuple(data)} must be 4-D (batch, channel, height, width)")
    if rois is not None and (len(rois) != 2 or rois[1] != 6):
        fail(f"rois {tuple(rois)} must be (num_rois, 6): [batch_index, x, y, w, h, theta]")
    if data is None or rois is None:
        return s, [None]
    return [tuple(data), tuple(rois)], [(rois[0], data[1], ph, pw)]


def _corner(pos, size: int):
    """MXNet's clamped bilinear neighbours and weight along one axis (``pos`` >= 0)."""
    low = jnp.floor(pos)
    edge = low >= size - 1
    low = jnp.where(edge, size - 1.0, low)
    pos = jnp.where(edge, low, pos)
    high = jnp.where(edge, low, low + 1.0)
    return low.astype(jnp.int32), high.astype(jnp.int32), pos - low


def _forward(a, data, rois):
    ph, pw = _pooled(a)
    b, c, h, w = data.shape
    pixels = data.reshape(b, c, h * w).transpose(0, 2, 1)  # (B, H*W, C)
    n = rois.shape[0]
    bidx = jnp.clip(rois[:, 0].astype(jnp.int32), 0, b - 1)
    cx, cy = rois[:, 1] * a.spatial_scale, rois[:, 2] * a.spatial_scale
    rw = jnp.maximum(rois[:, 3] * a.spatial_scale, 1.0)
    rh = jnp.maximum(rois[:, 4] * a.spatial_scale, 1.0)
    theta = rois[:, 5] * (math.pi / 180.0)
    cos, sin = jnp.cos(theta), jnp.sin(theta)
    bin_h, bin_w = rh / ph, rw / pw
    if a.sampling_ratio > 0:
        gh = gw = jnp.full((n,), float(a.sampling_ratio), data.dtype)
    else:
        gh, gw = jnp.ceil(rh / ph), jnp.ceil(rw / pw)
    cols = jnp.maximum(jnp.max(gw), 1.0).astype(jnp.int32)
    points = jnp.maximum(jnp.max(gh), 1.0).astype(jnp.int32) * cols
    by = (-rh / 2)[:, None, None] + jnp.arange(ph)[None, :, None] * bin_h[:, None, None]
    bx = (-rw / 2)[:, None, None] + jnp.arange(pw)[None, None, :] * bin_w[:, None, None]

    def sample(k, total):
        iy, ix = (k // cols).astype(data.dtype), (k % cols).astype(data.dtype)
        yy = by + ((iy + 0.5) * bin_h / gh)[:, None, None]
        xx = bx + ((ix + 0.5) * bin_w / gw)[:, None, None]
        x = xx * cos[:, None, None] + yy * sin[:, None, None] + cx[:, None, None]
        y = yy * cos[:, None, None] - xx * sin[:, None, None] + cy[:, None, None]
        keep = (iy < gh)[:, None, None] & (ix < gw)[:, None, None]
        keep = keep & ~((y < -1.0) | (y > h) | (x < -1.0) | (x > w))
        y0, y1, ly = _corner(jnp.maximum(y, 0.0), h)
        x0, x1, lx = _corner(jnp.maximum(x, 0.0), w)

        def at(yi, xi):
            return pixels[bidx[:, None, None], yi * w + xi]  # (N, PH, PW, C)

        v = ((1 - ly) * (1 - lx))[..., None] * at(y0, x0) + ((1 - ly) * lx)[..., None] * at(y0, x1)
        v = v + (ly * (1 - lx))[..., None] * at(y1, x0) + (ly * lx)[..., None] * at(y1, x1)
        return total + jnp.where(keep[..., None], v, 0.0)

    total = jax.lax.fori_loop(0, points, sample, jnp.zeros((n, ph, pw, c), data.dtype))
    return (total / (gh * gw)[:, None, None, None]).transpose(0, 3, 1, 2)


def _lower(a, ins, aux, ctx):
    @jax.custom_vjp
    def rroi(data, rois):
        return _forward(a, data, rois)

    def fwd(data, rois):
        return rroi(data, rois), None

    def bwd(res, ct):
        raise NotImplementedError(
            "RROIAlign has no gradient (MXNet 1.9.1 has none either): stop gradients before "
            "it (mx.sym.BlockGrad on its data input) or train without it"
        )

    rroi.defvjp(fwd, bwd)
    return [rroi(ins[0], jax.lax.stop_gradient(ins[1]))]


register(
    OpDef(
        name="_contrib_RROIAlign",
        inputs=("data", "rois"),
        params={
            "pooled_size": Param(p_shape),
            "spatial_scale": Param(p_float),
            "sampling_ratio": Param(p_int, -1),
        },
        infer_shape=_shape,
        lower=_lower,
    )
)
