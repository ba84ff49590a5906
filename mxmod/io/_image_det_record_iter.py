"""``mx.io.ImageDetRecordIter`` (MXNet 1.9.1): detection records, variable-length labels.

Each record's label is a raw detection label ``[header_width, object_width, (header...),
object, object, ...]`` with objects ``[class, xmin, ymin, xmax, ymax, ...]`` in relative
coordinates. A batch's label row is ``[c, h, w, n] + processed label (n numbers)``, padded
with ``label_pad_value`` to ``4 + label width`` (the longest raw label in the file, or
``label_pad_width``), as MXNet's. Batch stream, parts, shuffle and normalisation are
``ImageRecordIter``'s; the augmentation is ``det_aug_default`` (``_det_aug_default.py``).
The ``fit``/``shrink`` resize modes (images smaller than ``data_shape``) raise
NotImplementedError.
"""

from __future__ import annotations

import numpy as np

from ..base import MXNetError
from ._det_aug_default import DET_AUG_DEFAULTS, DetAugmenter, parse_det_label, crop_samplers
from ._image_aug_default import decode
from ._image_record_iter import ImageRecordIter
from ._native_params import BATCH_PARAMS, REQUIRED, check_params
from ._record_source import RecordFile, split_image_record

__all__ = ["ImageDetRecordIter"]

_REQUIRED = REQUIRED
_PASSED = {  # parameters ImageRecordIter takes as they are
    "path_imgrec": "./data/imgrec.rec",
    "data_shape": _REQUIRED,
    "preprocess_threads": 4,
    "verbose": True,
    "num_parts": 1,
    "part_index": 0,
    "shuffle": False,
    "seed": 0,
    "shuffle_chunk_size": 0,
    "shuffle_chunk_seed": 0,
    **BATCH_PARAMS,
    "mean_r": 0.0,
    "mean_g": 0.0,
    "mean_b": 0.0,
    "mean_a": 0.0,
    "scale": 1.0,
}
_OWN = {
    "path_imglist": "",
    "aug_seq": "det_aug_default",
    "label_pad_width": 0,
    "label_pad_value": -1.0,
    "mean_img": "",
    "std_r": 0.0,
    "std_g": 0.0,
    "std_b": 0.0,
    "std_a": 0.0,
    **DET_AUG_DEFAULTS,
}


def _raw_label(buf, path, i):
    """``(image id, raw label float32, image bytes)`` of record ``i``, label checked."""
    rid, labels, scalar, img = split_image_record(buf, path, i)
    raw = labels if labels is not None else np.array([scalar], np.float32)
    try:
        parse_det_label(raw)
    except MXNetError as e:
        raise MXNetError(f"{path}: record {i}: {e}; pack it with im2rec --pack-label") from None
    return rid, raw, img


def _label_width(path, pad_width):
    """Longest raw label in the file, or ``pad_width`` when that is larger."""
    rec = RecordFile(path, "")
    longest = max(
        (_raw_label(rec.payload(i), path, i)[1].size for i in range(len(rec.offsets))), default=0
    )
    if pad_width > 0 and pad_width < longest:
        raise MXNetError(
            f"ImageDetRecordIter: label_pad_width {pad_width} is smaller than the longest "
            f"label in {path} ({longest} numbers)"
        )
    return max(longest, pad_width)


def ImageDetRecordIter(*args, **kwargs):
    """Iterate over a detection ``.rec``, as ``mx.io.ImageDetRecordIter`` (see the module
    docstring for the label layout).

    Raises:
        TypeError: positional arguments.
        MXNetError: a missing required parameter, a record without a detection label, bad
            crop sampler settings, or ``label_pad_width`` smaller than the longest label.
        NotImplementedError: resize_mode 'fit'/'shrink', path_imglist, mean_img, chunk
            shuffling or another aug_seq.
    """
    if args:
        raise TypeError("ImageDetRecordIter can only accept keyword arguments")
    kwargs.pop("label_width", None)  # -1 (variable) is the only layout this iterator makes
    samplers = crop_samplers(kwargs, int(kwargs.get("num_crop_sampler", 1)))
    p = check_params("ImageDetRecordIter", kwargs, {**_PASSED, **_OWN}, {}, _REQUIRED)
    for name, bad in (
        ("aug_seq", p["aug_seq"] != "det_aug_default"),
        ("resize_mode", p["resize_mode"] != "force"),
        ("path_imglist", bool(p["path_imglist"])),
        ("mean_img", bool(p["mean_img"])),
    ):
        if bad:
            raise NotImplementedError(
                f"ImageDetRecordIter option {name}={p[name]!r} is not implemented in mxmod"
            )
    if not (1 <= p["inter_method"] <= 4 or 9 <= p["inter_method"] <= 10):
        raise MXNetError(f"invalid inter_method {p['inter_method']}: use 1-4, 9 or 10")
    width = 4 + _label_width(p["path_imgrec"], p["label_pad_width"])
    passed = {k: p[k] for k in _PASSED}
    for c in "rgba":  # MXNet's det iterator skips a zero std
        passed[f"std_{c}"] = p[f"std_{c}"] or 1.0
    aug = DetAugmenter(p, samplers, p["data_shape"])
    return _DetIter(aug, p["label_pad_value"], label_width=width, **passed)


class _DetIter(ImageRecordIter):
    """ImageRecordIter whose per-sample step is det_aug_default's (see the module)."""

    def __init__(self, det_aug, pad_value, **kwargs):
        self.det_aug, self.pad_value = det_aug, pad_value  # first: prefetching starts in init
        super().__init__(**kwargs)

    def _sample(self, item, out_img, out_label, k):
        r, epoch, pos = item
        rng = np.random.default_rng([self.p["seed"], epoch, pos, 111])
        rid, raw, img_bytes = _raw_label(self.rec.payload(r), self.rec.path, r)
        img = decode(img_bytes, self.data_shape[0], self.rec.path, rid, r)
        img, raw = self.det_aug(img, raw, rng)
        c, h, w = self.data_shape
        out_label[k] = self.pad_value
        out_label[k, :4] = (c, h, w, raw.size)
        out_label[k, 4 : 4 + raw.size] = raw
        self.norm(img, out_img[k], rng)
        return rid
