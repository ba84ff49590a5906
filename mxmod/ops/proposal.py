"""Region proposals of Faster R-CNN (MXNet ``_contrib_Proposal``, ``_contrib_MultiProposal``).

Per image: shifted anchors (MXNet's ``GenerateAnchors``: ratios outer, scales inner, with its
integer rounding), box deltas decoded and clipped to ``im_info``, boxes smaller than
``rpn_min_size * scale`` widened and scored -1, the ``rpn_pre_nms_top_n`` best kept, greedy
NMS (MXNet's +1 pixel areas) until ``rpn_post_nms_top_n`` boxes survive. Where fewer survive,
MXNet repeats the kept boxes cyclically to fill the fixed-size output; so does this. All of it
is one XLA program (``lax.top_k`` + a ``while_loop``) that stops as early as MXNet's loop.
MXNet's backward writes zeros to every input; here the inputs pass through ``stop_gradient``.
Equal scores (e.g. the -1 of filtered boxes) rank by anchor index here; MXNet's unstable
``std::sort`` leaves their order unspecified.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..base import MXNetError
from ._attrs import Param, p_bool, p_float, p_float_tuple, p_int
from ._def import OpDef, fail, register
from .detection import compact, greedy_nms
from .roi import fdiv, rounded

sg = jax.lax.stop_gradient
f32 = np.float32


def base_anchors(stride: int, ratios, scales) -> np.ndarray:
    """MXNet's anchors around the cell ``[0, 0, stride-1, stride-1]``: (len(ratios) *
    len(scales), 4), ratio-major, float32 with MXNet's floor-based rounding."""
    w = h = f32(stride)
    cx = cy = f32(0.5) * (w - f32(1))
    out = []
    for r in ratios:
        for s in scales:
            size_ratios = np.floor(w * h / f32(r))
            new_w = np.floor(np.sqrt(size_ratios) + f32(0.5)) * f32(s)
            new_h = np.floor(new_w / f32(s) * f32(r) + f32(0.5)) * f32(s)
            out.append(
                [
                    cx - f32(0.5) * (new_w - 1),
                    cy - f32(0.5) * (new_h - 1),
                    cx + f32(0.5) * (new_w - 1),
                    cy + f32(0.5) * (new_h - 1),
                ]
            )
    return np.array(out, f32)


def _shape(a, s, multi: bool):
    prob, pred, info = s
    name = "MultiProposal" if multi else "Proposal"
    if a.feature_stride <= 0:
        fail(f"feature_stride must be positive, got {a.feature_stride}")
    if a.rpn_post_nms_top_n <= 0:
        fail(f"rpn_post_nms_top_n must be positive, got {a.rpn_post_nms_top_n}")
    n_anchor = len(a.ratios) * len(a.scales)
    if prob is not None:
        if len(prob) != 4 or prob[1] != 2 * n_anchor:
            fail(
                f"cls_prob {tuple(prob)} must be (batch, 2 * {n_anchor}, height, width): "
                f"background then foreground scores of len(ratios) * len(scales) = "
                f"{n_anchor} anchors"
            )
        if not multi and prob[0] != 1:
            fail(
                f"cls_prob {tuple(prob)}: {name} handles one image per device (as in MXNet); "
                f"use contrib.MultiProposal for a batch"
            )
        s = [prob, (prob[0], 4 * n_anchor, prob[2], prob[3]), (prob[0], 3)]
    b = None if prob is None else prob[0]
    post = a.rpn_post_nms_top_n
    out = (
        [None, None]
        if b is None
        else [((b if multi else 1) * post, 5), ((b if multi else 1) * post, 1)]
    )
    return s, out


def _one(a, prob, deltas, info, batch_index):
    """Proposals of one image: prob (2A, H, W), deltas (4A, H, W), info (3,)."""
    n_a, hh, ww = prob.shape[0] // 2, prob.shape[1], prob.shape[2]
    stride = a.feature_stride
    anchors = base_anchors(stride, a.ratios, a.scales)
    sy, sx = np.meshgrid(
        np.arange(hh, dtype=f32) * stride, np.arange(ww, dtype=f32) * stride, indexing="ij"
    )
    shift = np.stack([sx, sy, sx, sy], -1)[:, :, None, :]  # (H, W, 1, 4)
    boxes = jnp.asarray((shift + anchors[None, None]).reshape(-1, 4))  # index h*(W*A)+w*A+a
    score = jnp.transpose(prob[n_a:], (1, 2, 0)).reshape(-1)
    d = jnp.transpose(deltas.reshape(n_a, 4, hh, ww), (2, 3, 0, 1)).reshape(-1, 4)
    im_h, im_w, im_scale = info[0], info[1], info[2]
    if a.iou_loss:
        pred = boxes + d
    else:
        bw = boxes[:, 2] - boxes[:, 0] + 1
        bh = boxes[:, 3] - boxes[:, 1] + 1
        cx, cy = boxes[:, 0] + 0.5 * (bw - 1), boxes[:, 1] + 0.5 * (bh - 1)
        px, py = rounded(d[:, 0] * bw) + cx, rounded(d[:, 1] * bh) + cy
        pw, ph = jnp.exp(d[:, 2]) * bw, jnp.exp(d[:, 3]) * bh
        pred = jnp.stack(
            [px - 0.5 * (pw - 1), py - 0.5 * (ph - 1), px + 0.5 * (pw - 1), py + 0.5 * (ph - 1)], -1
        )
    hi = jnp.stack([im_w - 1, im_h - 1, im_w - 1, im_h - 1])
    pred = jnp.maximum(jnp.minimum(pred, hi), 0.0)
    # cells past the real image (padding) score -1
    real_h = jnp.floor(fdiv(im_h, stride)).astype(jnp.int32)  # a true float division, as MXNet's
    real_w = jnp.floor(fdiv(im_w, stride)).astype(jnp.int32)
    cell_h = jnp.repeat(jnp.arange(hh), ww * n_a)
    cell_w = jnp.tile(jnp.repeat(jnp.arange(ww), n_a), hh)
    score = jnp.where((cell_h >= real_h) | (cell_w >= real_w), -1.0, score)
    # too small: widened by min_size / 2 on each side and scored -1 (MXNet's FilterBox)
    min_size = a.rpn_min_size * im_scale
    small = (pred[:, 2] - pred[:, 0] + 1 < min_size) | (pred[:, 3] - pred[:, 1] + 1 < min_size)
    pred = pred + jnp.where(small[:, None], jnp.stack([-1, -1, 1, 1]) * (min_size / 2), 0.0)
    score = jnp.where(small, -1.0, score)
    count = score.shape[0]
    pre = count if a.rpn_pre_nms_top_n <= 0 else min(a.rpn_pre_nms_top_n, count)
    post = min(a.rpn_post_nms_top_n, pre)
    top_score, top = jax.lax.top_k(score, pre)
    dets = pred[top]
    area = (dets[:, 2] - dets[:, 0] + 1) * (dets[:, 3] - dets[:, 1] + 1)

    def overlap(b, bs):
        w = jnp.maximum(0.0, jnp.minimum(b[2], bs[:, 2]) - jnp.maximum(b[0], bs[:, 0]) + 1)
        h = jnp.maximum(0.0, jnp.minimum(b[3], bs[:, 3]) - jnp.maximum(b[1], bs[:, 1]) + 1)
        inter = rounded(w * h)  # no fused multiply-add into the union below
        ib = (b[2] - b[0] + 1) * (b[3] - b[1] + 1)
        return inter / (ib + area - inter)

    keep = greedy_nms(dets, jnp.ones((pre,), bool), overlap, a.threshold, max_keep=post)
    pos, kept = compact(keep)
    rows = jnp.arange(a.rpn_post_nms_top_n)
    pick = pos[jnp.where(rows < kept, rows, rows % jnp.maximum(kept, 1))]
    out = jnp.concatenate([jnp.full((rows.shape[0], 1), batch_index, dets.dtype), dets[pick]], 1)
    return out, top_score[pick][:, None]


def _lower(multi: bool):
    def lower(a, ins, aux, ctx):
        prob, deltas, info = (sg(x) for x in ins)
        if not multi and prob.shape[0] != 1:
            raise MXNetError(
                f"Proposal {ctx.node_name!r}: one image per device (batch "
                f"{prob.shape[0]}); use contrib.MultiProposal for a batch"
            )
        idx = jnp.arange(prob.shape[0], dtype=prob.dtype)
        out, score = jax.vmap(lambda p, d, i, b: _one(a, p, d, i, b))(prob, deltas, info, idx)
        return [out.reshape(-1, 5), score.reshape(-1, 1)]  # the score is hidden unless asked

    return lower


def _params():
    return {
        "rpn_pre_nms_top_n": Param(p_int, 6000),
        "rpn_post_nms_top_n": Param(p_int, 300),
        "threshold": Param(p_float, 0.7),
        "rpn_min_size": Param(p_int, 16),
        "scales": Param(p_float_tuple, (4.0, 8.0, 16.0, 32.0)),
        "ratios": Param(p_float_tuple, (0.5, 1.0, 2.0)),
        "feature_stride": Param(p_int, 16),
        "output_score": Param(p_bool, False),
        "iou_loss": Param(p_bool, False),
    }


for _name, _multi in (("_contrib_Proposal", False), ("_contrib_MultiProposal", True)):
    register(
        OpDef(
            name=_name,
            params=_params(),
            inputs=("cls_prob", "bbox_pred", "im_info"),
            outputs=lambda a: ("output", "score") if a.output_score else ("output",),
            num_outputs_total=lambda a: 2,  # MXNet always computes the score output
            infer_shape=lambda a, s, m=_multi: _shape(a, s, m),
            infer_type=lambda a, t: (t, [t[0], t[0]]),
            lower=_lower(_multi),
        )
    )
