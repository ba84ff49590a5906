"""Region-of-interest pooling: ``ROIPooling`` (max), MXNet ``_contrib_ROIAlign`` (bilinear,
incl. ``position_sensitive``, ``sample_ratio`` and ``aligned``) and ``_contrib_PSROIPooling``
(position-sensitive average).

ROIAlign and PSROIPooling are separable: every output bin is ``Ay[n, p, :] @ image @ Ax[n, q, :]``
with small per-ROI interpolation (or averaging) matrices built from the ROI coordinates.
ROIAlign gathers the few image rows each bin row reads (``Ay`` is sparse) and contracts the
width with a batched matmul, in ROI chunks that stay cache-sized; the position-sensitive
variants contract dense matrices. Autodiff of either is exactly MXNet's scatter of bilinear
weights. ROIAlign's adaptive sampling grid
(``sample_ratio <= 0``: ``ceil(roi_size / pooled_size)`` points per bin, a data-dependent
count) is evaluated on a static grid of ``ceil((H + 2) / pooled_h)`` points, masked per ROI:
exact for every ROI up to two feature cells larger than the map (all clipped proposals);
a batch holding a larger one takes a wider path (``lax.cond``) whose window of ``H + 5``
points per bin covers every point inside the map. ROIPooling takes a masked two-stage max.
As in MXNet, ROIs get no gradient.

Bin boundaries and sample counts follow MXNet's float32 arithmetic bit for bit (checked on
300 random regions per operator against MXNet 1.9.1, on CPU and on an H100): divisions go
through ``fdiv`` (correctly rounded; XLA multiplies by reciprocals and GPUs divide within 2
ulp), a product feeding a sum goes through ``rounded`` (no fused multiply-add), static bin
tables are computed in numpy float32, and contractions run at full float32 precision.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ._attrs import Param, p_bool, p_float, p_int, p_shape
from ._def import OpDef, fail, register

sg = jax.lax.stop_gradient
# full float32 sums as MXNet's kernels (GPUs would otherwise round matmul inputs to TF32)
EXACT = jax.lax.Precision.HIGHEST


def _residual(q, den, num):
    """``q * den - num`` with one final rounding, for a whole ``den`` below 2**12: ``q`` split
    into two halves of 12 significant bits, whose products with ``den`` are exact, the first
    difference exact too (Sterbenz: ``hi * den`` is within a factor 2 of ``num``)."""
    bits = jax.lax.bitcast_convert_type(q, jnp.uint32) & jnp.uint32(0xFFFFF000)
    hi = jax.lax.bitcast_convert_type(bits, jnp.float32)
    return (hi * den - num) + (q - hi) * den


def fdiv(num, den):
    """float32 ``num / den`` correctly rounded, as MXNet's C++ kernels divide, for whole
    divisors below 2**12 (bin counts, strides). XLA rewrites a division by a constant or a
    broadcast into a multiplication by the reciprocal (``ceil(3 * (1 / 7) * 7)`` is 4, not 3)
    and GPUs divide approximately (within 2 ulp); either moves integer bin boundaries. The
    quotient (a full-shape divisor behind a barrier keeps XLA's CPU division exact) is
    corrected to the neighbour within 2 ulp whose exact residual is smallest."""
    num = jnp.asarray(num, jnp.float32)
    num, den = jnp.broadcast_arrays(num, jnp.asarray(den, jnp.float32))
    q0 = num / jax.lax.optimization_barrier(den)
    n, d, q = sg(num), sg(den), sg(q0)
    best, err = q, jnp.abs(_residual(q, d, n))
    for direction in (jnp.float32(-jnp.inf), jnp.float32(jnp.inf)):
        near = q
        for _ in range(2):
            near = jnp.nextafter(near, direction)
            e = jnp.abs(_residual(near, d, n))
            best, err = jnp.where(e < err, near, best), jnp.minimum(e, err)
    return q0 + (best - q)  # an exact step of a few ulp; the gradient is the division's


def rounded(x):
    """``x`` kept as its own rounded result: XLA contracts a product and the sum that uses it
    into one fused multiply-add (one rounding where MXNet's C++ has two), which moves
    boundaries that land on integers. A select between the two (an identity: NaN stays NaN)
    is something neither XLA nor LLVM contracts through."""
    return jnp.where(x != x, jnp.asarray(jnp.nan, x.dtype), x)


def cround(x):
    """C's ``round`` (half away from zero), which MXNet's ROI kernels use."""
    return jnp.sign(x) * jnp.floor(jnp.abs(x) + 0.5)


def roi_batch(rois, batch: int):
    """One-hot batch selector (N, B) from the first ROI column (negative: all zero)."""
    return jax.nn.one_hot(rois[:, 0].astype(jnp.int32), batch, dtype=rois.dtype)


def _pooled(a) -> tuple:
    ps = tuple(a.pooled_size)
    if len(ps) == 1:
        ps = ps * 2
    if len(ps) != 2 or min(ps) <= 0:
        fail(f"pooled_size {a.pooled_size} must be 1 or 2 positive ints (height, width)")
    return ps


def _check_rois(rois) -> None:
    if rois is not None and (len(rois) != 2 or rois[1] != 5):
        fail(f"rois {tuple(rois)} must be (num_rois, 5): [batch_index, x1, y1, x2, y2]")


def _check_data(data) -> None:
    if data is not None and len(data) != 4:
        fail(f"data {tuple(data)} must be 4-D (batch, channel, height, width)")


def apply_separable(data, sel, ay, ax, ps_groups):
    """Position-sensitive separable pooling: ``out[n, c, p, q] = sum_hw ay[n,p,h]
    data[b_n, c', h, w] ax[n,q,w]``, ``sel`` (N, B) choosing the image and ``ps_groups =
    (gh, gw, (GH, GW))`` the channel ``c' = (c, gh[p], gw[q])`` of data viewed as
    (B, C, GH, GW, H, W)."""
    gh, gw, (ngh, ngw) = ps_groups
    b, c, h, w = data.shape
    x = data.reshape(b, c // (ngh * ngw), ngh, ngw, h, w)[:, :, gh][:, :, :, gw]  # B,C,PH,PW,H,W
    t = jnp.einsum("nph,nb,bcpqhw->npcqw", ay, sel, x, precision=EXACT)
    return jnp.einsum("npcqw,nqw->ncpq", t, ax, precision=EXACT)


# ------------------------------------------------------------------ ROIAlign
def _align_shape(a, s):
    data, rois = s
    _check_data(data)
    _check_rois(rois)
    ph, pw = _pooled(a)
    if data is None or rois is None:
        return s, [None]
    c = data[1]
    if a.position_sensitive:
        if c % (ph * pw):
            fail(
                f"position_sensitive: data channels {c} must be a multiple of pooled "
                f"height * width = {ph * pw}"
            )
        c //= ph * pw
    return s, [(rois[0], c, ph, pw)]


def _align_taps(start, size, n_bins: int, n_in: int, grid, g_max: int, windowed=False):
    """Sparse interpolation along one axis: (index, weight) pairs (N, bins, 2 * g_max) giving
    MXNet's bilinear weights of each sampling point, averaged over the ``grid`` (N,) points
    of a bin (unused points weigh 0). ``windowed``: the ``g_max`` points evaluated start
    just before the first one inside the map (points outside weigh 0 anyway), so a bin of
    any size is exact when ``g_max`` covers the map."""
    binsz = fdiv(size, n_bins)
    p = jnp.arange(n_bins, dtype=start.dtype)
    g = grid.astype(start.dtype)[:, None, None]
    base = start[:, None, None] + rounded(p[None, :, None] * binsz[:, None, None])
    i = jnp.arange(g_max, dtype=start.dtype)[None, None, :]
    if windowed:  # first point at or past -1, estimated, less a margin for rounding
        step = binsz[:, None, None] / g
        first = jnp.ceil((-1.0 - base) / step - 0.5) - 2.0
        i = i + jnp.clip(first, 0.0, jnp.maximum(g - g_max, 0.0))
    y = base + fdiv((i + 0.5) * binsz[:, None, None], g)
    used = (i < g) & ~((y < -1.0) | (y > n_in))
    y = jnp.maximum(y, 0.0)
    low = jnp.floor(y).astype(jnp.int32)
    edge = low >= n_in - 1
    low = jnp.where(edge, n_in - 1, low)
    high = jnp.where(edge, n_in - 1, low + 1)
    y = jnp.where(edge, low.astype(y.dtype), y)
    ly = y - low
    scale = fdiv(used.astype(start.dtype), g)
    return (jnp.concatenate([low, high], -1), jnp.concatenate([(1 - ly) * scale, ly * scale], -1))


def _dense(idx, wts, n_in: int):
    """(N, bins, n_in) matrix of sparse taps."""
    return (jax.nn.one_hot(idx, n_in, dtype=wts.dtype) * wts[..., None]).sum(2)


def _align_rows(data, bidx, yi, yw, ax):
    """ROIAlign without position sensitivity: gather the few input rows each bin row reads
    (weighted), then contract the width with the dense ``ax`` (N, Q, W); in ROI chunks whose
    intermediates stay cache-sized."""
    b, c, h, w = data.shape
    n, ph, k = yi.shape
    img = data.transpose(0, 2, 1, 3).reshape(b * h, c * w)
    ok = (bidx >= 0) & (bidx < b)
    rows = jnp.where(ok[:, None, None], bidx[:, None, None] * h + yi, 0)
    yw = jnp.where(ok[:, None, None], yw, 0).astype(data.dtype)

    def block(r, wt, a_x):
        t = jnp.einsum("npk,npkx->npx", wt, img[r], precision=EXACT)
        return jnp.einsum("npcw,nqw->npcq", t.reshape(r.shape[0], ph, c, w), a_x, precision=EXACT)

    chunk = max(1, (1 << 20) // (ph * k * c * w))
    if n <= chunk:
        return block(rows, yw, ax).transpose(0, 2, 1, 3)
    steps = -(-n // chunk)
    pad = ((0, steps * chunk - n),) + ((0, 0),) * 2

    def split(v):
        return jnp.pad(v, pad).reshape(steps, chunk, *v.shape[1:])

    out = jax.lax.map(lambda t: block(*t), (split(rows), split(yw), split(ax)))
    return out.reshape(steps * chunk, *out.shape[2:])[:n].transpose(0, 2, 1, 3)


def _align_lower(a, ins, aux, ctx):
    data, rois = ins[0], sg(ins[1])
    ph, pw = _pooled(a)
    b, _, h, w = data.shape
    off = 0.5 if a.aligned else 0.0
    x1, y1, x2, y2 = (rounded(rois[:, i] * a.spatial_scale) - off for i in range(1, 5))
    rw, rh = x2 - x1, y2 - y1
    if not a.aligned:
        rw, rh = jnp.maximum(rw, 1.0), jnp.maximum(rh, 1.0)
    groups = (jnp.arange(ph), jnp.arange(pw), (ph, pw))
    if a.sample_ratio > 0:
        gy = gx = jnp.full(rois.shape[:1], a.sample_ratio)
        gmy = gmx = a.sample_ratio
    else:
        gy, gx = jnp.ceil(fdiv(rh, ph)), jnp.ceil(fdiv(rw, pw))
        gmy, gmx = max(1, math.ceil((h + 2) / ph)), max(1, math.ceil((w + 2) / pw))

    def pool(data, gy, gx, cap_y: int, cap_x: int, windowed: bool):
        yi, yw = _align_taps(y1, rh, ph, h, gy, cap_y, windowed)
        ax = _dense(*_align_taps(x1, rw, pw, w, gx, cap_x, windowed), w).astype(data.dtype)
        if not a.position_sensitive:
            return _align_rows(data, rois[:, 0].astype(jnp.int32), yi, yw, ax)
        ay = _dense(yi, yw, h).astype(data.dtype)
        return apply_separable(data, roi_batch(rois, b), ay, ax, groups)

    def capped(data):
        return pool(data, jnp.clip(gy, 1, gmy), jnp.clip(gx, 1, gmx), gmy, gmx, False)

    def wide(data):
        """Regions larger than the map by over two cells: their bins hold more points than
        the capped grid; a window of (map + 5) points per bin covers every point inside."""
        return pool(data, gy, gx, h + 5, w + 5, True)

    if a.sample_ratio > 0:
        return [capped(data)]
    return [jax.lax.cond(jnp.all((gy <= gmy) & (gx <= gmx)), capped, wide, data)]


register(
    OpDef(
        name="_contrib_ROIAlign",
        inputs=("data", "rois"),
        params={
            "pooled_size": Param(p_shape),
            "spatial_scale": Param(p_float),
            "sample_ratio": Param(p_int, -1),
            "position_sensitive": Param(p_bool, False),
            "aligned": Param(p_bool, False),
        },
        infer_shape=_align_shape,
        lower=_align_lower,
    )
)


# ------------------------------------------------------------------ ROIPooling
def _pool_shape(a, s):
    data, rois = s
    _check_data(data)
    _check_rois(rois)
    ph, pw = _pooled(a)
    if data is None or rois is None:
        return s, [None, None]
    out = (rois[0], data[1], ph, pw)
    return s, [out, out]


def _bins(start, size, n_bins: int, n_in: int):
    """ROIPooling's integer bin bounds (N, bins) along one axis, clipped to [0, n_in]."""
    binsz = fdiv(size.astype(jnp.float32), n_bins)
    p = jnp.arange(n_bins, dtype=jnp.float32)
    lo = jnp.floor(p[None] * binsz[:, None]).astype(jnp.int32) + start[:, None]
    hi = jnp.ceil((p[None] + 1) * binsz[:, None]).astype(jnp.int32) + start[:, None]
    return jnp.clip(lo, 0, n_in), jnp.clip(hi, 0, n_in)


def _pool_lower(a, ins, aux, ctx):
    data, rois = ins[0], sg(ins[1])
    ph, pw = _pooled(a)
    _, _, h, w = data.shape
    x1, y1, x2, y2 = (
        cround(rounded(rois[:, i] * a.spatial_scale)).astype(jnp.int32) for i in range(1, 5)
    )
    hs, he = _bins(y1, jnp.maximum(y2 - y1 + 1, 1), ph, h)
    ws, we = _bins(x1, jnp.maximum(x2 - x1 + 1, 1), pw, w)
    rows = (jnp.arange(h)[None, None] >= hs[..., None]) & (
        jnp.arange(h)[None, None] < he[..., None]
    )
    cols = (jnp.arange(w)[None, None] >= ws[..., None]) & (
        jnp.arange(w)[None, None] < we[..., None]
    )
    x = data[rois[:, 0].astype(jnp.int32)]  # (N, C, H, W)
    low = jnp.asarray(-jnp.inf, data.dtype)
    m1 = jnp.max(jnp.where(cols[:, None, None], x[:, :, :, None, :], low), axis=-1)  # N,C,H,PW
    m2 = jnp.max(jnp.where(rows[:, None, :, :, None], m1[:, :, None], low), axis=3)  # N,C,PH,PW
    empty = (he <= hs)[:, :, None] | (we <= ws)[:, None, :]
    out = jnp.where(empty[:, None], jnp.zeros((), data.dtype), m2)
    return [out, sg(out)]  # the second stands in for MXNet's hidden argmax output


register(
    OpDef(
        name="ROIPooling",
        inputs=("data", "rois"),
        params={"pooled_size": Param(p_shape), "spatial_scale": Param(p_float)},
        num_outputs_total=lambda a: 2,
        infer_shape=_pool_shape,
        lower=_pool_lower,
    )
)


# ------------------------------------------------------------------ PSROIPooling
def _group(a) -> int:
    return a.group_size if a.group_size > 0 else a.pooled_size


def _ps_shape(a, s):
    data, rois = s
    _check_data(data)
    _check_rois(rois)
    if a.pooled_size <= 0 or a.output_dim <= 0:
        fail(f"pooled_size {a.pooled_size} and output_dim {a.output_dim} must be positive")
    g = _group(a)
    if data is not None and data[1] != a.output_dim * g * g:
        fail(
            f"data has {data[1]} channels but output_dim * group_size^2 = "
            f"{a.output_dim} * {g}^2 = {a.output_dim * g * g}"
        )
    if data is None or rois is None:
        return s, [None]
    return s, [(rois[0], a.output_dim, a.pooled_size, a.pooled_size)]


def avg_axis(start, size, n_bins: int, n_in: int, dtype):
    """PSROIPooling's averaging matrix (N, bins, n_in) along one axis of a region from
    ``start`` of ``size`` (at least 0.1) cells."""
    binsz = fdiv(size, n_bins)
    p = jnp.arange(n_bins, dtype=start.dtype)
    lo = jnp.clip(jnp.floor(rounded(p[None] * binsz[:, None]) + start[:, None]), 0, n_in)
    hi = jnp.clip(jnp.ceil(rounded((p[None] + 1) * binsz[:, None]) + start[:, None]), 0, n_in)
    i = jnp.arange(n_in, dtype=start.dtype)
    inside = (i[None, None] >= lo[..., None]) & (i[None, None] < hi[..., None])
    count = jnp.maximum(hi - lo, 1.0)[..., None]
    return (inside / count).astype(dtype)


def group_index(n_bins: int, groups: int) -> np.ndarray:
    """``floor(float(p) * groups / n_bins)`` in float32 as MXNet computes it, clipped."""
    p = np.arange(n_bins, dtype=np.float32)
    g = np.floor(p * np.float32(groups) / np.float32(n_bins)).astype(np.int32)
    return np.clip(g, 0, groups - 1)


def _ps_lower(a, ins, aux, ctx):
    data, rois = ins[0], sg(ins[1])
    b, _, h, w = data.shape
    k, g = a.pooled_size, _group(a)
    sc = a.spatial_scale
    x1, y1 = rounded(cround(rois[:, 1]) * sc), rounded(cround(rois[:, 2]) * sc)
    x2, y2 = rounded((cround(rois[:, 3]) + 1.0) * sc), rounded((cround(rois[:, 4]) + 1.0) * sc)
    ay = avg_axis(y1, jnp.maximum(y2 - y1, 0.1), k, h, data.dtype)
    ax = avg_axis(x1, jnp.maximum(x2 - x1, 0.1), k, w, data.dtype)
    gidx = jnp.asarray(group_index(k, g))
    return [apply_separable(data, roi_batch(rois, b), ay, ax, (gidx, gidx, (g, g)))]


register(
    OpDef(
        name="_contrib_PSROIPooling",
        inputs=("data", "rois"),
        params={
            "spatial_scale": Param(p_float),
            "output_dim": Param(p_int),
            "pooled_size": Param(p_int),
            "group_size": Param(p_int, 0),
        },
        infer_shape=_ps_shape,
        lower=_ps_lower,
    )
)
