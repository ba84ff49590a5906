"""Pixel arithmetic of MXNet's ``mx.nd.image`` colour operators (``image_transforms.py``).

Images are (H, W, C) with C 1 or 3 (RGB), values on MXNet's 0-255 scale. Results are cast
back to the input's type as MXNet's ``saturate_cast``: uint8 clipped to [0, 255] then
truncated, other types converted as C++ does. Where MXNet 1.9.1 is wrong, this is right:
saturation's gray is the full 0.299 R + 0.587 G + 0.114 B (MXNet keeps only the blue
term), and one-channel images pass through hue and lighting unchanged (MXNet leaves the
output unwritten).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

GRAY = (0.299, 0.587, 0.114)
# AlexNet's PCA lighting: eigenvalue-scaled eigenvectors of ImageNet's RGB covariance
EIG = np.array(
    [
        [55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009],
        [55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140],
        [55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203],
    ]
).astype(np.float32)
# which of (p2, p1, falling, rising) each of b, g, r takes in each 60-degree hue sector
_HLS_SECTORS = np.array(
    [[1, 3, 0], [1, 0, 2], [3, 0, 1], [0, 2, 1], [0, 1, 3], [2, 1, 0]], dtype=np.int32
)


def saturate(value, dtype):
    """``value`` (float32) in ``dtype`` as MXNet's ``saturate_cast``."""
    if dtype == jnp.uint8:
        return jnp.clip(value, 0.0, 255.0).astype(dtype)
    return value.astype(dtype)


def _gray(x):
    return x[..., 0] * GRAY[0] + x[..., 1] * GRAY[1] + x[..., 2] * GRAY[2]


def brightness(x, alpha):
    return saturate(x.astype(jnp.float32) * alpha, x.dtype)


def contrast(x, alpha):
    """Blend with the image's mean gray level."""
    xf = x.astype(jnp.float32)
    gray_mean = jnp.mean(_gray(xf) if x.shape[-1] == 3 else xf)
    return saturate(xf * alpha + (1.0 - alpha) * gray_mean, x.dtype)


def saturation(x, alpha):
    """Blend each pixel with its own gray level."""
    if x.shape[-1] == 1:
        return x
    xf = x.astype(jnp.float32)
    return saturate(xf * alpha + ((1.0 - alpha) * _gray(xf))[..., None], x.dtype)


def hue(x, alpha):
    """Rotate the hue by ``alpha`` turns (through HLS, as OpenCV's conversion)."""
    if x.shape[-1] == 1:
        return x
    h, lum, sat = _rgb_to_hls(x.astype(jnp.float32) / 255.0)
    rgb = _hls_to_rgb(h + alpha * 360.0, lum, sat)
    return saturate(rgb * 255.0, x.dtype)


def lighting(x, alpha):
    """Add the PCA lighting offset of the three ``alpha`` weights to R, G and B."""
    if x.shape[-1] == 1:
        return x
    alpha = jnp.asarray(alpha, jnp.float32)
    offset = (EIG[:, 0] * alpha[0] + EIG[:, 1] * alpha[1]) + EIG[:, 2] * alpha[2]
    return saturate(x.astype(jnp.float32) + offset, x.dtype)


def _rgb_to_hls(rgb):
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    vmax = jnp.maximum(jnp.maximum(r, g), b)
    vmin = jnp.minimum(jnp.minimum(r, g), b)
    diff = vmax - vmin
    lum = (vmax + vmin) * 0.5
    chromatic = diff > np.finfo(np.float32).eps
    safe = jnp.where(chromatic, diff, 1.0)
    sat = jnp.where(lum < 0.5, safe / (vmax + vmin), safe / (2.0 - vmax - vmin))
    scale = 60.0 / safe
    h = jnp.where(
        vmax == r,
        (g - b) * scale,
        jnp.where(vmax == g, (b - r) * scale + 120.0, (r - g) * scale + 240.0),
    )
    h = jnp.where(h < 0.0, h + 360.0, h)
    return jnp.where(chromatic, h, 0.0), lum, jnp.where(chromatic, sat, 0.0)


def _hls_to_rgb(h, lum, sat):
    p2 = jnp.where(lum <= 0.5, lum * (1.0 + sat), lum + sat - lum * sat)
    p1 = 2.0 * lum - p2
    h = jnp.mod(h / 60.0, 6.0)
    sector = jnp.clip(jnp.floor(h).astype(jnp.int32), 0, 5)
    frac = h - sector
    table = jnp.stack([p2, p1, p1 + (p2 - p1) * (1.0 - frac), p1 + (p2 - p1) * frac], -1)
    picks = jnp.take_along_axis(table, jnp.asarray(_HLS_SECTORS)[sector], axis=-1)
    bgr = jnp.where((sat != 0.0)[..., None], picks, lum[..., None])
    return bgr[..., ::-1]
