"""MXNet ``_contrib_ModulatedDeformableConvolution`` (Deformable ConvNets v2): the sampling
of ``DeformableConvolution`` (``deformable.py``) with each sample scaled by a learned
``mask`` (one per deformable group, kernel tap and output position) before the grouped
matmul. Sampling follows MXNet 1.9.1's CPU kernel, which differs from v1's at the border: a
point strictly inside ``(-1, H) x (-1, W)`` blends its four neighbours, those outside the
image reading 0; points further out read 0. Gradients (data, offset, mask, weight, bias)
are this forward's derivative, as MXNet's are.
"""

from __future__ import annotations

import jax.numpy as jnp

from ._attrs import Param, p_int
from ._def import OpDef, register
from .deformable import DEFORM_PARAMS, deform_conv, deform_conv_shape


def _bilinear(img, y, x, height: int, width: int):
    """Samples of ``img`` (N, DG, C, H*W) at points ``y``, ``x`` (N, DG, P)."""
    inside = (y > -1) & (x > -1) & (y < height) & (x < width)
    y0, x0 = jnp.floor(y), jnp.floor(x)
    ly, lx = y - y0, x - x0
    y0i, x0i = y0.astype(jnp.int32), x0.astype(jnp.int32)

    def corner(yi, xi, weight):
        ok = inside & (yi >= 0) & (xi >= 0) & (yi <= height - 1) & (xi <= width - 1)
        idx = jnp.clip(yi, 0, height - 1) * width + jnp.clip(xi, 0, width - 1)
        v = jnp.take_along_axis(img, idx[:, :, None, :], axis=3)
        return jnp.where(ok[:, :, None, :], v, 0.0) * weight[:, :, None, :]

    return (
        corner(y0i, x0i, (1 - ly) * (1 - lx))
        + corner(y0i, x0i + 1, (1 - ly) * lx)
        + corner(y0i + 1, x0i, ly * (1 - lx))
        + corner(y0i + 1, x0i + 1, ly * lx)
    )


def _mdconv_lower(a, ins, aux, ctx):
    bias = None if a.no_bias else ins[4]
    return [deform_conv(a, ins[0], ins[1], ins[3], bias, _bilinear, mask=ins[2])]


register(
    OpDef(
        name="_contrib_ModulatedDeformableConvolution",
        # DeformableConvolution's, with im2col_step before layout (MXNet's order)
        params={
            **{k: v for k, v in DEFORM_PARAMS.items() if k != "layout"},
            "im2col_step": Param(p_int, 64),
            "layout": DEFORM_PARAMS["layout"],
        },
        inputs=lambda a: ("data", "offset", "mask", "weight") + (() if a.no_bias else ("bias",)),
        signature_inputs=("data", "offset", "mask", "weight", "bias"),
        infer_shape=lambda a, s: deform_conv_shape(a, s, n_mask=1),
        lower=_mdconv_lower,
    )
)
