"""``mx.io.ImageDetRecordIter`` (MXNet 1.9.1): detection records, variable-length labels.

Each record's label is a raw detection label ``[header_width, object_width, (header...),
object, object, ...]`` with objects ``[class, xmin, ymin, xmax, ymax, ...]`` in relative
coordinates. A batch's label row is ``[c, h, w, n] + raw label (n numbers)``, padded with
``label_pad_value`` to ``4 + label width`` (the longest raw label in the file, or
``label_pad_width``), as MXNet's. Batch stream, parts, shuffle and normalisation are
``ImageRecordIter``'s. The ``det_aug_default`` steps implemented: shorter-edge ``resize``,
mirror with ``rand_mirror_prob`` (boxes flipped), the ``force`` resize to ``data_shape``.
Random crop/pad, colour steps and the ``fit``/``shrink`` resize modes raise
NotImplementedError when asked for.
"""

from __future__ import annotations

import numpy as np

from ..base import MXNetError
from ._image_aug_default import _inter, cv2, decode
from ._image_record_iter import ImageRecordIter
from ._native_params import check_params
from ._record_source import RecordFile, split_image_record

__all__ = ["ImageDetRecordIter"]

_REQUIRED = object()
_PASSED = {  # parameters ImageRecordIter takes as they are
    "path_imgrec": "./data/imgrec.rec",
    "data_shape": _REQUIRED,
    "preprocess_threads": 4,
    "verbose": True,
    "num_parts": 1,
    "part_index": 0,
    "shuffle": False,
    "seed": 0,
    "batch_size": _REQUIRED,
    "round_batch": True,
    "prefetch_buffer": 4,
    "ctx": "gpu",
    "dtype": None,
    "data_name": "data",
    "label_name": "softmax_label",
    "mean_r": 0.0,
    "mean_g": 0.0,
    "mean_b": 0.0,
    "mean_a": 0.0,
    "scale": 1.0,
}
_OWN = {
    "path_imglist": "",
    "aug_seq": "det_aug_default",
    "shuffle_chunk_size": 0,
    "shuffle_chunk_seed": 0,
    "label_pad_width": 0,
    "label_pad_value": -1.0,
    "resize": -1,
    "rand_mirror_prob": 0.0,
    "inter_method": 1,
    "fill_value": 127,
    "resize_mode": "force",
    "mean_img": "",
    "std_r": 0.0,
    "std_g": 0.0,
    "std_b": 0.0,
    "std_a": 0.0,
}
# det_aug_default options mxmod does not implement, with their off values
_UNSUPPORTED = {
    "rand_crop_prob": 0.0,
    "rand_pad_prob": 0.0,
    "random_hue_prob": 0.0,
    "random_saturation_prob": 0.0,
    "random_illumination_prob": 0.0,
    "random_contrast_prob": 0.0,
}
# accepted and unused: the crop/pad/colour settings while the options above stay off, and
# label_width (-1: variable, the only layout MXNet's det iterator produces)
_INERT = (
    "min_crop_scales max_crop_scales min_crop_aspect_ratios max_crop_aspect_ratios "
    "min_crop_overlaps max_crop_overlaps min_crop_sample_coverages max_crop_sample_coverages "
    "min_crop_object_coverages max_crop_object_coverages num_crop_sampler crop_emit_mode "
    "emit_overlap_thresh max_crop_trials max_pad_scale max_random_hue max_random_saturation "
    "max_random_illumination max_random_contrast label_width"
).split()


def _raw_label(buf, path, i):
    """``(image id, raw label float32, image bytes)`` of record ``i``, label checked."""
    rid, labels, scalar, img = split_image_record(buf, path, i)
    raw = labels if labels is not None else np.array([scalar], np.float32)
    if raw.size < 2 or int(raw[0]) < 2 or int(raw[1]) < 5:
        raise MXNetError(
            f"{path}: record {i} has label {raw.tolist()[:8]}, not a detection label "
            "[header_width >= 2, object_width >= 5, ...]; pack it with im2rec --pack-label"
        )
    if (raw.size - int(raw[0])) % int(raw[1]):
        raise MXNetError(
            f"{path}: record {i}: label of {raw.size} numbers does not split into "
            f"objects of width {int(raw[1])} after a header of {int(raw[0])}"
        )
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
    docstring for the label layout and the augmentations implemented).

    Raises:
        TypeError: positional arguments.
        MXNetError: a missing required parameter, a record without a detection label, or
            ``label_pad_width`` smaller than the longest label.
        NotImplementedError: random crop/pad/colour probabilities, a resize_mode other
            than 'force', path_imglist, mean_img or chunk shuffling.
    """
    if args:
        raise TypeError("ImageDetRecordIter can only accept keyword arguments")
    inert = {k: kwargs.pop(k) for k in _INERT if k in kwargs}
    p = check_params("ImageDetRecordIter", kwargs, {**_PASSED, **_OWN}, _UNSUPPORTED, _REQUIRED)
    del inert
    for name, bad in (
        ("aug_seq", p["aug_seq"] != "det_aug_default"),
        ("resize_mode", p["resize_mode"] != "force"),
        ("path_imglist", bool(p["path_imglist"])),
        ("mean_img", bool(p["mean_img"])),
        ("shuffle_chunk_size", p["shuffle_chunk_size"] != 0),
    ):
        if bad:
            raise NotImplementedError(
                f"ImageDetRecordIter option {name}={p[name]!r} is not implemented in mxmod"
            )
    width = 4 + _label_width(p["path_imgrec"], p["label_pad_width"])
    passed = {k: p[k] for k in _PASSED}
    for c in "rgba":  # MXNet's det iterator skips a zero std
        passed[f"std_{c}"] = p[f"std_{c}"] or 1.0
    passed.update(label_width=width, inter_method=p["inter_method"], fill_value=p["fill_value"])
    return _DetIter(p, **passed)


class _DetIter(ImageRecordIter):
    """ImageRecordIter whose per-sample step is det_aug_default's (see the module)."""

    def __init__(self, det_params, **kwargs):
        self.det = det_params  # set first: prefetching starts inside __init__
        super().__init__(**kwargs)

    def _sample(self, item, out_img, out_label, k):
        r, epoch, pos = item
        rng = np.random.default_rng([self.p["seed"], epoch, pos, 111])
        rid, raw, img_bytes = _raw_label(self.rec.payload(r), self.rec.path, r)
        img = decode(img_bytes, self.data_shape[0], self.rec.path, rid, r)
        img, raw = self._augment(img, raw.copy(), rng)
        c, h, w = self.data_shape
        out_label[k] = self.det["label_pad_value"]
        out_label[k, :4] = (c, h, w, raw.size)
        out_label[k, 4 : 4 + raw.size] = raw
        self.norm(img, out_img[k], rng)
        return rid

    def _augment(self, img, raw, rng):
        d, cv = self.det, cv2()
        gray = img.ndim == 3 and img.shape[2] == 1
        if d["resize"] > 0:
            rows, cols = img.shape[:2]
            if rows > cols:
                nh, nw = d["resize"] * rows // cols, d["resize"]
            else:
                nh, nw = d["resize"], d["resize"] * cols // rows
            img = cv.resize(
                img, (nw, nh), interpolation=_inter(d["inter_method"], cols, rows, nw, nh, rng)
            )
        if d["rand_mirror_prob"] > 0 and rng.random() < d["rand_mirror_prob"]:
            img = np.ascontiguousarray(img[:, ::-1])
            objs = raw[int(raw[0]) :].reshape(-1, int(raw[1]))
            objs[:, [1, 3]] = 1.0 - objs[:, [3, 1]]
        rows, cols = img.shape[:2]
        h, w = self.data_shape[1:]
        img = cv.resize(img, (w, h), interpolation=_inter(d["inter_method"], cols, rows, w, h, rng))
        return (img[:, :, None] if gray and img.ndim == 2 else img), raw
