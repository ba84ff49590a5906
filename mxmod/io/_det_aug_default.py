"""MXNet's ``det_aug_default`` (the augmenter of ``ImageDetRecordIter``) for one image and
its raw detection label, on OpenCV/numpy arrays (BGR/gray uint8 HWC).

Steps in MXNet 1.9.1's order: shorter-edge ``resize``; HLS/contrast jitter, each with its
probability; mirror; random pad (canvas up to ``max_pad_scale`` times, ``fill_value``);
random crop from ``num_crop_sampler`` samplers (scale/aspect ranges, IOU and coverage
constraints, objects kept by centre or by overlap); ``force`` resize to ``data_shape``.
Boxes are relative coordinates and follow every geometric step; objects with an empty
box are dropped, as MXNet does when it reads the label. Random draws come from the
caller's per-sample generator (reproducible; not MXNet's sequences).
"""

from __future__ import annotations

import ast
import math

import numpy as np

from ..base import MXNetError
from ._image_aug_default import _inter, cv2

# the crop sampler parameters: one value, or one per sampler
CROP_TUPLES = {
    "min_crop_scales": 0.0,
    "max_crop_scales": 1.0,
    "min_crop_aspect_ratios": 1.0,
    "max_crop_aspect_ratios": 1.0,
    "min_crop_overlaps": 0.0,
    "max_crop_overlaps": 1.0,
    "min_crop_sample_coverages": 0.0,
    "max_crop_sample_coverages": 1.0,
    "min_crop_object_coverages": 0.0,
    "max_crop_object_coverages": 1.0,
    "max_crop_trials": 25,
}
DET_AUG_DEFAULTS = {
    "resize": -1,
    "rand_crop_prob": 0.0,
    "num_crop_sampler": 1,
    "crop_emit_mode": "center",
    "emit_overlap_thresh": 0.3,
    "rand_pad_prob": 0.0,
    "max_pad_scale": 1.0,
    "max_random_hue": 0,
    "random_hue_prob": 0.0,
    "max_random_saturation": 0,
    "random_saturation_prob": 0.0,
    "max_random_illumination": 0,
    "random_illumination_prob": 0.0,
    "max_random_contrast": 0.0,
    "random_contrast_prob": 0.0,
    "rand_mirror_prob": 0.0,
    "fill_value": 127,
    "inter_method": 1,
    "resize_mode": "force",
}


def crop_samplers(kwargs, num):
    """``{name: tuple of num values}`` for the crop parameters (one value repeats).

    Raises:
        MXNetError: a value that is not numbers, or a count other than 1 or ``num``.
    """
    out = {}
    for name, default in CROP_TUPLES.items():
        v = kwargs.pop(name, (default,))
        if isinstance(v, str):
            try:
                v = ast.literal_eval(v.strip())
            except (ValueError, SyntaxError):
                raise MXNetError(f"{name}={v!r}: expected a number or a tuple of numbers") from None
        v = tuple(v) if isinstance(v, (tuple, list)) else (v,)
        if len(v) == 1:
            v = v * num
        if len(v) != num:
            raise MXNetError(
                f"{name} has {len(v)} values but num_crop_sampler is {num}: give one or {num}"
            )
        out[name] = tuple(float(x) for x in v)
    for i in range(num):
        lo, hi = out["min_crop_scales"][i], out["max_crop_scales"][i]
        if not 0 <= lo < hi <= 1:
            raise MXNetError(f"crop sampler {i}: need 0 <= min_crop_scales < max_crop_scales <= 1")
    return out


def parse_det_label(raw):
    """``(header, object width, objects (n, width))`` with empty boxes dropped."""
    if raw.size < 7 or int(raw[0]) < 2 or int(raw[1]) < 5:
        raise MXNetError(
            f"label {raw.tolist()[:8]} is not a detection label [header_width >= 2, "
            "object_width >= 5, ...] with at least one object"
        )
    hw, ow = int(raw[0]), int(raw[1])
    if (raw.size - hw) % ow:
        raise MXNetError(
            f"label of {raw.size} numbers does not split into objects of width {ow} "
            f"after a header of {hw}"
        )
    objs = raw[hw:].reshape(-1, ow)
    keep = (objs[:, 3] > objs[:, 1]) & (objs[:, 4] > objs[:, 2])
    return raw[:hw], ow, objs[keep]


def _area(boxes):
    return np.maximum(boxes[..., 2] - boxes[..., 0], 0) * np.maximum(
        boxes[..., 3] - boxes[..., 1], 0
    )


def _intersect(box, boxes):
    """Areas of ``box & each of boxes`` (boxes as x0, y0, x1, y1)."""
    lo = np.maximum(boxes[:, :2], box[:2])
    hi = np.minimum(boxes[:, 2:4], box[2:])
    return _area(np.concatenate([lo, hi], axis=1))


def _project(objs, box):
    """Objects in the coordinates of ``box`` (x, y, w, h), clipped to [0, 1]."""
    out = objs.copy()
    out[:, 1] = np.maximum(0, (objs[:, 1] - box[0]) / box[2])
    out[:, 2] = np.maximum(0, (objs[:, 2] - box[1]) / box[3])
    out[:, 3] = np.minimum(1, (objs[:, 3] - box[0]) / box[2])
    out[:, 4] = np.minimum(1, (objs[:, 4] - box[1]) / box[3])
    return out


class DetAugmenter:
    """``det_aug_default`` for one image: ``(img, raw label, rng) -> (img, raw label)``."""

    def __init__(self, p: dict, samplers: dict, data_shape: tuple):
        self.p, self.s, self.h, self.w = p, samplers, data_shape[1], data_shape[2]
        if p["crop_emit_mode"] not in ("center", "overlap"):
            raise MXNetError(f"crop_emit_mode {p['crop_emit_mode']!r}: use 'center' or 'overlap'")
        self.color = any(
            p[k] > 0
            for k in (
                "random_hue_prob",
                "random_saturation_prob",
                "random_illumination_prob",
                "random_contrast_prob",
            )
        )

    def __call__(self, img, raw, rng):
        p, cv = self.p, cv2()
        if p["resize"] > 0:
            rows, cols = img.shape[:2]
            if rows > cols:
                nh, nw = p["resize"] * rows // cols, p["resize"]
            else:
                nh, nw = p["resize"], p["resize"] * cols // rows
            img = self._resize(img, nw, nh, rng)
        header, ow, objs = parse_det_label(raw)
        if self.color:
            img = self._color(img, rng)
        if p["rand_mirror_prob"] > 0 and rng.random() < p["rand_mirror_prob"]:
            img = np.ascontiguousarray(img[:, ::-1])
            objs = objs.copy()
            objs[:, [1, 3]] = 1.0 - objs[:, [3, 1]]
        if p["rand_pad_prob"] > 0 and p["max_pad_scale"] > 1 and rng.random() < p["rand_pad_prob"]:
            img, objs = self._pad(img, objs, rng, cv)
        if p["rand_crop_prob"] > 0 and p["num_crop_sampler"] > 0:
            if rng.random() < p["rand_crop_prob"]:
                img, objs = self._crop(img, objs, rng)
        img = self._resize(img, self.w, self.h, rng)
        return img, np.concatenate([header, objs.reshape(-1)]).astype(np.float32)

    def _resize(self, img, w, h, rng):
        rows, cols = img.shape[:2]
        method = _inter(self.p["inter_method"], cols, rows, w, h, rng)
        out = cv2().resize(img, (int(w), int(h)), interpolation=method)
        return out[:, :, None] if out.ndim == 2 and img.ndim == 3 else out

    def _color(self, img, rng):
        p, cv = self.p, cv2()
        if img.ndim != 3 or img.shape[2] != 3:
            raise MXNetError("random hue/saturation/illumination/contrast need 3-channel images")
        h, s, l_, c = (
            int(rng.uniform(-1, 1) * p["max_random_hue"]),
            int(rng.uniform(-1, 1) * p["max_random_saturation"]),
            int(rng.uniform(-1, 1) * p["max_random_illumination"]),
            rng.uniform(-1, 1) * p["max_random_contrast"],
        )
        h = h if rng.random() < p["random_hue_prob"] else 0
        s = s if rng.random() < p["random_saturation_prob"] else 0
        l_ = l_ if rng.random() < p["random_illumination_prob"] else 0
        c = c if rng.random() < p["random_contrast_prob"] else 0.0
        if h or s or l_:
            hls = cv.cvtColor(np.ascontiguousarray(img), cv.COLOR_BGR2HLS).astype(np.int16)
            hls += np.array([h, l_, s], np.int16)
            np.clip(hls, 0, np.array([180, 255, 255], np.int16), out=hls)
            img = cv.cvtColor(hls.astype(np.uint8), cv.COLOR_HLS2BGR)
        if abs(c) > 1e-3:
            img = np.clip(np.rint(img.astype(np.float32) * np.float32(c + 1)), 0, 255)
            img = img.astype(np.uint8)
        return img

    def _pad(self, img, objs, rng, cv):
        scale = rng.uniform(1.0, self.p["max_pad_scale"])
        if scale < 1.05:  # too little to be worth it
            return img, objs
        x0, y0 = rng.uniform(0, scale - 1), rng.uniform(0, scale - 1)
        rows, cols = img.shape[:2]
        left, top = int(x0 * cols), int(y0 * rows)
        right, bot = int((scale - x0 - 1) * cols), int((scale - y0 - 1) * rows)
        fill = (self.p["fill_value"],) * 4
        out = cv.copyMakeBorder(img, top, bot, left, right, cv.BORDER_CONSTANT, value=fill)
        out = out[:, :, None] if out.ndim == 2 and img.ndim == 3 else out
        return out, _project(objs, (-x0, -y0, scale, scale))

    def _crop_box(self, i, rng, img_ratio):
        s = self.s
        scale = rng.uniform(s["min_crop_scales"][i], s["max_crop_scales"][i]) + 1e-12
        lo = max(s["min_crop_aspect_ratios"][i] / img_ratio, scale * scale)
        hi = min(s["max_crop_aspect_ratios"][i] / img_ratio, 1.0 / (scale * scale))
        ratio = math.sqrt(rng.uniform(lo, hi))
        w, h = min(1.0, scale * ratio), min(1.0, scale / ratio)
        return np.array([rng.uniform(0, 1 - w), rng.uniform(0, 1 - h), w, h])

    def _try_crop(self, i, box, objs):
        """Objects in the crop ``box`` (x, y, w, h), or None when it breaks a constraint."""
        s, p = self.s, self.p
        if len(objs) == 0:
            return objs
        x0y0x1y1 = np.array([box[0], box[1], box[0] + box[2], box[1] + box[3]])
        gts = objs[:, 1:5]
        inter = _intersect(x0y0x1y1, gts)
        lims = [
            (s[f"min_crop_{k}"][i], s[f"max_crop_{k}"][i])
            for k in ("overlaps", "sample_coverages", "object_coverages")
        ]
        if any(lo > 0 or hi < 1 for lo, hi in lims):  # some object must meet the set ones
            crop_area, gt_area = box[2] * box[3], _area(gts)
            iou = np.where(inter > 0, inter / (crop_area + gt_area - inter), 0)
            ok = np.ones(len(objs), bool)
            for (lo, hi), v in zip(lims, (iou, inter / crop_area, inter / gt_area)):
                if lo > 0 or hi < 1:
                    ok &= (v >= lo) & (v <= hi)
            if not ok.any():
                return None
        if p["crop_emit_mode"] == "center":
            cx, cy = (gts[:, 0] + gts[:, 2]) / 2, (gts[:, 1] + gts[:, 3]) / 2
            keep = (cx >= x0y0x1y1[0]) & (cx < x0y0x1y1[2]) & (cy >= x0y0x1y1[1])
            keep &= cy < x0y0x1y1[3]
        else:
            keep = inter / _area(gts) > p["emit_overlap_thresh"]
        return _project(objs[keep], box) if keep.any() else None

    def _crop(self, img, objs, rng):
        rows, cols = img.shape[:2]
        for i in rng.permutation(self.p["num_crop_sampler"]):
            for _ in range(int(self.s["max_crop_trials"][i])):
                box = self._crop_box(i, rng, cols / rows)
                left, top = int(box[0] * cols), int(box[1] * rows)
                w, h = int(box[2] * cols), int(box[3] * rows)
                if w < 1 or h < 1:
                    continue  # under one pixel: no image to crop
                kept = self._try_crop(i, box, objs)
                if kept is not None:
                    return np.ascontiguousarray(img[top : top + h, left : left + w]), kept
        return img, objs
