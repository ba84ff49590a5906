"""The per-image work of ``ImageRecordIter``: MXNet's default augmenter (``aug_default``)
and its normalizer, on OpenCV/numpy arrays.

Same order and integer arithmetic as MXNet 1.9.1: decode (gray for 1 channel, BGR for 3,
unchanged for 4), shorter-edge resize, affine scale/aspect/rotate/shear, pad, crop
(fixed-size, or ``min/max_crop_size`` then resize), color jitter, HLS jitter, PCA
lighting noise, then per channel
``(pixel - mean) * scale / std`` (RGB order) with mirroring, into a CHW slot.
Random draws come from a per-sample ``numpy`` generator seeded by (seed, epoch, sample),
so batches are reproducible whatever the number of threads (MXNet's per-thread engines
are not; its random sequences are not reproduced).
"""

from __future__ import annotations

import math

import numpy as np

from ..base import MXNetError
from ..image._ops import cv2

# option -> default, for the aug_default options mxmod implements
AUG_DEFAULTS = {
    "resize": -1,
    "rand_crop": False,
    "random_resized_crop": False,
    "max_rotate_angle": 0,
    "max_aspect_ratio": 0.0,
    "min_aspect_ratio": None,
    "max_shear_ratio": 0.0,
    "max_crop_size": -1,
    "min_crop_size": -1,
    "max_random_scale": 1.0,
    "min_random_scale": 1.0,
    "max_random_area": 1.0,
    "min_random_area": 1.0,
    "max_img_size": 1e10,
    "min_img_size": 0.0,
    "random_h": 0,
    "random_s": 0,
    "random_l": 0,
    "brightness": 0.0,
    "contrast": 0.0,
    "saturation": 0.0,
    "pca_noise": 0.0,
    "rotate": -1,
    "fill_value": 255,
    "inter_method": 1,
    "pad": 0,
}
NORM_DEFAULTS = {
    "mirror": False,
    "rand_mirror": False,
    "mean_img": "",
    "mean_r": 0.0,
    "mean_g": 0.0,
    "mean_b": 0.0,
    "mean_a": 0.0,
    "std_r": 1.0,
    "std_g": 1.0,
    "std_b": 1.0,
    "std_a": 1.0,
    "scale": 1.0,
    "max_random_contrast": 0.0,
    "max_random_illumination": 0.0,
}


# ImageNet RGB eigenvectors (rows: r, g, b), each column scaled by its eigenvalue
_PCA_EIGVEC = np.array(
    [[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]],
    np.float32,
) * np.array([55.46, 4.794, 1.148], np.float32)


def _inter(method, old_w, old_h, new_w, new_h, rng):
    if method == 9:
        if new_w > old_w and new_h > old_h:
            return 2
        if new_w < old_w and new_h < old_h:
            return 3
        return 1
    if method == 10:
        return int(rng.integers(0, 5))
    return method


class DefaultAugmenter:
    """MXNet's ``aug_default`` for one image (BGR/gray uint8 HWC in and out)."""

    def __init__(self, p: dict, data_shape: tuple):
        self.p = p
        self.h, self.w = data_shape[1], data_shape[2]
        self.affine = (
            p["max_rotate_angle"] > 0
            or p["max_shear_ratio"] > 0
            or p["rotate"] > 0
            or p["max_random_scale"] != 1.0
            or p["min_random_scale"] != 1.0
            or p["max_aspect_ratio"] != 0.0
            or p["max_img_size"] != 1e10
            or p["min_img_size"] != 0.0
        )
        if p["resize"] != -1 or self.affine:
            if not (1 <= p["inter_method"] <= 4 or 9 <= p["inter_method"] <= 10):
                raise ValueError(
                    f"invalid inter_method {p['inter_method']}: valid values are "
                    "1-4, 9 and 10 when resizing"
                )

    def __call__(self, img, rng):
        p, cv = self.p, cv2()
        if p["resize"] != -1:
            rows, cols = img.shape[:2]
            if rows > cols:
                nh, nw = p["resize"] * rows // cols, p["resize"]
            else:
                nh, nw = p["resize"], p["resize"] * cols // rows
            img = self._resize(img, nw, nh, _inter(p["inter_method"], cols, rows, nw, nh, rng))
        if p["random_resized_crop"]:
            img = self._random_resized_crop(img, rng)
        else:
            if self.affine:
                img = self._warp(img, rng)
            if p["pad"] > 0:
                fv = (p["fill_value"],) * 4
                img = self._keep_dims(
                    img,
                    cv.copyMakeBorder(
                        img, p["pad"], p["pad"], p["pad"], p["pad"], cv.BORDER_CONSTANT, value=fv
                    ),
                )
            img = self._crop(img, rng)
        # color steps follow every crop, random-resized included (as MXNet)
        if p["brightness"] > 0 or p["contrast"] > 0 or p["saturation"] > 0:
            img = self._color_jitter(img, rng)
        if p["random_h"] or p["random_s"] or p["random_l"]:
            img = self._hls(img, rng)
        if p["pca_noise"] > 0:
            img = self._pca_noise(img, rng)
        return img

    @staticmethod
    def _keep_dims(src, out):
        return out[:, :, None] if out.ndim == 2 and src.ndim == 3 else out

    def _resize(self, img, w, h, method):
        return self._keep_dims(img, cv2().resize(img, (int(w), int(h)), interpolation=method))

    def _warp(self, img, rng):
        p = self.p
        s = rng.random() * p["max_shear_ratio"] * 2 - p["max_shear_ratio"]
        angle = int(rng.integers(-p["max_rotate_angle"], p["max_rotate_angle"] + 1))
        if p["rotate"] > 0:
            angle = p["rotate"]
        a, b = math.cos(angle / 180.0 * math.pi), math.sin(angle / 180.0 * math.pi)
        scale = (
            rng.random() * (p["max_random_scale"] - p["min_random_scale"]) + p["min_random_scale"]
        )
        if p["min_aspect_ratio"] is not None:
            ratio = rng.uniform(p["min_aspect_ratio"], p["max_aspect_ratio"])
        else:
            ratio = rng.random() * p["max_aspect_ratio"] * 2 - p["max_aspect_ratio"] + 1
        hs = 2 * scale / (1 + ratio)
        ws = ratio * hs
        rows, cols = img.shape[:2]
        new_w = int(max(p["min_img_size"], min(p["max_img_size"], scale * cols)))
        new_h = int(max(p["min_img_size"], min(p["max_img_size"], scale * rows)))
        m = np.zeros((2, 3), np.float32)
        m[0, 0], m[1, 0] = hs * a - s * b * ws, -b * ws
        m[0, 1], m[1, 1] = hs * b + s * a * ws, a * ws
        m[0, 2] = (new_w - (m[0, 0] * cols + m[0, 1] * rows)) / 2
        m[1, 2] = (new_h - (m[1, 0] * cols + m[1, 1] * rows)) / 2
        method = _inter(p["inter_method"], cols, rows, new_w, new_h, rng)
        fv = (p["fill_value"],) * 4
        out = cv2().warpAffine(
            img, m, (new_w, new_h), flags=method, borderMode=cv2().BORDER_CONSTANT, borderValue=fv
        )
        return self._keep_dims(img, out)

    def _crop(self, img, rng):
        p = self.p
        rows, cols = img.shape[:2]
        if p["max_crop_size"] != -1 or p["min_crop_size"] != -1:
            if not (
                cols >= p["max_crop_size"]
                and rows >= p["max_crop_size"]
                and p["max_crop_size"] >= p["min_crop_size"]
            ):
                raise MXNetError(
                    f"image of {cols}x{rows} is smaller than max_crop_size "
                    f"{p['max_crop_size']} (or max_crop_size < min_crop_size)"
                )
            size = int(rng.integers(p["min_crop_size"], p["max_crop_size"] + 1))
            y, x = rows - size, cols - size
            if p["rand_crop"]:
                y, x = int(rng.integers(0, y + 1)), int(rng.integers(0, x + 1))
            else:
                y, x = y // 2, x // 2
            method = _inter(p["inter_method"], size, size, self.w, self.h, rng)
            return self._resize(
                np.ascontiguousarray(img[y : y + size, x : x + size]), self.w, self.h, method
            )
        img = self._enlarge_to_shape(img, rng)
        rows, cols = img.shape[:2]
        y, x = rows - self.h, cols - self.w
        if p["rand_crop"]:
            y, x = int(rng.integers(0, y + 1)), int(rng.integers(0, x + 1))
        else:
            y, x = y // 2, x // 2
        return img[y : y + self.h, x : x + self.w]

    def _enlarge_to_shape(self, img, rng):
        """An image smaller than ``data_shape`` is scaled up, keeping its aspect ratio, first
        to ``data_shape``'s height, then (if still needed) to its width, with MXNet's float32
        arithmetic for the other side; the centre (or random) crop then takes the rest.
        ``inter_method=9`` compares the new (height, width) with the old (width, height)
        there, as MXNet does."""
        f32, inter = np.float32, self.p["inter_method"]
        rows, cols = img.shape[:2]
        if rows < self.h:
            new_w = int(f32(self.h) / f32(rows) * f32(cols))
            img = self._resize(img, new_w, self.h, _inter(inter, cols, rows, self.h, new_w, rng))
            rows, cols = img.shape[:2]
        if cols < self.w:
            new_h = int(f32(self.w) / f32(cols) * f32(rows))
            img = self._resize(img, self.w, new_h, _inter(inter, cols, rows, new_h, self.w, rng))
        return img

    def _random_resized_crop(self, img, rng):
        p = self.p
        rows, cols = img.shape[:2]
        lo_r = (
            p["min_aspect_ratio"]
            if p["min_aspect_ratio"] is not None
            else 1 - p["max_aspect_ratio"]
        )
        hi_r = (
            p["max_aspect_ratio"]
            if p["min_aspect_ratio"] is not None
            else 1 + p["max_aspect_ratio"]
        )
        for _ in range(10):
            area = rng.uniform(p["min_random_area"], p["max_random_area"]) * rows * cols
            ratio = math.exp(rng.uniform(math.log(max(lo_r, 1e-6)), math.log(max(hi_r, 1e-6))))
            w = int(round(math.sqrt(area * ratio)))
            h = int(round(math.sqrt(area / ratio)))
            if 0 < w <= cols and 0 < h <= rows:
                y, x = int(rng.integers(0, rows - h + 1)), int(rng.integers(0, cols - w + 1))
                break
        else:
            h = w = min(rows, cols)
            y, x = (rows - h) // 2, (cols - w) // 2
        method = _inter(p["inter_method"], w, h, self.w, self.h, rng)
        return self._resize(np.ascontiguousarray(img[y : y + h, x : x + w]), self.w, self.h, method)

    @staticmethod
    def _need_color(img, what):
        if img.ndim != 3 or img.shape[2] != 3:
            raise MXNetError(f"{what} need 3-channel images (data_shape[0] == 3)")

    def _color_jitter(self, img, rng):
        """Brightness, contrast and saturation factors in ``1 +- value``, applied in a random
        order. As MXNet, the gray image is OpenCV's RGB2GRAY of the BGR pixels."""
        p, cv = self.p, cv2()
        self._need_color(img, "brightness/contrast/saturation")
        alpha = {
            k: 1.0 + rng.uniform(-p[k], p[k]) for k in ("brightness", "contrast", "saturation")
        }
        out = np.ascontiguousarray(img)
        for step in rng.permutation(3):
            x = out.astype(np.float32)
            if step == 0:
                x = x * np.float32(alpha["brightness"])
            else:
                gray = cv.cvtColor(out, cv.COLOR_RGB2GRAY).astype(np.float32)
                a = np.float32(alpha["contrast" if step == 1 else "saturation"])
                if step == 1:
                    x = x * a + (1 - a) * np.float32(gray.mean())
                else:
                    x = x * a + gray[:, :, None] * (1 - a)
            out = np.clip(np.rint(x), 0, 255).astype(np.uint8)
        return out

    def _pca_noise(self, img, rng):
        """AlexNet-style lighting noise: ``eigvec * eigval * N(0, pca_noise)`` per channel,
        added to the pixels (truncated to int, as MXNet's int arithmetic)."""
        self._need_color(img, "pca_noise")
        alphas = rng.normal(0.0, self.p["pca_noise"], 3).astype(np.float32)  # r, g, b
        rgb = _PCA_EIGVEC @ alphas
        out = np.trunc(img.astype(np.float32) + rgb[::-1].astype(np.float32))  # BGR pixels
        return np.clip(out, 0, 255).astype(np.uint8)

    def _hls(self, img, rng):
        p, cv = self.p, cv2()
        if img.ndim != 3 or img.shape[2] != 3:
            raise MXNetError("random_h/random_s/random_l need 3-channel images")
        hls = cv.cvtColor(np.ascontiguousarray(img), cv.COLOR_BGR2HLS).astype(np.int16)
        h = int(rng.random() * p["random_h"] * 2 - p["random_h"])
        s = int(rng.random() * p["random_s"] * 2 - p["random_s"])
        l_ = int(rng.random() * p["random_l"] * 2 - p["random_l"])
        hls += np.array([h, l_, s], np.int16)
        np.clip(hls, 0, np.array([180, 255, 255], np.int16), out=hls)
        return cv.cvtColor(hls.astype(np.uint8), cv.COLOR_HLS2BGR)


class Normalizer:
    """Channel swap (BGR->RGB), mean/std/scale, contrast/illumination and mirror into a
    CHW output slot, in MXNet's float32 arithmetic."""

    def __init__(self, p: dict, channels: int, dtype):
        self.p, self.c, self.dtype = p, channels, np.dtype(dtype)
        self.mean = np.array(
            [p["mean_r"], p["mean_g"], p["mean_b"], p["mean_a"]][:channels], np.float32
        )
        self.std = np.array([p["std_r"], p["std_g"], p["std_b"], p["std_a"]][:channels], np.float32)
        self.swap = [0] if channels == 1 else [2, 1, 0] + ([3] if channels == 4 else [])
        self.mean_img = None  # (C, H, W) float32, replaces the per-channel means
        self.random = p["max_random_contrast"] != 0 or p["max_random_illumination"] != 0

    def __call__(self, img, out, rng):
        p = self.p
        mirror = p["mirror"] or (p["rand_mirror"] and rng.random() < 0.5)
        if img.ndim == 2:
            img = img[:, :, None]
        if mirror:
            img = img[:, ::-1]
        if self.dtype == np.uint8:
            for k, s in enumerate(self.swap):
                out[k] = img[:, :, s]
            return
        if self.dtype == np.int8:
            for k, s in enumerate(self.swap):
                m = (
                    np.round(self.mean_img[k])
                    if self.mean_img is not None
                    else np.round(self.mean[k])
                )
                m = m[:, ::-1] if (mirror and self.mean_img is not None) else m
                np.clip(
                    img[:, :, s].astype(np.int16) - m.astype(np.int16),
                    -128,
                    127,
                    out=out[k],
                    casting="unsafe",
                )
            return
        contrast, illum = np.float32(1.0), np.float32(0.0)
        if self.random:
            c, i = p["max_random_contrast"], p["max_random_illumination"]
            contrast = np.float32(rng.random() * c * 2 - c + 1)
            illum = np.float32((rng.random() * i * 2 - i) * p["scale"])
        contrast = np.float32(contrast * np.float32(p["scale"]))
        for k, s in enumerate(self.swap):
            mult = np.float32(contrast / self.std[k])
            if self.mean_img is not None:
                m = self.mean_img[k][:, ::-1] if mirror else self.mean_img[k]
            else:
                m = self.mean[k]
            np.subtract(img[:, :, s], m, out=out[k], dtype=np.float32)
            np.multiply(out[k], mult, out=out[k])
            if self.random:
                np.add(out[k], np.float32(illum / self.std[k]), out=out[k])


def decode(buf, channels: int, path: str, rid, i: int):
    """Decode record ``i`` (image id ``rid``) of ``path`` to BGR/gray uint8 HWC.

    Raises:
        MXNetError: the payload is not an image, or not 4-channel when 4 are asked.
    """
    cv = cv2()
    flag = {1: cv.IMREAD_GRAYSCALE, 3: cv.IMREAD_COLOR, 4: cv.IMREAD_UNCHANGED}[channels]
    img = cv.imdecode(np.frombuffer(buf, np.uint8), flag)
    if img is None:
        raise MXNetError(
            f"{path}: record {i} (image id {rid}) failed to decode: its "
            f"{len(buf)}-byte payload is not a valid image"
        )
    if channels == 4 and (img.ndim != 3 or img.shape[2] != 4):
        raise MXNetError(
            f"Invalid image with index {rid} in {path}: expected 4 channels, got "
            f"{1 if img.ndim == 2 else img.shape[2]}"
        )
    return img
