"""``mx.image.imrotate`` and ``random_rotate`` (MXNet 1.9.1): rotate float32 CHW/NCHW images
about their centre, optionally zoomed so no padding shows (``zoom_in``) or nothing is cut
(``zoom_out``).

MXNet builds a normalized sampling grid and runs its ``BilinearSampler`` operator
(samples outside the image read 0); this does the same arithmetic in float32 numpy.
"""

from __future__ import annotations

from numbers import Number

import numpy as np

from ..ndarray import NDArray
from ._ops import as_numpy, like

__all__ = ["imrotate", "random_rotate"]

_F = np.float32


def _bilinear_sample(data, grid):
    """MXNet's BilinearSampler: ``data`` (N, C, H, W), ``grid`` (N, 2, Ho, Wo) in [-1, 1]."""
    n, c, h, w = data.shape
    x = (grid[:, 0] + _F(1)) * _F(w - 1) / _F(2)
    y = (grid[:, 1] + _F(1)) * _F(h - 1) / _F(2)
    x0, y0 = np.floor(x).astype(np.int64), np.floor(y).astype(np.int64)
    wx, wy = _F(1) - (x - x0), _F(1) - (y - y0)
    out = np.zeros((n, c) + x.shape[1:], np.float32)
    batch = np.arange(n)[:, None, None]
    for dy, dx, weight in (
        (0, 0, wy * wx),
        (0, 1, wy * (_F(1) - wx)),
        (1, 0, (_F(1) - wy) * wx),
        (1, 1, (_F(1) - wy) * (_F(1) - wx)),
    ):
        yy, xx = y0 + dy, x0 + dx
        inside = (yy >= 0) & (yy <= h - 1) & (xx >= 0) & (xx <= w - 1)
        vals = data[batch, :, np.clip(yy, 0, h - 1), np.clip(xx, 0, w - 1)]  # N,Ho,Wo,C
        vals = np.where(inside[..., None], vals, _F(0))
        out += np.moveaxis(vals, -1, 1) * weight[:, None]
    return out


def imrotate(src, rotation_degrees, zoom_in=False, zoom_out=False):
    """Rotate float32 images by ``rotation_degrees`` (counter-clockwise), as
    ``mx.image.imrotate``.

    Args:
        src: CHW image or NCHW batch, float32 (NDArray or numpy).
        rotation_degrees: a scalar, or one angle per image of a batch.
        zoom_in: zoom so that no padding shows.
        zoom_out: zoom so that the whole image stays visible.

    Raises:
        ValueError: both zooms, a rank other than 3/4, or angles that do not match the batch.
        TypeError: a non-float32 image, or an array of angles for a single image.
    """
    if zoom_in and zoom_out:
        raise ValueError("`zoom_in` and `zoom_out` cannot be both True")
    arr, was_nd = as_numpy(src)
    if arr.dtype != np.float32:
        raise TypeError("Only `float32` images are supported by this function")
    expanded = arr.ndim == 3
    if expanded:
        arr = arr[None]
        if not isinstance(rotation_degrees, Number):
            raise TypeError(
                "When a single image is passed the rotation angle is required to be a scalar."
            )
    elif arr.ndim != 4:
        raise ValueError("Only 3D and 4D are supported by this function")
    if isinstance(rotation_degrees, Number):
        deg = np.full(len(arr), rotation_degrees, np.float32)
    else:
        deg = np.asarray(as_numpy(rotation_degrees)[0], np.float32).reshape(-1)
    if len(arr) != len(deg):
        raise ValueError("The number of images must be equal to the number of rotation angles")
    rad = (_F(np.pi) * deg / _F(180))[:, None, None]
    _, _, h, w = arr.shape
    hscale, wscale = _F((h - 1) / 2), _F((w - 1) / 2)
    hm = (np.repeat(np.arange(h, dtype=_F).reshape(h, 1), w, axis=1) - hscale)[None]
    wm = (np.repeat(np.arange(w, dtype=_F).reshape(1, w), h, axis=0) - wscale)[None]
    ca, sa = np.cos(rad), np.sin(rad)
    w_rot = (wm * ca - hm * sa) / wscale
    h_rot = (wm * sa + hm * ca) / hscale
    scale = _F(1)
    if zoom_in or zoom_out:
        hh, ww = _F(h), _F(w)
        rho = np.sqrt(hh * hh + ww * ww)
        ang = np.arctan(hh / ww)
        c1x, c1y = np.abs(rho * np.cos(ang + np.abs(rad))), np.abs(rho * np.sin(ang + np.abs(rad)))
        c2x, c2y = np.abs(rho * np.cos(ang - np.abs(rad))), np.abs(rho * np.sin(ang - np.abs(rad)))
        max_x, max_y = np.maximum(c1x, c2x), np.maximum(c1y, c2y)
        if zoom_out:
            scale = np.maximum(max_x / ww, max_y / hh)
        else:
            scale = np.minimum(ww / max_x, hh / max_y)
        scale = scale[:, None]
    grid = np.concatenate([w_rot[:, None], h_rot[:, None]], axis=1).astype(_F) * scale
    out = _bilinear_sample(arr, grid.astype(_F))
    return like(out[0] if expanded else out, was_nd)


def random_rotate(src, angle_limits, zoom_in=False, zoom_out=False):
    """Rotate by angles drawn with ``numpy.random.uniform(*angle_limits)`` (one per image),
    as ``mx.image.random_rotate``."""
    ndim = src.ndim if isinstance(src, NDArray) else np.ndim(src)
    if ndim == 3:
        degrees = np.random.uniform(*angle_limits)
    else:
        degrees = np.random.uniform(*angle_limits, size=src.shape[0])
    return imrotate(src, degrees, zoom_in=zoom_in, zoom_out=zoom_out)
