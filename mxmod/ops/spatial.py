"""Spatial resampling: ``_contrib_BilinearResize2D``, ``_contrib_AdaptiveAvgPooling2D``,
``GridGenerator``, ``BilinearSampler`` and ``SpatialTransformer`` (MXNet 1.9.1 names,
attributes and outputs; ``UpSampling`` lives in ``pool.py``).

Resize and adaptive pooling are separable linear maps whose weights depend only on the
shapes, so they lower to two small constant matrices (``einsum``); their gradients are
the transposed maps, as MXNet's kernels compute. The sampler reads the four neighbours of
each source point with zero padding outside the image (MXNet's ``between`` checks); its
data and grid gradients are those of that expression, as in MXNet's CPU backward. The
hidden outputs MXNet keeps (the grids) are returned too, so JSON graphs index them alike.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..base import MXNetError
from ._attrs import Param, choice, optional, p_bool, p_float, p_int, p_shape
from ._def import OpDef, register

# interpolation and pooling weights applied in full float32, as MXNet's kernels (GPUs would
# otherwise round the matmul inputs to TF32)
EXACT = jax.lax.Precision.HIGHEST


def _bad(msg: str) -> None:
    raise MXNetError(msg)


def _need_4d(what: str, shape) -> None:
    if len(shape) != 4:
        _bad(f"{what} {tuple(shape)} must be 4-D (batch, channel, height, width)")


# ------------------------------------------------------------------ BilinearResize2D
def _scaled(size: int, scale: float) -> int:
    """``int(float32(scale) * size)``: MXNet scales shapes in float32 (``0.7 * 90`` is 63)."""
    return int(np.float32(scale) * np.float32(size))


def _resize_dim(a, size: int, which: str) -> int:
    """MXNet's output height/width of BilinearResize2D for one input dimension."""
    target = a.height if which == "height" else a.width
    scale = a.scale_height if which == "height" else a.scale_width
    mode = a.mode
    if mode == "size":
        if a.scale_height is None:  # MXNet then uses height/width, even with scale_width
            return target
        if scale is None:
            _bad("scale_height without scale_width: pass both (MXNet fails on this too)")
        return _scaled(size, scale)
    if mode == "odd_scale":
        if scale is None:
            _bad(f"mode='odd_scale' needs scale_{which}; pass scale_height= and scale_width=")
        return _scaled(size - 1, scale) + 1 if size % 2 else _scaled(size, scale)
    if mode == "to_even_down":
        return size - size % 2
    if mode == "to_even_up":
        return size + size % 2
    if mode == "to_odd_down":
        return size if size % 2 else size - 1
    return size if size % 2 else size + 1  # to_odd_up


def _resize_shape(a, s):
    data = s[0]
    if data is None:
        return s, [None]
    _need_4d("data", data)
    n, c, h, w = data
    if a.mode == "like":
        like = s[1]
        if like is None:
            return s, [None]
        _need_4d("like", like)
        oh, ow = like[2], like[3]
    else:
        oh, ow = _resize_dim(a, h, "height"), _resize_dim(a, w, "width")
    if oh <= 0 or ow <= 0:
        _bad(f"output size {(oh, ow)} must be positive; check height/width/scale attributes")
    return s, [(n, c, oh, ow)]


def _resize_matrix(n_in: int, n_out: int, align_corners: bool) -> np.ndarray:
    """(n_out, n_in) interpolation weights; float32 arithmetic as in MXNet's kernel."""
    m = np.zeros((n_out, n_in), np.float32)
    if n_in == n_out:
        return np.eye(n_in, dtype=np.float32)
    if align_corners:
        scale = np.float32((n_in - 1) / (n_out - 1)) if n_out > 1 else np.float32(0)
    else:
        scale = np.float32(n_in / n_out)
    for o in range(n_out):
        if align_corners:
            src = np.float32(scale * np.float32(o))
        else:
            src = max(np.float32(scale * np.float32(o + 0.5) - np.float32(0.5)), np.float32(0))
        i0 = int(src)
        step = 1 if i0 < n_in - 1 else 0
        lam = np.float32(src - np.float32(i0))
        m[o, i0] += np.float32(1) - lam
        m[o, i0 + step] += lam
    return m


def _separable(x, mh: np.ndarray, mw: np.ndarray):
    mh, mw = jnp.asarray(mh, x.dtype), jnp.asarray(mw, x.dtype)
    out = jnp.einsum("nchw,oh,pw->ncop", x, mh, mw, precision=EXACT)
    return out.astype(x.dtype)


def _resize_lower(a, ins, aux, ctx):
    x = ins[0]
    _, (out,) = _resize_shape(a, [tuple(i.shape) for i in ins])
    mh = _resize_matrix(x.shape[2], out[2], a.align_corners)
    mw = _resize_matrix(x.shape[3], out[3], a.align_corners)
    return [_separable(x, mh, mw)]


register(
    OpDef(
        name="_contrib_BilinearResize2D",
        params={
            "height": Param(p_int, 1),
            "width": Param(p_int, 1),
            "scale_height": Param(optional(p_float), None),
            "scale_width": Param(optional(p_float), None),
            "mode": Param(
                choice(
                    "size",
                    "odd_scale",
                    "like",
                    "to_even_down",
                    "to_even_up",
                    "to_odd_down",
                    "to_odd_up",
                ),
                "size",
            ),
            "align_corners": Param(p_bool, True),
        },
        inputs=lambda a: ["data", "like"] if a.mode == "like" else ["data"],
        infer_shape=_resize_shape,
        lower=_resize_lower,
    )
)


# ------------------------------------------------------------- AdaptiveAvgPooling2D
def _adaptive_size(a) -> tuple:
    size = a.output_size
    if len(size) == 0:
        return (1, 1)
    if len(size) == 1:
        return (size[0], size[0])
    if len(size) != 2:
        _bad(f"output_size {size} must be an int or an (height, width) pair")
    return tuple(size)


def _adaptive_shape(a, s):
    data = s[0]
    oh, ow = _adaptive_size(a)
    if oh <= 0 or ow <= 0:
        _bad(f"output_size {(oh, ow)} must be positive")
    if data is None:
        return s, [None]
    _need_4d("data", data)
    return s, [(data[0], data[1], oh, ow)]


def _adaptive_matrix(n_in: int, n_out: int) -> np.ndarray:
    """(n_out, n_in) averaging weights over MXNet's bins [floor(i*in/out), ceil((i+1)*in/out))."""
    m = np.zeros((n_out, n_in), np.float32)
    for o in range(n_out):
        lo = (o * n_in) // n_out
        hi = -((-(o + 1) * n_in) // n_out)
        m[o, lo:hi] = 1.0 / (hi - lo)
    return m


def _adaptive_lower(a, ins, aux, ctx):
    x = ins[0]
    oh, ow = _adaptive_size(a)
    return [_separable(x, _adaptive_matrix(x.shape[2], oh), _adaptive_matrix(x.shape[3], ow))]


register(
    OpDef(
        name="_contrib_AdaptiveAvgPooling2D",
        params={"output_size": Param(p_shape, ())},
        infer_shape=_adaptive_shape,
        lower=_adaptive_lower,
    )
)


# ------------------------------------------------------------------- GridGenerator
def _target(a, what: str) -> tuple:
    h, w = a.target_shape
    if h <= 0 or w <= 0:
        _bad(f"{what} needs target_shape=(height, width) with positive sizes, got {a.target_shape}")
    return h, w


def _gridgen_shape(a, s):
    data = s[0]
    if a.transform_type == "affine":
        h, w = _target(a, "transform_type='affine'")
        if data is not None and (len(data) != 2 or data[1] != 6):
            _bad(f"data {tuple(data)} must be (batch, 6): one 2x3 affine matrix per sample")
        n = data[0] if data is not None else None
        return s, [None if n is None else (n, 2, h, w), (3, h * w)]
    if data is None:
        return s, [None, None]
    if len(data) != 4 or data[1] != 2:
        _bad(f"data {tuple(data)} must be (batch, 2, height, width): a flow field")
    return s, [tuple(data), tuple(data)]


def _dst_grid(h: int, w: int, dtype) -> np.ndarray:
    """(3, h*w): normalised target x, y in [-1, 1] (row-major) and ones."""
    xs = -1.0 + np.arange(w, dtype=np.float64) * 2.0 / max(w - 1, 1)
    ys = -1.0 + np.arange(h, dtype=np.float64) * 2.0 / max(h - 1, 1)
    gx, gy = np.meshgrid(xs, ys)
    return np.stack([gx.ravel(), gy.ravel(), np.ones(h * w)]).astype(dtype)


def _affine_grid(theta, h: int, w: int):
    dst = jnp.asarray(_dst_grid(h, w, np.float32), theta.dtype)
    grid = jnp.einsum("nij,jk->nik", theta.reshape(-1, 2, 3), dst, precision=EXACT)
    return grid.reshape(-1, 2, h, w), dst


def _gridgen_lower(a, ins, aux, ctx):
    x = ins[0]
    if a.transform_type == "affine":
        h, w = _target(a, "transform_type='affine'")
        grid, dst = _affine_grid(x, h, w)
        return [grid, dst]
    _, _, h, w = x.shape
    xs = jnp.arange(w, dtype=x.dtype)[None, :]
    ys = jnp.arange(h, dtype=x.dtype)[:, None]
    gx = (x[:, 0] + xs) / ((w - 1) / 2.0) - 1
    gy = (x[:, 1] + ys) / ((h - 1) / 2.0) - 1
    return [jnp.stack([gx, gy], axis=1).astype(x.dtype), x]


register(
    OpDef(
        name="GridGenerator",
        params={
            "transform_type": Param(choice("affine", "warp")),
            "target_shape": Param(p_shape, (0, 0)),
        },
        num_outputs_total=lambda a: 2,
        infer_shape=_gridgen_shape,
        infer_type=lambda a, t: (t, [t[0], t[0]]),
        lower=_gridgen_lower,
    )
)


# ----------------------------------------------------------------- BilinearSampler
def bilinear_sample(x, grid):
    """Sample NCHW ``x`` at ``grid`` (N, 2, Ho, Wo) of normalised (x, y) in [-1, 1];
    corners outside the image read zero (MXNet's BilinearSampler forward)."""
    n, c, h, w = x.shape
    xr = (grid[:, 0] + 1) * (w - 1) / 2
    yr = (grid[:, 1] + 1) * (h - 1) / 2
    x0f, y0f = jnp.floor(xr), jnp.floor(yr)
    wx1, wy1 = xr - x0f, yr - y0f
    x0, y0 = x0f.astype(jnp.int32), y0f.astype(jnp.int32)
    flat = x.reshape(n, c, h * w)

    def corner(yi, xi, wgt):
        ok = (xi >= 0) & (xi <= w - 1) & (yi >= 0) & (yi <= h - 1)
        idx = jnp.clip(yi, 0, h - 1) * w + jnp.clip(xi, 0, w - 1)  # (N, Ho, Wo)
        v = jnp.take_along_axis(flat, idx.reshape(n, 1, -1), axis=2).reshape((n, c) + idx.shape[1:])
        return jnp.where(ok[:, None], v, 0) * wgt[:, None]

    out = (
        corner(y0, x0, (1 - wy1) * (1 - wx1))
        + corner(y0, x0 + 1, (1 - wy1) * wx1)
        + corner(y0 + 1, x0, wy1 * (1 - wx1))
        + corner(y0 + 1, x0 + 1, wy1 * wx1)
    )
    return out.astype(x.dtype)


def _sampler_shape(a, s):
    data, grid = s
    if data is not None:
        _need_4d("data", data)
    if grid is not None and (len(grid) != 4 or grid[1] != 2):
        _bad(f"grid {tuple(grid)} must be (batch, 2, height, width): normalised (x, y)")
    if data is None or grid is None:
        return s, [None, None]
    if data[0] != grid[0]:
        _bad(f"data batch {data[0]} and grid batch {grid[0]} differ")
    return s, [(data[0], data[1], grid[2], grid[3]), tuple(grid)]


register(
    OpDef(
        name="BilinearSampler",
        params={"cudnn_off": Param(optional(p_bool), None)},
        inputs=("data", "grid"),
        num_outputs_total=lambda a: 2,
        infer_shape=_sampler_shape,
        infer_type=lambda a, t: (t, [t[0], t[0]]),
        lower=lambda a, ins, aux, ctx: [bilinear_sample(ins[0], ins[1]), ins[1]],
    )
)


# -------------------------------------------------------------- SpatialTransformer
def _st_shape(a, s):
    data, loc = s
    h, w = _target(a, "SpatialTransformer")
    if data is None:
        return s, [None, (3, h * w), None]
    _need_4d("data", data)
    if loc is not None and (len(loc) != 2 or loc[1] != 6 or loc[0] != data[0]):
        _bad(f"loc {tuple(loc)} must be (batch, 6) = {(data[0], 6)}: one affine matrix per sample")
    n = data[0]
    return [tuple(data), (n, 6)], [(n, data[1], h, w), (3, h * w), (n, 2, h, w)]


def _st_lower(a, ins, aux, ctx):
    x, loc = ins
    h, w = _target(a, "SpatialTransformer")
    grid, dst = _affine_grid(loc, h, w)
    return [bilinear_sample(x, grid), dst, grid]


register(
    OpDef(
        name="SpatialTransformer",
        params={
            "target_shape": Param(p_shape, (0, 0)),
            "transform_type": Param(choice("affine")),
            "sampler_type": Param(choice("bilinear")),
            "cudnn_off": Param(optional(p_bool), None),
        },
        inputs=("data", "loc"),
        num_outputs_total=lambda a: 3,
        infer_shape=_st_shape,
        infer_type=lambda a, t: (t, [t[0]] * 3),
        lower=_st_lower,
    )
)
