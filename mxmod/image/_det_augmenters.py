"""Detection augmenters of ``mxnet.image.detection`` (MXNet 1.9.1).

A detection augmenter maps ``(image, label)`` to ``(image, label)``; ``label`` is a float
array of objects, one row ``[class, xmin, ymin, xmax, ymax, ...]`` in coordinates
relative to the image (0..1). The built-in ones take numpy or NDArray images, as the
image augmenters do. Randomness comes from Python's ``random``, in MXNet's order of draws.
"""

from __future__ import annotations

import logging
import math
import random
import warnings
from numbers import Number

import numpy as np

from ..ndarray import NDArray
from ._augmenters import (
    Augmenter,
    CastAug,
    ColorJitterAug,
    ColorNormalizeAug,
    ForceResizeAug,
    HueJitterAug,
    LightingAug,
    RandomGrayAug,
    ResizeAug,
    _KeepsKwargs,
)
from ._ops import as_numpy, copyMakeBorder, fixed_crop, like

__all__ = [
    "DetAugmenter",
    "DetBorrowAug",
    "DetRandomSelectAug",
    "DetHorizontalFlipAug",
    "DetRandomCropAug",
    "DetRandomPadAug",
    "CreateMultiRandCropAugmenter",
    "CreateDetAugmenter",
]


class DetAugmenter(_KeepsKwargs):
    """Base of the detection augmenters: keeps its constructor arguments for ``dumps()``;
    subclasses implement ``__call__(src, label) -> (src, label)``."""

    def __call__(self, src, label):
        raise NotImplementedError(f"{type(self).__name__} must implement __call__(src, label)")


class DetBorrowAug(DetAugmenter):
    """Apply an image ``Augmenter`` to the image and keep the label.

    Raises:
        TypeError: ``augmenter`` is not an ``mx.image.Augmenter``.
    """

    def __init__(self, augmenter):
        if not isinstance(augmenter, Augmenter):
            raise TypeError(
                f"DetBorrowAug needs an mx.image.Augmenter, got {type(augmenter).__name__}"
            )
        super().__init__(augmenter=augmenter.dumps())
        self.augmenter = augmenter

    def dumps(self):
        """``[name, the borrowed augmenter's dumps()]``."""
        return [self.__class__.__name__.lower(), self.augmenter.dumps()]

    def __call__(self, src, label):
        return self.augmenter(src), label


class DetRandomSelectAug(DetAugmenter):
    """Apply one augmenter of ``aug_list`` picked at random, or none with ``skip_prob``.

    Raises:
        ValueError: an item of ``aug_list`` is not a ``DetAugmenter``.
    """

    def __init__(self, aug_list, skip_prob=0):
        super().__init__(skip_prob=skip_prob)
        if not isinstance(aug_list, (list, tuple)):
            aug_list = [aug_list]
        for aug in aug_list:
            if not isinstance(aug, DetAugmenter):
                raise ValueError(
                    f"DetRandomSelectAug takes DetAugmenters only, got {type(aug).__name__}"
                )
        self.aug_list = list(aug_list)
        self.skip_prob = 1 if not aug_list else skip_prob

    def dumps(self):
        """``[name, [each augmenter's dumps()]]``."""
        return [self.__class__.__name__.lower(), [a.dumps() for a in self.aug_list]]

    def __call__(self, src, label):
        if random.random() < self.skip_prob:
            return src, label
        random.shuffle(self.aug_list)
        return self.aug_list[0](src, label)


class DetHorizontalFlipAug(DetAugmenter):
    """Mirror image and boxes left-right with probability ``p``."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src, label):
        if random.random() < self.p:
            arr, nd = as_numpy(src)
            src = like(np.ascontiguousarray(arr[:, ::-1]), nd)
            xmin = 1.0 - label[:, 3]
            label[:, 3] = 1.0 - label[:, 1]
            label[:, 1] = xmin
        return src, label


def _pair(value, what, aug):
    """A ``(low, high)`` range from a range, or ``(x, x)`` from one number (MXNet logs it)."""
    if isinstance(value, (tuple, list)):
        return tuple(value)
    if not isinstance(value, Number):
        raise TypeError(f"{aug} {what} must be a number or a (low, high) pair, got {value!r}")
    logging.info("Using fixed %s: %s in %s", what, value, aug)
    return (value, value)


def _areas(boxes):
    """Areas of ``[xmin, ymin, xmax, ymax]`` rows (0 for empty boxes)."""
    return np.maximum(0, boxes[:, 2] - boxes[:, 0]) * np.maximum(0, boxes[:, 3] - boxes[:, 1])


def _clip_boxes(boxes, xmin, ymin, xmax, ymax):
    """Boxes intersected with a window; rows that do not overlap become zeros."""
    out = boxes.copy()
    out[:, 0] = np.maximum(boxes[:, 0], xmin)
    out[:, 1] = np.maximum(boxes[:, 1], ymin)
    out[:, 2] = np.minimum(boxes[:, 2], xmax)
    out[:, 3] = np.minimum(boxes[:, 3], ymax)
    empty = (out[:, 0] >= out[:, 2]) | (out[:, 1] >= out[:, 3])
    out[empty, :] = 0
    return out


class _WindowDetAug(DetAugmenter):
    """Base of DetRandomCropAug and DetRandomPadAug: a window with an aspect ratio in
    ``aspect_ratio_range`` and a relative area in ``area_range``, found in ``max_attempts``
    tries. Every constructor argument is kept as an attribute; invalid ranges disable the
    augmenter with a warning, as in MXNet."""

    _area_limit = 0.0  # the largest area must exceed it (crop: 0, pad: 1)

    def __init__(self, **kwargs):
        name = type(self).__name__
        for key in ("aspect_ratio_range", "area_range"):
            kwargs[key] = _pair(kwargs[key], key, name)
        super().__init__(**kwargs)
        self.__dict__.update(kwargs)
        area, ratio = self.area_range, self.aspect_ratio_range
        self.enabled = False
        if area[1] <= self._area_limit or area[0] > area[1]:
            warnings.warn(f"Skip {name} due to invalid area_range: {area}")
        elif ratio[0] <= 0 or ratio[0] > ratio[1]:
            warnings.warn(f"Skip {name} due to invalid aspect_ratio_range: {ratio}")
        else:
            self.enabled = True

    def _attempts(self, height, width):
        """Per attempt (``max_attempts``, none when disabled): ``(ratio, min_area,
        max_area, h, max_h)``, a random aspect ratio, the area bounds in pixels and the
        heights that reach them; each subclass then fits the window its own way."""
        if not self.enabled or height <= 0 or width <= 0:
            return
        min_area = self.area_range[0] * height * width
        max_area = self.area_range[1] * height * width
        for _ in range(self.max_attempts):
            ratio = random.uniform(*self.aspect_ratio_range)
            if ratio <= 0:
                continue
            h = int(round(math.sqrt(min_area / ratio)))
            yield ratio, min_area, max_area, h, int(round(math.sqrt(max_area / ratio)))


class DetRandomCropAug(_WindowDetAug):
    """Random crop that keeps at least ``min_object_covered`` of each object it touches;
    objects left with less than ``min_eject_coverage`` of their area are dropped."""

    def __init__(
        self,
        min_object_covered=0.1,
        aspect_ratio_range=(0.75, 1.33),
        area_range=(0.05, 1.0),
        min_eject_coverage=0.3,
        max_attempts=50,
    ):
        super().__init__(
            min_object_covered=min_object_covered,
            aspect_ratio_range=aspect_ratio_range,
            area_range=area_range,
            min_eject_coverage=min_eject_coverage,
            max_attempts=max_attempts,
        )

    def __call__(self, src, label):
        crop = self._random_crop_proposal(label, src.shape[0], src.shape[1])
        if crop:
            x, y, w, h, label = crop
            src = fixed_crop(src, x, y, w, h, None)
        return src, label

    def _covers_enough(self, label, xmin, ymin, xmax, ymax, width, height):
        if (xmax - xmin) * (ymax - ymin) < 2:
            return False
        window = (xmin / width, ymin / height, xmax / width, ymax / height)
        areas = _areas(label[:, 1:5])
        keep = np.where(areas * width * height > 2)[0]
        if keep.size < 1:
            return False
        coverage = _areas(_clip_boxes(label[keep, 1:5], *window)) / areas[keep]
        coverage = coverage[coverage > 0]
        return coverage.size > 0 and np.amin(coverage) > self.min_object_covered

    def _relabel(self, label, box, height, width):
        x0, y0 = box[0] / width, box[1] / height
        w, h = box[2] / width, box[3] / height
        out = label.copy()
        out[:, (1, 3)] = (out[:, (1, 3)] - x0) / w
        out[:, (2, 4)] = (out[:, (2, 4)] - y0) / h
        out[:, 1:5] = np.clip(out[:, 1:5], 0, 1)
        coverage = _areas(out[:, 1:5]) * w * h / _areas(label[:, 1:5])
        valid = (out[:, 3] > out[:, 1]) & (out[:, 4] > out[:, 2])
        valid &= coverage > self.min_eject_coverage
        return out[valid] if valid.any() else None

    def _random_crop_proposal(self, label, height, width):
        for ratio, min_area, max_area, h, max_h in self._attempts(height, width):
            if round(max_h * ratio) > width:
                max_h = int((width + 0.4999999) / ratio)  # largest h with round(h*ratio) <= width
            max_h = min(max_h, height)
            h = min(h, max_h)
            if h < max_h:
                h = random.randint(h, max_h)
            w = int(round(h * ratio))
            area = w * h
            if area < min_area:  # rounding fix-ups
                h += 1
                w = int(round(h * ratio))
                area = w * h
            if area > max_area:
                h -= 1
                w = int(round(h * ratio))
                area = w * h
            if not (min_area <= area <= max_area and 0 <= w <= width and 0 <= h <= height):
                continue
            y = random.randint(0, max(0, height - h))
            x = random.randint(0, max(0, width - w))
            if self._covers_enough(label, x, y, x + w, y + h, width, height):
                new_label = self._relabel(label, (x, y, w, h), height, width)
                if new_label is not None:
                    return (x, y, w, h, new_label)
        return ()


class DetRandomPadAug(_WindowDetAug):
    """Random expansion: place the image on a larger canvas filled with ``pad_val``."""

    _area_limit = 1.0

    def __init__(
        self,
        aspect_ratio_range=(0.75, 1.33),
        area_range=(1.0, 3.0),
        max_attempts=50,
        pad_val=(128, 128, 128),
    ):
        if not isinstance(pad_val, (list, tuple)):
            if not isinstance(pad_val, Number):
                raise TypeError(
                    f"DetRandomPadAug pad_val must be a number or a tuple, got {pad_val!r}"
                )
            pad_val = (pad_val,)
        super().__init__(
            aspect_ratio_range=aspect_ratio_range,
            area_range=area_range,
            max_attempts=max_attempts,
            pad_val=pad_val,
        )

    def __call__(self, src, label):
        height, width = src.shape[0], src.shape[1]
        pad = self._random_pad_proposal(label, height, width)
        if pad:
            x, y, w, h, label = pad
            values = tuple(self.pad_val) * (3 if len(self.pad_val) == 1 else 1)
            src = copyMakeBorder(src, y, h - y - height, x, w - x - width, 0, values=values)
        return src, label

    def _random_pad_proposal(self, label, height, width):
        for ratio, _, _, h, max_h in self._attempts(height, width):
            if round(h * ratio) < width:
                h = int((width + 0.499999) / ratio)
            h = min(max(h, height), max_h)
            if h < max_h:
                h = random.randint(h, max_h)
            w = int(round(h * ratio))
            if (h - height) < 2 or (w - width) < 2:
                continue  # a margin this thin is not worth it
            y = random.randint(0, max(0, h - height))
            x = random.randint(0, max(0, w - width))
            out = label.copy()
            out[:, (1, 3)] = (out[:, (1, 3)] * width + x) / w
            out[:, (2, 4)] = (out[:, (2, 4)] * height + y) / h
            return (x, y, w, h, out)
        return ()


def CreateMultiRandCropAugmenter(
    min_object_covered=0.1,
    aspect_ratio_range=(0.75, 1.33),
    area_range=(0.05, 1.0),
    min_eject_coverage=0.3,
    max_attempts=50,
    skip_prob=0,
):
    """A ``DetRandomSelectAug`` over several ``DetRandomCropAug``: each argument given as a
    list makes one crop augmenter per item (single values are repeated).

    Raises:
        ValueError: lists of different lengths.
    """
    params = [min_object_covered, aspect_ratio_range, area_range, min_eject_coverage, max_attempts]
    params = [p if isinstance(p, list) else [p] for p in params]
    num = max(len(p) for p in params)
    for k, p in enumerate(params):
        if len(p) != num:
            if len(p) != 1:
                raise ValueError(
                    "CreateMultiRandCropAugmenter: list arguments must have the same length "
                    f"(got lengths {[len(q) for q in params]})"
                )
            params[k] = p * num
    augs = [
        DetRandomCropAug(
            min_object_covered=moc,
            aspect_ratio_range=arr,
            area_range=ar,
            min_eject_coverage=mec,
            max_attempts=ma,
        )
        for moc, arr, ar, mec, ma in zip(*params)
    ]
    return DetRandomSelectAug(augs, skip_prob=skip_prob)


_MEAN = np.array([123.68, 116.28, 103.53])
_STD = np.array([58.395, 57.12, 57.375])
_EIGVAL = np.array([55.46, 4.794, 1.148])
_EIGVEC = np.array(
    [[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]]
)


def _stat(value, default, what):
    if value is True:
        return default
    if value is not None and not (
        isinstance(value, (np.ndarray, NDArray)) and value.shape[0] in (1, 3)
    ):
        raise ValueError(
            f"CreateDetAugmenter {what} must be True, None or an array of 1 or 3 values,"
            f" got {value!r}"
        )
    return value


def CreateDetAugmenter(
    data_shape,
    resize=0,
    rand_crop=0,
    rand_pad=0,
    rand_gray=0,
    rand_mirror=False,
    mean=None,
    std=None,
    brightness=0,
    contrast=0,
    saturation=0,
    pca_noise=0,
    hue=0,
    inter_method=2,
    min_object_covered=0.1,
    aspect_ratio_range=(0.75, 1.33),
    area_range=(0.05, 3.0),
    min_eject_coverage=0.3,
    max_attempts=50,
    pad_val=(127, 127, 127),
):
    """The standard detection augmenter list, as ``mx.image.CreateDetAugmenter``.

    Resize (shorter edge), random crop (probability ``rand_crop``), mirror, random pad
    (probability ``rand_pad``), force-resize to ``data_shape``, cast to float32, color
    jitter, hue, PCA lighting, random gray and normalization.

    Raises:
        ValueError: a mean/std that is not True, None or an array of 1 or 3 values.
    """
    augs = []
    if resize > 0:
        augs.append(DetBorrowAug(ResizeAug(resize, inter_method)))
    if rand_crop > 0:
        augs.append(
            CreateMultiRandCropAugmenter(
                min_object_covered,
                aspect_ratio_range,
                area_range,
                min_eject_coverage,
                max_attempts,
                skip_prob=(1 - rand_crop),
            )
        )
    if rand_mirror > 0:
        augs.append(DetHorizontalFlipAug(0.5))
    if rand_pad > 0:  # as late as possible: the canvas is bigger than the image
        pad = DetRandomPadAug(aspect_ratio_range, (1.0, area_range[1]), max_attempts, pad_val)
        augs.append(DetRandomSelectAug([pad], 1 - rand_pad))
    augs.append(DetBorrowAug(ForceResizeAug((data_shape[2], data_shape[1]), inter_method)))
    augs.append(DetBorrowAug(CastAug()))
    if brightness or contrast or saturation:
        augs.append(DetBorrowAug(ColorJitterAug(brightness, contrast, saturation)))
    if hue:
        augs.append(DetBorrowAug(HueJitterAug(hue)))
    if pca_noise > 0:
        augs.append(DetBorrowAug(LightingAug(pca_noise, _EIGVAL, _EIGVEC)))
    if rand_gray > 0:
        augs.append(DetBorrowAug(RandomGrayAug(rand_gray)))
    mean = _stat(mean, _MEAN, "mean")
    std = _stat(std, _STD, "std")
    if mean is not None or std is not None:
        augs.append(DetBorrowAug(ColorNormalizeAug(mean, std)))
    return augs
