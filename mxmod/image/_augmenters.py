"""Augmenter classes and ``CreateAugmenter`` of ``mxnet.image`` (MXNet 1.9.1).

Each augmenter is a callable on one HWC image. The built-in ones accept an NDArray
(and return one, as MXNet) or a numpy array (and return numpy: the iterators' fast path,
no device round trip per image). Randomness comes from Python's ``random`` (crops, flips,
jitters, as MXNet) and ``numpy.random`` (PCA lighting, as MXNet).
"""

from __future__ import annotations

import json
import random
import warnings

import numpy as np

from ..ndarray import NDArray
from . import _ops
from ._ops import as_numpy, in_place, like

__all__ = [
    "Augmenter",
    "SequentialAug",
    "ResizeAug",
    "ForceResizeAug",
    "RandomCropAug",
    "RandomSizedCropAug",
    "CenterCropAug",
    "RandomOrderAug",
    "BrightnessJitterAug",
    "ContrastJitterAug",
    "SaturationJitterAug",
    "HueJitterAug",
    "ColorJitterAug",
    "LightingAug",
    "ColorNormalizeAug",
    "RandomGrayAug",
    "HorizontalFlipAug",
    "CastAug",
    "CreateAugmenter",
]

_GRAY = np.array([0.299, 0.587, 0.114], dtype=np.float32)


class _KeepsKwargs:
    """Keeps an augmenter's constructor arguments (arrays as lists) for ``dumps()``."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        for k, v in self._kwargs.items():
            if isinstance(v, NDArray):
                v = v.asnumpy()
            if isinstance(v, np.ndarray):
                self._kwargs[k] = v.tolist()

    def dumps(self):
        """JSON ``[class name lower-cased, kwargs]``."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])


class Augmenter(_KeepsKwargs):
    """Base of the image augmenters, as ``mx.image.Augmenter``: keeps its constructor
    arguments for ``dumps()``; subclasses implement ``__call__(src)``."""

    def __call__(self, src):
        raise NotImplementedError(f"{type(self).__name__} must implement __call__(src)")


class _ListAug(Augmenter):
    """Base of the augmenters that run a list ``ts`` of augmenters; dumps them nested."""

    def __init__(self, ts):
        super().__init__()
        self.ts = ts

    def dumps(self):
        return [self.__class__.__name__.lower(), [x.dumps() for x in self.ts]]


class _SizedAug(Augmenter):
    """Base of the resize and crop augmenters: a target ``size`` and an ``interp`` method."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp


class SequentialAug(_ListAug):
    """Apply a list of augmenters in order."""

    def __call__(self, src):
        for aug in self.ts:
            src = aug(src)
        return src


class ResizeAug(_SizedAug):
    """Resize the shorter edge to ``size``."""

    def __call__(self, src):
        return _ops.resize_short(src, self.size, self.interp)


class ForceResizeAug(_SizedAug):
    """Resize to exactly ``size=(w, h)``."""

    def __call__(self, src):
        sizes = (src.shape[0], src.shape[1], self.size[1], self.size[0])
        return _ops.imresize(src, *self.size, interp=_ops._get_interp_method(self.interp, sizes))


class RandomCropAug(_SizedAug):
    """Random crop of ``size=(w, h)``."""

    def __call__(self, src):
        return _ops.random_crop(src, self.size, self.interp)[0]


class RandomSizedCropAug(Augmenter):
    """Random area/aspect crop resized to ``size`` (see ``random_size_crop``).

    Raises:
        TypeError: unknown keyword arguments.
    """

    def __init__(self, size, area, ratio, interp=2, **kwargs):
        super().__init__(size=size, area=area, ratio=ratio, interp=interp)
        self.size = size
        if "min_area" in kwargs:
            warnings.warn(
                "`min_area` is deprecated. Please use `area` instead.", DeprecationWarning
            )
            self.area = kwargs.pop("min_area")
        else:
            self.area = area
        if kwargs:
            raise TypeError(f"RandomSizedCropAug got unexpected keyword arguments {sorted(kwargs)}")
        self.ratio, self.interp = ratio, interp

    def __call__(self, src):
        return _ops.random_size_crop(src, self.size, self.area, self.ratio, self.interp)[0]


class CenterCropAug(_SizedAug):
    """Center crop of ``size=(w, h)``."""

    def __call__(self, src):
        return _ops.center_crop(src, self.size, self.interp)[0]


class RandomOrderAug(_ListAug):
    """Apply a list of augmenters in a random order."""

    def __call__(self, src):
        random.shuffle(self.ts)
        for t in self.ts:
            src = t(src)
        return src


def _float(src):
    arr, nd = as_numpy(src)
    return arr.astype(np.float32, copy=False), nd


class _JitterAug(Augmenter):
    """Base of the brightness, contrast and saturation jitters: one constructor argument
    ``amount`` (kept under its own name too); each call draws ``alpha = 1 + U(-amount,
    amount)`` and returns ``_blend(float32 image, alpha)``."""

    def __init__(self, **amount):
        super().__init__(**amount)
        self.__dict__.update(amount)
        ((_, self._amount),) = amount.items()

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self._amount, self._amount)
        arr, _ = _float(src)
        return in_place(src, self._blend(arr, alpha))


class BrightnessJitterAug(_JitterAug):
    """Multiply by ``1 + U(-brightness, brightness)``."""

    def __init__(self, brightness):
        super().__init__(brightness=brightness)

    def _blend(self, arr, alpha):
        return arr * np.float32(alpha)


class ContrastJitterAug(_JitterAug):
    """Blend with the mean gray level: ``alpha * src + (1 - alpha) * mean(gray)``."""

    def __init__(self, contrast):
        super().__init__(contrast=contrast)

    def _blend(self, arr, alpha):
        gray = arr * _GRAY
        gray = np.float32(3.0 * (1.0 - alpha) / gray.size) * gray.sum(dtype=np.float32)
        return arr * np.float32(alpha) + gray


class SaturationJitterAug(_JitterAug):
    """Blend each pixel with its gray value by ``1 + U(-saturation, saturation)``."""

    def __init__(self, saturation):
        super().__init__(saturation=saturation)

    def _blend(self, arr, alpha):
        gray = (arr * _GRAY).sum(axis=2, keepdims=True) * np.float32(1.0 - alpha)
        return arr * np.float32(alpha) + gray


class HueJitterAug(Augmenter):
    """Rotate the hue in YIQ space by ``U(-hue, hue) * pi``."""

    def __init__(self, hue):
        super().__init__(hue=hue)
        self.hue = hue
        self.tyiq = np.array(
            [[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]]
        )
        self.ityiq = np.array([[1.0, 0.956, 0.621], [1.0, -0.272, -0.647], [1.0, -1.107, 1.705]])

    def __call__(self, src):
        alpha = random.uniform(-self.hue, self.hue)
        u, w = np.cos(alpha * np.pi), np.sin(alpha * np.pi)
        bt = np.array([[1.0, 0.0, 0.0], [0.0, u, -w], [0.0, w, u]])
        t = np.dot(np.dot(self.ityiq, bt), self.tyiq).T.astype(np.float32)
        arr, nd = _float(src)
        return like(arr @ t, nd)


class ColorJitterAug(RandomOrderAug):
    """Brightness, contrast and saturation jitters in random order."""

    def __init__(self, brightness, contrast, saturation):
        ts = []
        if brightness > 0:
            ts.append(BrightnessJitterAug(brightness))
        if contrast > 0:
            ts.append(ContrastJitterAug(contrast))
        if saturation > 0:
            ts.append(SaturationJitterAug(saturation))
        super().__init__(ts)


class LightingAug(Augmenter):
    """AlexNet-style PCA lighting noise with ``numpy.random.normal(0, alphastd, 3)``."""

    def __init__(self, alphastd, eigval, eigvec):
        super().__init__(alphastd=alphastd, eigval=eigval, eigvec=eigvec)
        self.alphastd, self.eigval, self.eigvec = alphastd, eigval, eigvec

    def __call__(self, src):
        alpha = np.random.normal(0, self.alphastd, size=(3,))
        rgb = np.dot(self.eigvec * alpha, self.eigval)
        arr, _ = _float(src)
        return in_place(src, arr + rgb.astype(np.float32))


class ColorNormalizeAug(Augmenter):
    """``(src - mean) / std`` per channel."""

    def __init__(self, mean, std):
        super().__init__(mean=mean, std=std)
        self.mean = None if mean is None else np.asarray(as_numpy(mean)[0], np.float32)
        self.std = None if std is None else np.asarray(as_numpy(std)[0], np.float32)

    def __call__(self, src):
        arr, _ = _float(src)
        return in_place(src, _ops.color_normalize(arr, self.mean, self.std))


class RandomGrayAug(Augmenter):
    """Turn the image gray with probability ``p``."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p
        self.mat = np.array(
            [[0.21, 0.21, 0.21], [0.72, 0.72, 0.72], [0.07, 0.07, 0.07]], dtype=np.float32
        )

    def __call__(self, src):
        if random.random() < self.p:
            arr, nd = _float(src)
            return like(arr @ self.mat, nd)
        return src


class HorizontalFlipAug(Augmenter):
    """Mirror left-right with probability ``p``."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src):
        if random.random() < self.p:
            arr, nd = as_numpy(src)
            return like(np.ascontiguousarray(arr[:, ::-1]), nd)
        return src


class CastAug(Augmenter):
    """Cast to ``typ`` (default float32)."""

    def __init__(self, typ="float32"):
        super().__init__(type=typ)
        self.typ = typ

    def __call__(self, src):
        if isinstance(src, NDArray):
            return src.astype(self.typ)
        return np.asarray(src).astype(self.typ)


_MEAN = np.array([123.68, 116.28, 103.53], dtype=np.float32)
_STD = np.array([58.395, 57.12, 57.375], dtype=np.float32)


def CreateAugmenter(
    data_shape,
    resize=0,
    rand_crop=False,
    rand_resize=False,
    rand_mirror=False,
    mean=None,
    std=None,
    brightness=0,
    contrast=0,
    saturation=0,
    hue=0,
    pca_noise=0,
    rand_gray=0,
    inter_method=2,
):
    """The standard augmenter list, as ``mx.image.CreateAugmenter``.

    Resize (shorter edge), then a random-sized, random or center crop to
    ``data_shape[1:]``, mirror, cast to float32, color jitter, hue, PCA lighting, random
    gray and normalization. ``mean=True``/``std=True`` use the ImageNet statistics.

    Raises:
        ValueError: ``rand_resize`` without ``rand_crop``, or a mean/std that is not an
            array of 1 or 3 values.
    """
    auglist = []
    if resize > 0:
        auglist.append(ResizeAug(resize, inter_method))
    crop_size = (data_shape[2], data_shape[1])
    if rand_resize:
        if not rand_crop:
            raise ValueError("CreateAugmenter: rand_resize=True needs rand_crop=True")
        auglist.append(RandomSizedCropAug(crop_size, 0.08, (3.0 / 4.0, 4.0 / 3.0), inter_method))
    elif rand_crop:
        auglist.append(RandomCropAug(crop_size, inter_method))
    else:
        auglist.append(CenterCropAug(crop_size, inter_method))
    if rand_mirror:
        auglist.append(HorizontalFlipAug(0.5))
    auglist.append(CastAug())
    if brightness or contrast or saturation:
        auglist.append(ColorJitterAug(brightness, contrast, saturation))
    if hue:
        auglist.append(HueJitterAug(hue))
    if pca_noise > 0:
        eigval = np.array([55.46, 4.794, 1.148])
        eigvec = np.array(
            [[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]]
        )
        auglist.append(LightingAug(pca_noise, eigval, eigvec))
    if rand_gray > 0:
        auglist.append(RandomGrayAug(rand_gray))
    for name, val, default in (("mean", mean, _MEAN), ("std", std, _STD)):
        if val is True:
            val = default
        elif val is not None:
            if not isinstance(val, (np.ndarray, NDArray)) or val.shape[0] not in (1, 3):
                raise ValueError(
                    f"CreateAugmenter {name} must be True, None or an array of 1 "
                    f"or 3 values, got {val!r}"
                )
        if name == "mean":
            mean = val
        else:
            std = val
    if mean is not None or std is not None:
        auglist.append(ColorNormalizeAug(mean, std))
    return auglist
