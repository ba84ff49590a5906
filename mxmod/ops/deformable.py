"""Deformable ConvNets operators: MXNet ``_contrib_DeformableConvolution`` and
``_contrib_DeformablePSROIPooling``.

DeformableConvolution is a bilinear-sampling im2col (the sampling points of every kernel tap
moved by the learned ``offset``, one (dy, dx) field per deformable group) followed by the
grouped matmul of ``Convolution``. Sampling follows MXNet 1.9.1's CPU kernel: a point outside
``[0, H) x [0, W)`` reads 0, a point in the last row/column reads that row/column (no blend
with the padding); its gradients (data, offset, weight, bias) are this forward's derivative,
as MXNet's are. DeformablePSROIPooling averages ``sample_per_part``^2 bilinear samples
per bin, shifted by the part offsets ``trans`` (times ``trans_std`` and the ROI size); MXNet's
``trans`` gradient ignores the clamp to the feature map, so the clamp here is straight-through.
ROIs get no gradient.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ._attrs import Param, choice, optional, p_bool, p_float, p_int, p_shape
from ._def import OpDef, fail, register
from .roi import cround, fdiv, group_index, rounded

sg = jax.lax.stop_gradient


# ------------------------------------------------------------------ DeformableConvolution
def deform_geometry(a):
    k = tuple(a.kernel)
    if len(k) != 2:
        fail(
            f"kernel {a.kernel} must be 2-D: only 2-D deformable convolution exists "
            f"(MXNet runs no other)"
        )
    stride, dilate, pad = (
        tuple(v) or d for v, d in ((a.stride, (1, 1)), (a.dilate, (1, 1)), (a.pad, (0, 0)))
    )
    for name, v in (("stride", stride), ("dilate", dilate), ("pad", pad)):
        if len(v) != 2:
            fail(f"{name} {v} must have 2 entries like kernel {k}")
    return k, stride, dilate, pad


def deform_conv_shape(a, s, n_mask: int = 0):
    data = s[0]
    if a.layout not in (None, "NCHW"):
        raise NotImplementedError(
            f"DeformableConvolution: layout={a.layout!r} is not "
            f"supported; use NCHW (MXNet runs no other)"
        )
    (kh, kw), (sh, sw), (dh, dw), (ph, pw) = deform_geometry(a)
    if data is None:
        return s, [None]
    if len(data) != 4:
        fail(f"data {tuple(data)} must be 4-D (batch, channel, height, width)")
    n, c, h, w = data
    g, dg = a.num_group, a.num_deformable_group
    if c % g or a.num_filter % g:
        fail(f"channels {c} and num_filter {a.num_filter} must be multiples of num_group {g}")
    if c % dg:
        fail(f"channels {c} must be a multiple of num_deformable_group {dg}")
    ho = (h + 2 * ph - (dh * (kh - 1) + 1)) // sh + 1
    wo = (w + 2 * pw - (dw * (kw - 1) + 1)) // sw + 1
    if ho <= 0 or wo <= 0:
        fail(
            f"kernel {a.kernel} (dilate {(dh, dw)}) does not fit data {tuple(data)} padded by "
            f"{(ph, pw)}"
        )
    ins = [tuple(data), (n, dg * 2 * kh * kw, ho, wo)]
    ins += [(n, dg * kh * kw, ho, wo)] * n_mask + [(a.num_filter, c // g, kh, kw)]
    if not a.no_bias:
        ins.append((a.num_filter,))
    return ins, [(n, a.num_filter, ho, wo)]


def _bilinear(img, y, x, height: int, width: int):
    inside = (y >= 0) & (x >= 0) & (y < height) & (x < width)
    y0, x0 = jnp.floor(y), jnp.floor(x)
    ly, lx = y - y0, x - x0
    y0i, x0i = y0.astype(jnp.int32), x0.astype(jnp.int32)

    def corner(yi, xi):
        ok = inside & (yi >= 0) & (xi >= 0) & (yi <= height - 1) & (xi <= width - 1)
        idx = jnp.clip(yi, 0, height - 1) * width + jnp.clip(xi, 0, width - 1)
        v = jnp.take_along_axis(img, idx[:, :, None, :], axis=3)
        return jnp.where(ok[:, :, None, :], v, 0.0)

    v00, v01 = corner(y0i, x0i), corner(y0i, x0i + 1)
    v10, v11 = corner(y0i + 1, x0i), corner(y0i + 1, x0i + 1)

    def mix(wy, wx):
        wy, wx = wy[:, :, None, :], wx[:, :, None, :]
        return (1 - wy) * (1 - wx) * v00 + (1 - wy) * wx * v01 + wy * (1 - wx) * v10 + wy * wx * v11

    return mix(jnp.where(y0i >= height - 1, 0.0, ly), jnp.where(x0i >= width - 1, 0.0, lx))


def deform_conv(a, data, offset, weight, bias, bilinear, mask=None):
    """A deformable convolution: ``bilinear(img, y, x, H, W)`` samples every kernel tap at
    its offset position (times ``mask`` when given), then the grouped matmul."""
    (kh, kw), (sh, sw), (dh, dw), (ph, pw) = deform_geometry(a)
    n, c, h, w = data.shape
    dg, g, f = a.num_deformable_group, a.num_group, a.num_filter
    ho, wo = offset.shape[2], offset.shape[3]
    k = kh * kw
    off = offset.reshape(n, dg, k, 2, ho, wo)
    ki, kj = jnp.meshgrid(jnp.arange(kh), jnp.arange(kw), indexing="ij")
    base_y = jnp.arange(ho)[None, :, None] * sh - ph + ki.reshape(-1)[:, None, None] * dh
    base_x = jnp.arange(wo)[None, None, :] * sw - pw + kj.reshape(-1)[:, None, None] * dw
    y = (base_y.astype(data.dtype) + off[:, :, :, 0]).reshape(n, dg, -1)  # (N, DG, K*Ho*Wo)
    x = (base_x.astype(data.dtype) + off[:, :, :, 1]).reshape(n, dg, -1)
    img = data.reshape(n, dg, c // dg, h * w)
    cols = bilinear(img, y, x, h, w)  # (N, DG, C/DG, K*Ho*Wo)
    if mask is not None:
        cols = cols * mask.reshape(n, dg, 1, -1)
    cols = cols.reshape(n, g, (c // g) * k, ho * wo)
    wmat = weight.reshape(g, f // g, (c // g) * k)
    out = jnp.einsum("gfk,ngkp->ngfp", wmat, cols).reshape(n, f, ho, wo)
    return out if bias is None else out + bias.reshape(1, f, 1, 1)


DEFORM_PARAMS = {  # MXNet's order (positional attributes)
    "kernel": Param(p_shape),
    "stride": Param(p_shape, ()),
    "dilate": Param(p_shape, ()),
    "pad": Param(p_shape, ()),
    "num_filter": Param(p_int),
    "num_group": Param(p_int, 1),
    "num_deformable_group": Param(p_int, 1),
    "workspace": Param(p_int, 1024),
    "no_bias": Param(p_bool, False),
    "layout": Param(optional(choice("NCW", "NCHW", "NCDHW")), None),
}


def _dconv_lower(a, ins, aux, ctx):
    bias = None if a.no_bias else ins[3]
    return [deform_conv(a, ins[0], ins[1], ins[2], bias, _bilinear)]


register(
    OpDef(
        name="_contrib_DeformableConvolution",
        params=DEFORM_PARAMS,
        inputs=lambda a: ("data", "offset", "weight") + (() if a.no_bias else ("bias",)),
        signature_inputs=("data", "offset", "weight", "bias"),
        infer_shape=deform_conv_shape,
        lower=_dconv_lower,
    )
)


# ------------------------------------------------------------------ DeformablePSROIPooling
def _dps_shape(a, s):
    data, rois = s[0], s[1]
    if min(a.pooled_size, a.output_dim, a.group_size, a.sample_per_part) <= 0:
        fail(
            f"pooled_size {a.pooled_size}, output_dim {a.output_dim}, group_size "
            f"{a.group_size} and sample_per_part {a.sample_per_part} must be positive"
        )
    if data is not None and (len(data) != 4 or data[1] != a.output_dim * a.group_size**2):
        fail(
            f"data {tuple(data)} must be (batch, output_dim * group_size^2 = "
            f"{a.output_dim * a.group_size**2}, height, width)"
        )
    if rois is not None and (len(rois) != 2 or rois[1] != 5):
        fail(f"rois {tuple(rois)} must be (num_rois, 5): [batch_index, x1, y1, x2, y2]")
    if not a.no_trans and s[2] is not None:
        t = s[2]
        part = a.part_size or a.pooled_size
        if len(t) != 4 or t[1] % 2 or a.output_dim % (t[1] // 2) or t[2:] != (part, part):
            fail(
                f"trans {tuple(t)} must be (num_rois, 2 * num_classes, part_size, part_size) "
                f"with part_size {part} and output_dim {a.output_dim} a multiple of num_classes"
            )
    if rois is None:
        return s, [None, None]
    out = (rois[0], a.output_dim, a.pooled_size, a.pooled_size)
    return s, [out, out]


def _part_index(n_bins: int, part: int) -> np.ndarray:
    """MXNet's part cell of each bin: ``floor(float(p) / n_bins * part)`` in float32."""
    p = np.arange(n_bins, dtype=np.float32)
    return np.floor(p / np.float32(n_bins) * np.float32(part)).astype(np.int32)


def _dps_lower(a, ins, aux, ctx):
    data, rois = ins[0], sg(ins[1])
    b, c, h, w = data.shape
    n, k, gs, sp = rois.shape[0], a.pooled_size, a.group_size, a.sample_per_part
    part = a.part_size or k
    sc = a.spatial_scale
    # MXNet's float32 arithmetic, each product rounded before the sum that uses it
    x1, y1 = rounded(cround(rois[:, 1]) * sc) - 0.5, rounded(cround(rois[:, 2]) * sc) - 0.5
    x2 = rounded((cround(rois[:, 3]) + 1.0) * sc) - 0.5
    y2 = rounded((cround(rois[:, 4]) + 1.0) * sc) - 0.5
    rw, rh = jnp.maximum(x2 - x1, 0.1), jnp.maximum(y2 - y1, 0.1)
    bw, bh = fdiv(rw, k), fdiv(rh, k)
    p = jnp.arange(k, dtype=data.dtype)
    part_i = jnp.asarray(_part_index(k, part))
    grp = jnp.asarray(group_index(k, gs))
    ctop = jnp.arange(a.output_dim)
    if a.no_trans:
        tx = ty = jnp.zeros((n, a.output_dim, k, k), data.dtype)
    else:
        trans = ins[2]
        n_cls = trans.shape[1] // 2
        cls = ctop // (a.output_dim // n_cls)
        tr = trans.reshape(n, n_cls, 2, part, part)[:, cls][:, :, :, part_i][:, :, :, :, part_i]
        tx, ty = tr[:, :, 0] * a.trans_std, tr[:, :, 1] * a.trans_std  # (N, Co, K, K)
    ws = (
        rounded(p[None, None, None, :] * bw[:, None, None, None])
        + x1[:, None, None, None]
        + rounded(tx * rw[:, None, None, None])
    )
    hs = (
        rounded(p[None, None, :, None] * bh[:, None, None, None])
        + y1[:, None, None, None]
        + rounded(ty * rh[:, None, None, None])
    )
    i = jnp.arange(sp, dtype=data.dtype)
    sub_w, sub_h = fdiv(bw, sp), fdiv(bh, sp)
    xs = ws[..., None, None] + rounded(i[None, :] * sub_w[:, None, None, None, None, None])
    ys = hs[..., None, None] + rounded(i[:, None] * sub_h[:, None, None, None, None, None])
    xs, ys = jnp.broadcast_arrays(xs, ys)  # (N, Co, K, K, S, S)
    ok = ~((xs < -0.5) | (xs > w - 0.5) | (ys < -0.5) | (ys > h - 0.5))
    # clamp to the map; MXNet's trans gradient ignores the clamp (straight-through)
    xs = xs + sg(jnp.clip(xs, 0, w - 1) - xs)
    ys = ys + sg(jnp.clip(ys, 0, h - 1) - ys)
    xl, yl = jnp.floor(sg(xs)), jnp.floor(sg(ys))
    xh, yh = jnp.ceil(sg(xs)), jnp.ceil(sg(ys))
    dx, dy = xs - xl, ys - yl
    chan = (ctop[:, None, None] * gs + grp[None, :, None]) * gs + grp[None, None, :]  # Co,K,K
    base = (rois[:, 0].astype(jnp.int32)[:, None, None, None] * c + chan[None]) * (h * w)
    flat = data.reshape(-1)

    def at(yy, xx):
        return flat[base[..., None, None] + yy.astype(jnp.int32) * w + xx.astype(jnp.int32)]

    val = (
        (1 - dx) * (1 - dy) * at(yl, xl)
        + (1 - dx) * dy * at(yh, xl)
        + dx * (1 - dy) * at(yl, xh)
        + dx * dy * at(yh, xh)
    )
    val = jnp.where(ok, val, 0.0)
    count = ok.sum((-1, -2)).astype(data.dtype)
    out = jnp.where(count > 0, val.sum((-1, -2)) / jnp.maximum(count, 1), 0.0)
    return [out, sg(count)]  # the second is MXNet's hidden top_count output


register(
    OpDef(
        name="_contrib_DeformablePSROIPooling",
        params={
            "spatial_scale": Param(p_float),
            "output_dim": Param(p_int),
            "group_size": Param(p_int),
            "pooled_size": Param(p_int),
            "part_size": Param(p_int, 0),
            "sample_per_part": Param(p_int, 1),
            "trans_std": Param(p_float, 0.0),
            "no_trans": Param(p_bool, False),
        },
        inputs=lambda a: ("data", "rois") if a.no_trans else ("data", "rois", "trans"),
        signature_inputs=("data", "rois", "trans"),
        num_outputs_total=lambda a: 2,
        infer_shape=_dps_shape,
        lower=_dps_lower,
    )
)
