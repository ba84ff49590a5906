"""Image functions of ``mxnet.image`` (MXNet 1.9.1): decode, read, resize, crop, normalize.

MXNet runs these through its bundled OpenCV; mxmod calls OpenCV (``cv2``) directly, so
the pixels are the same decoder's and the same resize kernels'. Images are HWC. Every
function takes an NDArray (returned as an NDArray, as in MXNet) or a numpy array
(returned as numpy: the fast path the iterators use). Random choices use Python's
``random`` module exactly as MXNet does, so ``random.seed(n)`` gives MXNet's crops.
"""

from __future__ import annotations

import random
import warnings
from numbers import Number

import numpy as np

from ..base import MXNetError, require_cv2
from ..ndarray import NDArray
from ..ndarray import array as _nd_array

__all__ = [
    "imdecode",
    "imread",
    "imresize",
    "scale_down",
    "copyMakeBorder",
    "resize_short",
    "fixed_crop",
    "random_crop",
    "center_crop",
    "color_normalize",
    "random_size_crop",
]


def cv2():
    """The OpenCV module (MXNet's decoder family); a clear error when it is missing."""
    return require_cv2("mx.image")


def as_numpy(src):
    """``(numpy array, was_ndarray)`` for an NDArray or array-like image."""
    if isinstance(src, NDArray):
        return src.asnumpy(), True
    return np.asarray(src), False


def like(arr, was_nd):
    """Wrap ``arr`` back into an NDArray when the input was one."""
    if was_nd:
        return _nd_array(arr, dtype=arr.dtype)
    return arr


def in_place(src, arr):
    """``arr`` written over a floating-point NDArray ``src``, which is returned (MXNet's
    colour augmenters compute ``src *= alpha``, ``src -= mean``: the caller's array
    changes); otherwise ``arr`` as ``like`` gives it."""
    if isinstance(src, NDArray) and np.issubdtype(np.dtype(src.dtype), np.floating):
        src[:] = arr.astype(src.dtype, copy=False)
        return src
    return like(arr, isinstance(src, NDArray))


def decode_np(buf, flag=1, to_rgb=True, what="image"):
    """Decode encoded image bytes to an HWC uint8 numpy array (RGB when ``to_rgb``).

    Raises:
        MXNetError: the bytes are not a decodable image (names ``what``).
    """
    data = np.frombuffer(buf, dtype=np.uint8) if not isinstance(buf, np.ndarray) else buf
    if data.size == 0:
        raise MXNetError(f"Decoding failed: {what} is an empty buffer (0 bytes)")
    img = cv2().imdecode(data.reshape(-1).astype(np.uint8, copy=False), int(flag))
    if img is None:
        raise MXNetError(f"Decoding failed: {what} ({data.size} bytes) is not a valid image file")
    if img.ndim == 2:
        return img[:, :, None]
    if to_rgb and img.shape[2] >= 3:
        img = img[:, :, [2, 1, 0] + list(range(3, img.shape[2]))]
        img = np.ascontiguousarray(img)
    return img


def imdecode(buf, flag=1, to_rgb=1, out=None):
    """Decode an encoded image, as ``mx.image.imdecode``.

    Args:
        buf: bytes, bytearray, uint8 numpy array or NDArray holding the file's bytes.
        flag: 1 color, 0 grayscale (shape ``(h, w, 1)``), -1 unchanged.
        to_rgb: return RGB (True, default) instead of OpenCV's BGR.
        out: an NDArray to write the result into (optional).

    Returns:
        NDArray: HWC uint8 image.

    Raises:
        ValueError: ``buf`` of another type (a str, say).
        MXNetError: the bytes are not a decodable image.
    """
    if isinstance(buf, NDArray):
        buf = buf.asnumpy().astype(np.uint8)
    elif not isinstance(buf, (bytes, bytearray, np.ndarray)):
        raise ValueError(
            "buf must be of type bytes, bytearray or numpy.ndarray, got "
            f"{type(buf).__name__}; to input a str, convert it to bytes first"
        )
    img = decode_np(bytes(buf) if isinstance(buf, bytearray) else buf, flag, to_rgb)
    res = _nd_array(img, dtype=np.uint8)
    if out is not None:
        out[:] = res
        return out
    return res


def imread(filename, flag=1, to_rgb=1, out=None):
    """Read and decode an image file, as ``mx.image.imread``.

    Raises:
        MXNetError: the file is missing or not a decodable image.
    """
    try:
        with open(filename, "rb") as f:
            buf = f.read()
    except OSError as e:
        raise MXNetError(f"imread: cannot open {filename!r}: {e.strerror}") from None
    img = decode_np(buf, flag, to_rgb, what=repr(str(filename)))
    res = _nd_array(img, dtype=np.uint8)
    if out is not None:
        out[:] = res
        return out
    return res


def _interp(interp):
    if interp not in (0, 1, 2, 3, 4):
        raise ValueError(
            f"Unknown interp method {interp}: use 0 (nearest), 1 (bilinear), "
            "2 (bicubic), 3 (area), 4 (lanczos), 9 (auto) or 10 (random)"
        )
    return int(interp)


def _into(res, out):
    """Write ``res`` into the NDArray ``out`` (MXNet's ``out=``) and return ``out``.

    Raises:
        ValueError: ``out`` has another shape than the result.
    """
    if out is None:
        return res
    if tuple(out.shape) != tuple(np.shape(res)):
        raise ValueError(f"out has shape {tuple(out.shape)}, the result {np.shape(res)}")
    out[:] = res if isinstance(res, NDArray) else _nd_array(res, dtype=res.dtype)
    return out


def imresize(src, w, h, interp=1, out=None):
    """Resize to width ``w`` and height ``h`` with ``cv2.resize``, as ``mx.image.imresize``
    (into the NDArray ``out`` when given)."""
    arr, nd = as_numpy(src)
    res = cv2().resize(arr, (int(w), int(h)), interpolation=_interp(interp))
    if res.ndim == 2 and arr.ndim == 3:
        res = res[:, :, None]
    return _into(like(res, nd), out)


def scale_down(src_size, size):
    """Shrink crop ``size=(w, h)`` to fit ``src_size=(w, h)`` keeping its aspect ratio."""
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def copyMakeBorder(src, top, bot, left, right, type=0, value=0.0, values=(), out=None):  # noqa: A002
    """Pad an image with ``cv2.copyMakeBorder``, as ``mx.image.copyMakeBorder`` (into the
    NDArray ``out`` when given)."""
    arr, nd = as_numpy(src)
    fill = tuple(values) if values else (value,) * 4
    res = cv2().copyMakeBorder(
        arr, int(top), int(bot), int(left), int(right), int(type), value=fill
    )
    if res.ndim == 2 and arr.ndim == 3:
        res = res[:, :, None]
    return _into(like(res, nd), out)


def _get_interp_method(interp, sizes=()):
    """MXNet's interpolation choice: 9 picks by scaling direction, 10 at random."""
    if interp == 9:
        if sizes:
            oh, ow, nh, nw = sizes
            if nh > oh and nw > ow:
                return 2
            if nh < oh and nw < ow:
                return 3
            return 1
        return 2
    if interp == 10:
        return random.randint(0, 4)
    return _interp(interp)


def resize_short(src, size, interp=2):
    """Resize so the shorter edge is ``size`` (integer arithmetic as MXNet)."""
    h, w = src.shape[0], src.shape[1]
    if h > w:
        new_h, new_w = size * h // w, size
    else:
        new_h, new_w = size, size * w // h
    return imresize(src, new_w, new_h, interp=_get_interp_method(interp, (h, w, new_h, new_w)))


def fixed_crop(src, x0, y0, w, h, size=None, interp=2):
    """Crop ``[y0:y0+h, x0:x0+w]`` and resize to ``size=(w, h)`` if given."""
    out = src[y0 : y0 + h, x0 : x0 + w]
    if size is not None and (w, h) != tuple(size):
        sizes = (h, w, size[1], size[0])
        arr, nd = as_numpy(out)
        out = imresize(np.ascontiguousarray(arr), *size, interp=_get_interp_method(interp, sizes))
        out = like(out, nd)
    return out


def random_crop(src, size, interp=2):
    """Random crop of ``size=(w, h)`` (scaled down to fit); returns ``(image, (x0, y0, w, h))``."""
    h, w = src.shape[0], src.shape[1]
    new_w, new_h = scale_down((w, h), size)
    x0 = random.randint(0, w - new_w)
    y0 = random.randint(0, h - new_h)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def center_crop(src, size, interp=2):
    """Center crop of ``size=(w, h)`` (scaled down to fit); returns ``(image, (x0, y0, w, h))``."""
    h, w = src.shape[0], src.shape[1]
    new_w, new_h = scale_down((w, h), size)
    x0 = int((w - new_w) / 2)
    y0 = int((h - new_h) / 2)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def color_normalize(src, mean, std=None):
    """``(src - mean) / std`` (either may be None), as ``mx.image.color_normalize``."""
    if isinstance(src, NDArray) and np.issubdtype(np.dtype(src.dtype), np.floating):
        if mean is not None:  # in place, as MXNet's src -= mean; src /= std
            src -= mean
        if std is not None:
            src /= std
        return src
    if mean is not None:
        src = src - (mean if isinstance(src, NDArray) else np.asarray(as_numpy(mean)[0]))
    if std is not None:
        src = src / (std if isinstance(src, NDArray) else np.asarray(as_numpy(std)[0]))
    return src


def random_size_crop(src, size, area, ratio, interp=2, **kwargs):
    """Random crop with random area fraction and aspect ratio (Inception style), resized to
    ``size``; falls back to a center crop after 10 tries. Returns ``(image, (x0, y0, w, h))``.

    Raises:
        TypeError: unknown keyword arguments.
    """
    h, w = src.shape[0], src.shape[1]
    src_area = h * w
    if "min_area" in kwargs:
        warnings.warn("`min_area` is deprecated. Please use `area` instead.", DeprecationWarning)
        area = kwargs.pop("min_area")
    if kwargs:
        raise TypeError(f"random_size_crop got unexpected keyword arguments {sorted(kwargs)}")
    if isinstance(area, Number):
        area = (area, 1.0)
    for _ in range(10):
        target_area = random.uniform(area[0], area[1]) * src_area
        log_ratio = (np.log(ratio[0]), np.log(ratio[1]))
        new_ratio = np.exp(random.uniform(*log_ratio))
        new_w = int(round(np.sqrt(target_area * new_ratio)))
        new_h = int(round(np.sqrt(target_area / new_ratio)))
        if new_w <= w and new_h <= h:
            x0 = random.randint(0, w - new_w)
            y0 = random.randint(0, h - new_h)
            return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)
    return center_crop(src, size, interp)
