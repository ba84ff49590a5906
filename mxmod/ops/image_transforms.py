"""MXNet's image operators (``_image_*``: ``mx.nd.image.*`` and ``mx.sym.image.*``).

Shapes and checks are MXNet 1.9.1's: ``to_tensor`` turns (H, W, C) or (N, H, W, C) pixels
into float32 (C, H, W) / (N, C, H, W) divided by 255; ``normalize`` takes that layout, with
1 or 3 channels; ``crop`` and ``resize`` take both image layouts; the flips and colour
operators one (H, W, C) image with 1 or 3 channels. Random operators draw their factors
from the node's key as MXNet draws them (uniform factors, a fair coin for the flips, normal
lighting weights, a random order for ``random_color_jitter``).

Fixed where MXNet 1.9.1 is wrong: flips of an odd size keep their middle row or column
(MXNet leaves it unwritten); ``normalize``'s defaults (mean 0, std 1) work for 1 and 3 channels
(MXNet's four-element defaults fit neither); ``random_color_jitter`` with every factor 0
returns the image (MXNet leaves the output unwritten); saturation, hue and lighting as in
``image_color.py``. Gradients are the operators' own derivatives (MXNet passes the
head gradient through the flips and colour operators unchanged, and cannot differentiate
``to_tensor`` or ``resize``; ``resize`` runs OpenCV on the host and has no gradient here).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from . import image_color as color
from ..base import require_cv2
from ._attrs import REQUIRED, Param, p_bool, p_float, p_float_tuple, p_int, p_shape
from ._def import OpDef, fail, register


def _image_hwc(name):
    def infer(a, s):
        shape = s[0]
        if shape is None:
            return s, [None]
        if len(shape) != 3:
            fail(f"{name}: the input image must have shape (height, width, channels), got {shape}")
        if shape[2] not in (1, 3):
            fail(
                f"{name}: the last dimension of the input image must be its 1 or 3 channels, "
                f"got shape {shape}"
            )
        return s, [shape]

    return infer


def _to_tensor_shape(a, s):
    shape = s[0]
    if shape is None:
        return s, [None]
    if len(shape) == 3:
        return s, [(shape[2], shape[0], shape[1])]
    if len(shape) == 4:
        return s, [(shape[0], shape[3], shape[1], shape[2])]
    fail(
        f"to_tensor: the input must be (height, width, channels) or "
        f"(N, height, width, channels), got {shape}"
    )


def _to_tensor(a, ins, aux, ctx):
    x = ins[0]
    axes = (2, 0, 1) if x.ndim == 3 else (0, 3, 1, 2)
    return [jnp.transpose(x.astype(jnp.float32) / 255.0, axes)]


def _normalize_shape(a, s):
    shape = s[0]
    if shape is None:
        return s, [None]
    if len(shape) not in (3, 4):
        fail(
            f"normalize: the input must be (channels, height, width) or "
            f"(N, channels, height, width), got {shape}"
        )
    channels = shape[len(shape) - 3]
    if channels not in (1, 3):
        fail(f"normalize: the channel dimension must have 1 or 3 elements, got shape {shape}")
    for what, values in (("mean", a.mean), ("std", a.std)):
        if len(values) not in (1, channels):
            fail(
                f"normalize: {what} must have 1 or {channels} elements for input shape {shape}, "
                f"got {values}"
            )
    return s, [shape]


def _normalize(a, ins, aux, ctx):
    x = ins[0]
    channels = x.shape[x.ndim - 3]
    mean = np.broadcast_to(np.asarray(a.mean, np.float32), (channels,))
    std = np.broadcast_to(np.asarray(a.std, np.float32), (channels,))
    per_channel = (channels, 1, 1)
    out = (x.astype(jnp.float32) - mean.reshape(per_channel)) / std.reshape(per_channel)
    return [color.saturate(out, x.dtype) if x.dtype != jnp.float32 else out]


def _flip(axis):
    return lambda a, ins, aux, ctx: [jnp.flip(ins[0], axis)]


def _random_flip(axis):
    def lower(a, ins, aux, ctx):
        x = ins[0]
        keep = jax.random.bernoulli(ctx.key())
        return [jnp.where(keep, x, jnp.flip(x, axis))]

    return lower


def _factor(a, key):
    return jax.random.uniform(key, (), jnp.float32, a.min_factor, a.max_factor)


def _check_factors(a):
    if a.min_factor < 0 or a.max_factor < 0:
        return f"min_factor and max_factor must be >= 0, got {a.min_factor} and {a.max_factor}"
    if a.min_factor > a.max_factor:
        return f"min_factor {a.min_factor} is greater than max_factor {a.max_factor}"
    return None


def _random_enhance(adjust):
    return lambda a, ins, aux, ctx: [adjust(ins[0], _factor(a, ctx.key()))]


def _color_jitter(a, ins, aux, ctx):
    """The four adjustments in a random order; each factor 0 leaves its step out."""
    x = ins[0]
    keys = jax.random.split(ctx.key(), 5)

    def around_one(amount, key):
        return 1.0 + jax.random.uniform(key, (), jnp.float32, -amount, amount)

    steps = [
        (a.brightness, lambda v, k: color.brightness(v, around_one(a.brightness, k))),
        (a.contrast, lambda v, k: color.contrast(v, around_one(a.contrast, k))),
        (a.saturation, lambda v, k: color.saturation(v, around_one(a.saturation, k))),
        (a.hue, lambda v, k: color.hue(v, jax.random.uniform(k, (), jnp.float32, -a.hue, a.hue))),
    ]
    branches = [
        (lambda v, k, f=fn: f(v, k)) if amount > 0 else (lambda v, k: v) for amount, fn in steps
    ]
    order = jax.random.permutation(keys[0], 4)
    for i in range(4):
        x = jax.lax.switch(order[i], branches, x, keys[1 + i])
    return [x]


def _adjust_lighting(a, ins, aux, ctx):
    if len(a.alpha) != 3:
        fail(f"adjust_lighting: alpha must hold 3 weights (R, G, B), got {a.alpha}")
    return [color.lighting(ins[0], np.asarray(a.alpha, np.float32))]


def _random_lighting(a, ins, aux, ctx):
    alpha = a.alpha_std * jax.random.normal(ctx.key(), (3,), jnp.float32)
    return [color.lighting(ins[0], alpha)]


def _crop_shape(a, s):
    shape = s[0]
    if shape is None:
        return s, [None]
    if len(shape) not in (3, 4):
        fail(f"crop: the input must be (h, w, c) or (n, h, w, c), got {shape}")
    height, width = shape[-3], shape[-2]
    if a.width <= 0 or a.height <= 0 or a.x < 0 or a.y < 0:
        fail(
            f"crop: x, y must be >= 0 and width, height > 0, "
            f"got {a.x}, {a.y}, {a.width}, {a.height}"
        )
    if a.x + a.width > width:
        fail(f"crop: x + width ({a.x} + {a.width}) is greater than the input width {width}")
    if a.y + a.height > height:
        fail(f"crop: y + height ({a.y} + {a.height}) is greater than the input height {height}")
    return s, [(*shape[:-3], a.height, a.width, shape[-1])]


def _crop(a, ins, aux, ctx):
    x = ins[0]
    return [x[..., a.y : a.y + a.height, a.x : a.x + a.width, :]]


def resized_hw(a, height: int, width: int) -> tuple:
    """The (height, width) ``resize`` gives an image of ``height`` x ``width``."""
    size = tuple(a.size)
    if len(size) not in (1, 2):
        fail(f"resize: size must be (width, height) or one length, got {size}")
    if any(v <= 0 for v in size):
        fail(f"resize: size must be positive, got {size}")
    if len(size) == 2:
        return size[1], size[0]
    if not a.keep_ratio:
        return size[0], size[0]
    if height > width:
        return height * size[0] // width, size[0]
    return size[0], width * size[0] // height


def _resize_shape(a, s):
    shape = s[0]
    if shape is None:
        return s, [None]
    if len(shape) not in (3, 4):
        fail(f"resize: the input image must be 3-D or 4-D, got shape {shape}")
    h, w = resized_hw(a, shape[-3], shape[-2])
    return s, [(*shape[:-3], h, w, shape[-1])]


_RESIZE_DTYPES = ("uint8", "int32", "float32", "float64")


def _resize(a, ins, aux, ctx):
    x = ins[0]
    if str(x.dtype) not in _RESIZE_DTYPES:
        fail(
            f"resize: OpenCV resizes {', '.join(_RESIZE_DTYPES)} images, "
            f"got {x.dtype}; cast it first"
        )
    h, w = resized_hw(a, x.shape[-3], x.shape[-2])
    out = jax.ShapeDtypeStruct((*x.shape[:-3], h, w, x.shape[-1]), x.dtype)
    interp = a.interp

    cv2 = require_cv2("mx.nd.image.resize")

    def host(img):
        img = np.asarray(img)
        flat = img.reshape((-1, *img.shape[-3:]))
        res = [cv2.resize(im, (w, h), interpolation=interp) for im in flat]
        return np.stack([r.reshape(h, w, -1) for r in res]).reshape(out.shape).astype(img.dtype)

    return [jax.pure_callback(host, out, jax.lax.stop_gradient(x))]


_ENHANCE = {"min_factor": Param(p_float, REQUIRED), "max_factor": Param(p_float, REQUIRED)}


def _float_out(a, t):
    return t, ["float32"]


def _image_op(name, infer, lower, **fields):
    """Register ``_image_<name>``; its lowering runs ``infer``'s checks first (``mx.nd`` calls
    skip shape inference)."""

    def checked(a, ins, aux, ctx):
        infer(a, [tuple(x.shape) for x in ins])
        return lower(a, ins, aux, ctx)

    register(OpDef(name=f"_image_{name}", infer_shape=infer, lower=checked, **fields))


_image_op("to_tensor", _to_tensor_shape, _to_tensor, infer_type=_float_out)
_image_op(
    "normalize",
    _normalize_shape,
    _normalize,
    params={"mean": Param(p_float_tuple, (0.0,)), "std": Param(p_float_tuple, (1.0,))},
)
for _side, _axis in (("left_right", 1), ("top_bottom", 0)):
    _image_op(f"flip_{_side}", _image_hwc(f"flip_{_side}"), _flip(_axis))
    _image_op(
        f"random_flip_{_side}", _image_hwc(f"random_flip_{_side}"), _random_flip(_axis), random=True
    )
for _name, _adjust in (
    ("brightness", color.brightness),
    ("contrast", color.contrast),
    ("saturation", color.saturation),
    ("hue", color.hue),
):
    _image_op(
        f"random_{_name}",
        _image_hwc(f"random_{_name}"),
        _random_enhance(_adjust),
        params=dict(_ENHANCE),
        check=_check_factors,
        random=True,
    )
_image_op(
    "random_color_jitter",
    _image_hwc("random_color_jitter"),
    _color_jitter,
    params={k: Param(p_float, REQUIRED) for k in ("brightness", "contrast", "saturation", "hue")},
    random=True,
)
_image_op(
    "adjust_lighting",
    _image_hwc("adjust_lighting"),
    _adjust_lighting,
    params={"alpha": Param(p_float_tuple, REQUIRED)},
)
_image_op(
    "random_lighting",
    _image_hwc("random_lighting"),
    _random_lighting,
    params={"alpha_std": Param(p_float, 0.05)},
    random=True,
)
_image_op(
    "crop",
    _crop_shape,
    _crop,
    params={k: Param(p_int, REQUIRED) for k in ("x", "y", "width", "height")},
)
_image_op(
    "resize",
    _resize_shape,
    _resize,
    params={
        "size": Param(p_shape, ()),
        "keep_ratio": Param(p_bool, False),
        "interp": Param(p_int, 1),
    },
)
