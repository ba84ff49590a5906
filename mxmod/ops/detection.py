"""Box operators of MXNet's contrib namespace: ``box_iou``, ``box_nms`` (alias
``box_non_maximum_suppression``) and ``bipartite_matching`` (JSON names ``_contrib_box_iou``...),
plus the greedy NMS that ``MultiBoxDetection`` and ``Proposal`` share.

MXNet runs these as data-dependent C++ loops; here each is a fixed-size XLA program:
suppression is a ``lax.while_loop`` over boxes in score order, results are compacted to the
front and padded with ``-1`` rows exactly where MXNet leaves them, so they compile once and run
inside the fused training step. Gradients follow MXNet: ``box_nms`` routes each output row's
gradient back to the input row it came from (even across a format conversion); ``box_iou`` and
``bipartite_matching`` have none (zeros).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._attrs import Param, choice, p_bool, p_float, p_int
from ._def import OpDef, fail, register

sg = jax.lax.stop_gradient


# ------------------------------------------------------------------ shared box helpers
def _intersect_1d(a1, a2, b1, b2, center: bool):
    """MXNet's ``Intersect`` along one axis (``a1, a2`` = min/max or center/size)."""
    if center:
        a1, a2 = a1 - a2 / 2, a1 + a2 / 2
        b1, b2 = b1 - b2 / 2, b1 + b2 / 2
    return jnp.maximum(jnp.minimum(a2, b2) - jnp.maximum(a1, b1), 0)


def _area(b, center: bool):
    w, h = (b[..., 2], b[..., 3]) if center else (b[..., 2] - b[..., 0], b[..., 3] - b[..., 1])
    return jnp.where((w < 0) | (h < 0), 0, w * h)


def pair_iou(a, b, center: bool = False):
    """IoU of every box in ``a`` (..., 4) against every box in ``b`` (M, 4): shape (..., M).

    MXNet's ``box_iou``/``box_nms`` rule: no overlap gives 0; a zero union gives NaN (which
    never suppresses anything), as in MXNet.
    """
    a, b = a[..., None, :], b
    inter = _intersect_1d(a[..., 0], a[..., 2], b[..., 0], b[..., 2], center) * _intersect_1d(
        a[..., 1], a[..., 3], b[..., 1], b[..., 3], center
    )
    return inter / (_area(a, center) + _area(b, center) - inter)


def greedy_nms(boxes, valid, overlap_fn, thresh: float, same=None, max_keep=None, inclusive=False):
    """Greedy NMS over boxes already in score order; returns the keep mask.

    Box ``i`` (if still kept) suppresses every later box ``j`` with ``overlap > thresh``
    (``>=`` when ``inclusive``), only within its class when ``same`` (class ids) is given.
    With ``max_keep`` the loop stops once that many boxes are kept (later boxes stay as they
    are, as in MXNet's Proposal). One ``while_loop``; no host round trip.
    """
    boxes, valid = sg(boxes), sg(valid)
    n = boxes.shape[0]
    pos = jnp.arange(n)
    limit = n if max_keep is None else max_keep

    def cond(state):
        i, _, kept = state
        return (i < n) & (kept < limit)

    def body(state):
        i, keep, kept = state

        def suppress(k):
            ov = overlap_fn(boxes[i], boxes)
            hit = (ov >= thresh) if inclusive else (ov > thresh)
            hit = hit & (pos > i)
            if same is not None:
                hit = hit & (same == same[i])
            return k & ~hit

        keep = jax.lax.cond(keep[i], suppress, lambda k: k, keep)
        return i + 1, keep, kept + keep[i].astype(jnp.int32)

    _, keep, _ = jax.lax.while_loop(cond, body, (jnp.int32(0), valid, jnp.int32(0)))
    return keep


def compact(keep):
    """Positions of kept entries first (in order), then the rest; and the kept count."""
    order = jnp.argsort(~keep, stable=True)
    return order, keep.sum()


# ------------------------------------------------------------------ box_iou
def _iou_shape(a, s):
    for name, sh in zip(("lhs", "rhs"), s):
        if sh is not None and (len(sh) < 2 or sh[-1] != 4):
            fail(
                f"{name} {tuple(sh)} must be at least 2-D with a last dimension of 4 "
                f"(one box per row)"
            )
    if None in s:
        return s, [None]
    return s, [tuple(s[0][:-1]) + tuple(s[1][:-1])]


def _iou_lower(a, ins, aux, ctx):
    lhs, rhs = sg(ins[0]), sg(ins[1])
    out = pair_iou(lhs.reshape(-1, 4), rhs.reshape(-1, 4), a.format == "center")
    return [out.reshape(lhs.shape[:-1] + rhs.shape[:-1])]


register(
    OpDef(
        name="_contrib_box_iou",
        params={"format": Param(choice("corner", "center"), "corner")},
        inputs=("lhs", "rhs"),
        infer_shape=_iou_shape,
        lower=_iou_lower,
    )
)


# ------------------------------------------------------------------ box_nms
def _nms_check(a, width: int) -> None:
    cs, ce = a.coord_start, a.coord_start + 3
    if width < (6 if a.id_index > 0 else 5):
        fail(
            f"the last dimension ({width}) must hold a score and 4 coordinates"
            f"{' and a class id' if a.id_index > 0 else ''}"
        )
    if not 0 <= a.score_index < width or cs <= a.score_index <= ce:
        fail(
            f"score_index={a.score_index} must lie in [0, {width}) outside the coordinates "
            f"[{cs}, {ce}]"
        )
    if cs < 0 or ce >= width:
        fail(f"coord_start={cs}: coordinates [{cs}, {ce}] must lie in [0, {width})")
    if a.id_index >= 0 and (
        a.id_index >= width or cs <= a.id_index <= ce or a.id_index == a.score_index
    ):
        fail(
            f"id_index={a.id_index} must lie in [0, {width}) and differ from score_index and "
            f"the coordinates [{cs}, {ce}]"
        )


def _nms_shape(a, s):
    d = s[0]
    if d is None:
        return s, [None]
    if len(d) < 2:
        fail(f"data {tuple(d)} must be at least 2-D (..., num_boxes, box_width)")
    _nms_check(a, d[-1])
    return s, [tuple(d)]


def _convert(boxes, to_center: bool):
    """MXNet's in-place corner<->center conversion, which skips rows whose first coordinate
    is negative (its marker for padding)."""
    p0, p1, p2, p3 = (boxes[..., i] for i in range(4))
    if to_center:
        new = jnp.stack([(p0 + p2) / 2, (p1 + p3) / 2, p2 - p0, p3 - p1], -1)
    else:
        new = jnp.stack([p0 - p2 / 2, p1 - p3 / 2, p0 + p2 / 2, p1 + p3 / 2], -1)
    return jnp.where((p0 < 0)[..., None], boxes, new)


def _nms_one(a, data):
    """box_nms on one (N, W) batch element."""
    n = data.shape[0]
    center = a.in_format == "center"
    d = sg(data)
    score = d[:, a.score_index]
    valid = score > a.valid_thresh
    if a.id_index >= 0:  # MXNet drops background rows, default id -1 (its padding rows)
        valid = valid & (d[:, a.id_index] != a.background_id)
    order = jnp.argsort(jnp.where(valid, -score, jnp.inf), stable=True)
    topk = n if a.topk < 0 else min(n, a.topk)
    ranked_valid = valid[order] & (jnp.arange(n) < topk)
    boxes = d[order, a.coord_start : a.coord_start + 4]
    same = None
    if a.id_index >= 0 and not a.force_suppress:
        same = jnp.trunc(d[order, a.id_index])
    keep = greedy_nms(
        boxes, ranked_valid, lambda b, bs: pair_iou(b, bs, center), a.overlap_thresh, same
    )
    pos, count = compact(keep)
    rows = data[order[pos]]  # differentiable gather: the gradient goes back to the source row
    out = jnp.where((jnp.arange(n) < count)[:, None], rows, -1.0).astype(data.dtype)
    if a.in_format != a.out_format:
        cs = a.coord_start
        coords = out[:, cs : cs + 4]
        conv = _convert(coords, a.out_format == "center")
        # MXNet's backward copies the head gradient without the conversion's Jacobian.
        # Concatenated, not ``.at[].set``: XLA:CPU miscompiles an in-place update fed by
        # slices of the same array when a reshape follows (openxla/xla#49176).
        out = jnp.concatenate([out[:, :cs], coords + sg(conv - coords), out[:, cs + 4 :]], 1)
    return out


def _nms_lower(a, ins, aux, ctx):
    data = ins[0]
    if a.topk == 0:
        return [data]
    flat = data.reshape((-1,) + data.shape[-2:])
    out = jax.vmap(lambda x: _nms_one(a, x))(flat)
    return [out.reshape(data.shape)]


_FMT = choice("corner", "center")
register(
    OpDef(
        name="_contrib_box_nms",
        aliases=("_contrib_box_non_maximum_suppression",),
        params={
            "overlap_thresh": Param(p_float, 0.5),
            "valid_thresh": Param(p_float, 0.0),
            "topk": Param(p_int, -1),
            "coord_start": Param(p_int, 2),
            "score_index": Param(p_int, 1),
            "id_index": Param(p_int, -1),
            "background_id": Param(p_int, -1),
            "force_suppress": Param(p_bool, False),
            "in_format": Param(_FMT, "corner"),
            "out_format": Param(_FMT, "corner"),
        },
        outputs=("output0",),
        num_outputs_total=lambda a: 2,  # MXNet's hidden second output keeps the source rows
        infer_shape=_nms_shape,
        lower=_nms_lower,
    )
)


# ------------------------------------------------------------------ bipartite_matching
def _match_shape(a, s):
    d = s[0]
    if d is None:
        return s, [None, None]
    if len(d) < 2:
        fail(f"data {tuple(d)} must be a score matrix of at least 2 dims (..., rows, cols)")
    d = tuple(d)
    return s, [d[:-1], d[:-2] + d[-1:]]


def _match_one(a, scores):
    """Greedy matching of one (R, C) score matrix, best scores first (MXNet's loop)."""
    r_n, c_n = scores.shape
    flat = scores.reshape(-1)
    order = jnp.argsort(flat if a.is_ascend else -flat, stable=True)
    total = r_n * c_n

    def cond(st):
        j, _, _, _, done = st
        return (j < total) & ~done

    def body(st):
        j, rm, cm, count, done = st
        idx = order[j]
        r, c = idx // c_n, idx % c_n
        s = flat[idx]
        free = (rm[r] < 0) & (cm[c] < 0)
        good = (s < a.threshold) if a.is_ascend else (s > a.threshold)
        take = free & good
        rm = jnp.where(take, rm.at[r].set(c), rm)
        cm = jnp.where(take, cm.at[c].set(r), cm)
        count = count + take.astype(jnp.int32)
        # MXNet stops after the (topk+1)-th match, or at the first free pair with a bad score
        done = (free & ~good) | (take & (a.topk > 0) & (count > a.topk))
        return j + 1, rm, cm, count, done

    init = (
        jnp.int32(0),
        jnp.full((r_n,), -1, jnp.int32),
        jnp.full((c_n,), -1, jnp.int32),
        jnp.int32(0),
        jnp.bool_(False),
    )
    _, rm, cm, _, _ = jax.lax.while_loop(cond, body, init)
    return rm, cm


def _match_lower(a, ins, aux, ctx):
    data = sg(ins[0])
    flat = data.reshape((-1,) + data.shape[-2:])
    rm, cm = jax.vmap(lambda x: _match_one(a, x))(flat)
    return [
        rm.reshape(data.shape[:-1]).astype(data.dtype),
        cm.reshape(data.shape[:-2] + data.shape[-1:]).astype(data.dtype),
    ]


register(
    OpDef(
        name="_contrib_bipartite_matching",
        params={
            "is_ascend": Param(p_bool, False),
            "threshold": Param(p_float),
            "topk": Param(p_int, -1),
        },
        outputs=("output0", "output1"),
        infer_shape=_match_shape,
        infer_type=lambda a, t: (t, [t[0], t[0]]),
        lower=_match_lower,
    )
)
