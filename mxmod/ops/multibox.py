"""SSD's MultiBox operators (MXNet ``_contrib_MultiBoxPrior``, ``_contrib_MultiBoxTarget``,
``_contrib_MultiBoxDetection``).

Anchors depend only on static shapes and become a constant. Target assignment (greedy
bipartite matching, threshold matching, hard-negative mining) and detection (decode, sort,
per-class NMS) are fixed-size programs vmapped over the batch, reproducing MXNet's CPU loops
row for row, including where MXNet leaves ``-1`` rows. None of the three has a gradient in
MXNet (its backward writes zeros); here their inputs pass through ``stop_gradient``.

Two attributes are accepted and, exactly as in MXNet 1.9.1's kernels, have no effect:
MultiBoxTarget's ``minimum_negative_samples`` and MultiBoxDetection's ``background_id``
(class 0 is always the background). ``tests/ops/test_detection_ops.py`` pins that down.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ._attrs import Param, p_bool, p_float, p_float_tuple, p_int
from ._def import OpDef, fail, register
from .detection import compact, greedy_nms

sg = jax.lax.stop_gradient
f32 = np.float32


# ------------------------------------------------------------------ MultiBoxPrior
def _prior_anchors(a, h: int, w: int) -> np.ndarray:
    """MXNet's anchor layout: per pixel (row-major), every size at the first ratio (1.9.1
    honours ``ratios[0]``, usually 1), then every other ratio at the first size; float32
    arithmetic in MXNet's order."""
    sizes, ratios = [f32(s) for s in a.sizes], [f32(r) for r in a.ratios]
    step_y = f32(a.steps[0]) if a.steps[0] > 0 else f32(1) / f32(h)
    step_x = f32(a.steps[1]) if a.steps[1] > 0 else f32(1) / f32(w)
    half = []  # (w/2, h/2) per anchor shape
    r0 = np.sqrt(ratios[0], dtype=f32)
    for s in sizes:
        half.append((s * f32(h) / f32(w) * r0 / f32(2), s / r0 / f32(2)))
    for r in ratios[1:]:
        sr = np.sqrt(r, dtype=f32)
        half.append((sizes[0] * f32(h) / f32(w) * sr / f32(2), sizes[0] / sr / f32(2)))
    hw = np.array(half, f32)  # (K, 2)
    cy = (np.arange(h, dtype=f32) + f32(a.offsets[0])) * step_y
    cx = (np.arange(w, dtype=f32) + f32(a.offsets[1])) * step_x
    cy, cx = np.meshgrid(cy, cx, indexing="ij")
    c = np.stack([cx, cy], -1).reshape(-1, 1, 2)  # (H*W, 1, 2) as (x, y)
    boxes = np.concatenate([c - hw[None], c + hw[None]], -1).reshape(-1, 4)
    if a.clip:
        boxes = np.clip(boxes, 0, 1)
    return boxes.astype(f32)[None]


def _prior_shape(a, s):
    d = s[0]
    if not a.sizes or not a.ratios:
        fail(f"sizes {a.sizes} and ratios {a.ratios} must not be empty")
    if len(a.steps) != 2 or len(a.offsets) != 2:
        fail(f"steps {a.steps} and offsets {a.offsets} must have 2 entries (y, x)")
    if d is None:
        return s, [None]
    if len(d) != 4:
        fail(f"data {tuple(d)} must be 4-D (batch, channel, height, width)")
    n = d[2] * d[3] * (len(a.sizes) + len(a.ratios) - 1)
    return s, [(1, n, 4)]


def _prior_lower(a, ins, aux, ctx):
    x = ins[0]
    anchors = jnp.asarray(_prior_anchors(a, x.shape[2], x.shape[3]), x.dtype)
    return [anchors + 0 * sg(x).reshape(-1)[0]]  # zero gradient to data, as in MXNet


register(
    OpDef(
        name="_contrib_MultiBoxPrior",
        params={
            "sizes": Param(p_float_tuple, (1.0,)),
            "ratios": Param(p_float_tuple, (1.0,)),
            "clip": Param(p_bool, False),
            "steps": Param(p_float_tuple, (-1.0, -1.0)),
            "offsets": Param(p_float_tuple, (0.5, 0.5)),
        },
        infer_shape=_prior_shape,
        lower=_prior_lower,
    )
)


# ------------------------------------------------------------------ shared box math
def _corner_iou(a, b):
    """Overlap as MultiBoxTarget/Detection compute it: (..., 4) x (M, 4) -> (..., M); a
    non-positive union gives 0."""
    a = a[..., None, :]
    w = jnp.maximum(0, jnp.minimum(a[..., 2], b[..., 2]) - jnp.maximum(a[..., 0], b[..., 0]))
    h = jnp.maximum(0, jnp.minimum(a[..., 3], b[..., 3]) - jnp.maximum(a[..., 1], b[..., 1]))
    i = w * h
    u = (
        (a[..., 2] - a[..., 0]) * (a[..., 3] - a[..., 1])
        + (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1])
        - i
    )
    return jnp.where(u <= 0, 0.0, i / jnp.where(u <= 0, 1.0, u))


def _check_variances(a):
    if len(a.variances) != 4:
        fail(f"variances {a.variances} must have 4 entries (x, y, w, h)")


# ------------------------------------------------------------------ MultiBoxTarget
def _target_shape(a, s):
    _check_variances(a)
    an, lab, pred = s
    if an is not None and (len(an) != 3 or an[0] != 1 or an[2] != 4):
        fail(f"anchor {tuple(an)} must be (1, num_anchors, 4): anchors are shared by the batch")
    if lab is not None and (len(lab) != 3 or lab[2] < 5):
        fail(f"label {tuple(lab)} must be (batch, num_labels, >=5) rows of [cls, x1, y1, x2, y2]")
    if pred is not None and len(pred) != 3:
        fail(f"cls_pred {tuple(pred)} must be (batch, num_classes, num_anchors)")
    if an is not None and pred is not None and pred[2] != an[1]:
        fail(f"cls_pred {tuple(pred)} has {pred[2]} anchors but anchor {tuple(an)} has {an[1]}")
    if an is None or lab is None:
        return s, [None, None, None]
    b, n = lab[0], an[1]
    return s, [(b, n * 4), (b, n * 4), (b, n)]


def _target_one(a, anchors, label, pred):
    """Targets for one batch element: anchors (A, 4), label (L, W), pred (K, A)."""
    n_a, n_l = anchors.shape[0], label.shape[0]
    gt_valid = jnp.cumprod(label[:, 0] != -1).astype(bool)
    iou = jnp.where(gt_valid[None], _corner_iou(anchors, label[:, 1:5]), -1.0)  # (A, L)

    def bipartite(_, st):
        a_gt, a_iou, gt_used = st
        m = jnp.where((a_gt < 0)[:, None] & ~gt_used[None] & gt_valid[None], iou, -jnp.inf)
        best = jnp.argmax(m.reshape(-1))
        j, k = best // n_l, best % n_l
        ok = m.reshape(-1)[best] > f32(1e-6)
        return (
            jnp.where(ok, a_gt.at[j].set(k), a_gt),
            jnp.where(ok, a_iou.at[j].set(iou[j, k]), a_iou),
            jnp.where(ok, gt_used.at[k].set(True), gt_used),
        )

    init = (jnp.full((n_a,), -1), jnp.full((n_a,), -1.0, iou.dtype), jnp.zeros((n_l,), bool))
    a_gt, a_iou, _ = jax.lax.fori_loop(0, n_l, bipartite, init)
    positive = a_gt >= 0
    best_gt, best_iou = jnp.argmax(iou, axis=1), jnp.max(iou, axis=1)
    if a.overlap_threshold > 0:
        more = ~positive & (best_iou > a.overlap_threshold)
        a_gt = jnp.where(more, best_gt, a_gt)
        positive = positive | more
    if a.negative_mining_ratio > 0:
        n_pos = positive.sum()
        n_neg = jnp.minimum((n_pos * f32(a.negative_mining_ratio)).astype(jnp.int32), n_a - n_pos)
        cand = ~positive & (best_iou < a.negative_mining_thresh)
        bg_prob = jax.nn.softmax(pred, axis=0)[0]
        order = jnp.argsort(jnp.where(cand, bg_prob, jnp.inf), stable=True)
        rank = jnp.zeros((n_a,), jnp.int32).at[order].set(jnp.arange(n_a, dtype=jnp.int32))
        negative = cand & (rank < n_neg)
    else:
        negative = ~positive
    any_gt = gt_valid[0]
    positive, negative = positive & any_gt, negative & any_gt
    gt = label[jnp.maximum(a_gt, 0)]
    cls = jnp.where(positive, gt[:, 0] + 1, jnp.where(negative, 0.0, f32(a.ignore_label)))
    aw, ah = anchors[:, 2] - anchors[:, 0], anchors[:, 3] - anchors[:, 1]
    ax, ay = (anchors[:, 0] + anchors[:, 2]) * 0.5, (anchors[:, 1] + anchors[:, 3]) * 0.5
    gw, gh = gt[:, 3] - gt[:, 1], gt[:, 4] - gt[:, 2]
    gx, gy = (gt[:, 1] + gt[:, 3]) * 0.5, (gt[:, 2] + gt[:, 4]) * 0.5
    v = a.variances
    safe = lambda t: jnp.where(positive, t, 1.0)  # noqa: E731  (no log/div of garbage rows)
    loc = jnp.stack(
        [
            (gx - ax) / safe(aw) / v[0],
            (gy - ay) / safe(ah) / v[1],
            jnp.log(safe(gw) / safe(aw)) / v[2],
            jnp.log(safe(gh) / safe(ah)) / v[3],
        ],
        -1,
    )
    mask = jnp.broadcast_to(positive[:, None], loc.shape)
    return (
        jnp.where(mask, loc, 0.0).reshape(-1),
        mask.astype(loc.dtype).reshape(-1),
        cls.astype(loc.dtype),
    )


def _target_lower(a, ins, aux, ctx):
    anchor, label, pred = (sg(x) for x in ins)
    outs = jax.vmap(lambda l, p: _target_one(a, anchor[0], l, p))(label, pred)
    return [o.astype(anchor.dtype) for o in outs]


register(
    OpDef(
        name="_contrib_MultiBoxTarget",
        params={
            "overlap_threshold": Param(p_float, 0.5),
            "ignore_label": Param(p_float, -1.0),
            "negative_mining_ratio": Param(p_float, -1.0),
            "negative_mining_thresh": Param(p_float, 0.5),
            "minimum_negative_samples": Param(p_int, 0),
            "variances": Param(p_float_tuple, (0.1, 0.1, 0.2, 0.2)),
        },
        inputs=("anchor", "label", "cls_pred"),
        outputs=("loc_target", "loc_mask", "cls_target"),
        infer_shape=_target_shape,
        infer_type=lambda a, t: (t, [t[0]] * 3),
        lower=_target_lower,
    )
)


# ------------------------------------------------------------------ MultiBoxDetection
def _det_shape(a, s):
    _check_variances(a)
    prob, loc, an = s
    if prob is not None and len(prob) != 3:
        fail(f"cls_prob {tuple(prob)} must be (batch, num_classes, num_anchors)")
    if an is not None and (len(an) != 3 or an[2] != 4):
        fail(f"anchor {tuple(an)} must be (1, num_anchors, 4)")
    if prob is not None and an is not None and prob[2] != an[1]:
        fail(f"cls_prob {tuple(prob)} has {prob[2]} anchors but anchor {tuple(an)} has {an[1]}")
    if prob is not None and loc is not None and tuple(loc) != (prob[0], prob[2] * 4):
        fail(f"loc_pred {tuple(loc)} must be (batch, num_anchors * 4) = {(prob[0], prob[2] * 4)}")
    if prob is None:
        return s, [None]
    return s, [(prob[0], prob[2], 6)]


def _decode(a, anchors, loc):
    aw, ah = anchors[:, 2] - anchors[:, 0], anchors[:, 3] - anchors[:, 1]
    ax, ay = (anchors[:, 0] + anchors[:, 2]) / 2, (anchors[:, 1] + anchors[:, 3]) / 2
    v = a.variances
    ox, oy = loc[:, 0] * v[0] * aw + ax, loc[:, 1] * v[1] * ah + ay
    ow, oh = jnp.exp(loc[:, 2] * v[2]) * aw / 2, jnp.exp(loc[:, 3] * v[3]) * ah / 2
    box = jnp.stack([ox - ow, oy - oh, ox + ow, oy + oh], -1)
    return jnp.clip(box, 0, 1) if a.clip else box


def _det_one(a, prob, loc, anchors):
    """Detections of one batch element: prob (K, A), loc (A*4,), anchors (A, 4) -> (A, 6)."""
    n = anchors.shape[0]
    fg = prob[1:]
    score = jnp.max(fg, axis=0)
    cid = jnp.argmax(fg, axis=0) + 1
    valid = (score > -1) & (score >= a.threshold)
    rows = jnp.concatenate(
        [
            (cid - 1).astype(prob.dtype)[:, None],
            score[:, None],
            _decode(a, anchors, loc.reshape(n, 4)),
        ],
        -1,
    )
    pos, count = compact(valid)
    idx = jnp.arange(n)
    comp = jnp.where((idx < count)[:, None], rows[pos], -1.0)
    if a.nms_threshold <= 0 or a.nms_threshold > 1:
        return comp
    order = jnp.argsort(jnp.where(idx < count, -comp[:, 1], jnp.inf), stable=True)
    nkeep = count if a.nms_topk <= 0 else jnp.minimum(count, a.nms_topk)
    ranked = comp[order]
    same = None if a.force_suppress else ranked[:, 0]
    keep = greedy_nms(
        ranked[:, 2:], idx < nkeep, _corner_iou, a.nms_threshold, same, inclusive=True
    )
    head = ranked.at[:, 0].set(jnp.where(keep, ranked[:, 0], -1.0))
    tail = comp.at[:, 0].set(jnp.where(idx < count, -1.0, comp[:, 0]))  # past nms_topk
    return jnp.where((idx < nkeep)[:, None], head, tail)


def _det_lower(a, ins, aux, ctx):
    prob, loc, anchor = (sg(x) for x in ins)
    return [jax.vmap(lambda p, l: _det_one(a, p, l, anchor[0]))(prob, loc)]


register(
    OpDef(
        name="_contrib_MultiBoxDetection",
        params={
            "clip": Param(p_bool, True),
            "threshold": Param(p_float, 0.01),
            "background_id": Param(p_int, 0),
            "nms_threshold": Param(p_float, 0.5),
            "force_suppress": Param(p_bool, False),
            "variances": Param(p_float_tuple, (0.1, 0.1, 0.2, 0.2)),
            "nms_topk": Param(p_int, -1),
        },
        inputs=("cls_prob", "loc_pred", "anchor"),
        infer_shape=_det_shape,
        lower=_det_lower,
    )
)
