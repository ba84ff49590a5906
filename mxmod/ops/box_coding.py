"""Box regression targets of MXNet 1.9.1's contrib namespace: ``box_encode`` and
``box_decode`` (JSON names ``_contrib_box_encode``/``_contrib_box_decode``).

``box_encode(samples, matches, anchors, refs, means, stds)`` turns each anchor's matched
reference box into normalised center offsets ``((rx - ax) / aw, (ry - ay) / ah,
log(rw / aw), log(rh / ah))``, minus ``means``, over ``stds``; rows whose sample is not
positive (``samples <= 0.5``) get 0 targets and 0 masks. ``matches`` holds float indices
into ``refs`` (truncated, as MXNet's cast). Anchors and refs are corner boxes.

``box_decode(data, anchors)`` inverts it with the scalar ``std0..std3``: offsets times std,
widths/heights through ``exp`` (after ``min(., clip)`` when ``clip > 0``), giving corner
boxes. ``anchors`` are one set ``(1, N, 4)`` shared by the batch, corner or center boxes
(``format``).

Both compute in the data's dtype and, as in MXNet, have no gradient (zeros).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from ._attrs import Param, choice, p_float
from ._def import OpDef, fail, register

_sg = jax.lax.stop_gradient


def _check_boxes(name: str, shape, ndim: int | None = 3) -> None:
    if shape is None:
        return
    if (ndim is not None and len(shape) != ndim) or len(shape) < 3 or shape[-1] != 4:
        want = f"{ndim}-D" if ndim else "at least 3-D"
        fail(f"{name} {tuple(shape)} must be {want} with a last dimension of 4 (one box per row)")


def _center(b):
    """Corner boxes (..., 4) -> center x, y, width, height."""
    w, h = b[..., 2] - b[..., 0], b[..., 3] - b[..., 1]
    return b[..., 0] + w * 0.5, b[..., 1] + h * 0.5, w, h


# ------------------------------------------------------------------ box_encode
def _encode_shape(a, s):
    samples, matches, anchors, refs = s[:4]
    for name, sh in (("samples", samples), ("matches", matches)):
        if sh is not None and len(sh) != 2:
            fail(f"{name} {tuple(sh)} must be 2-D (batch, anchors)")
    _check_boxes("anchors", anchors)
    _check_boxes("refs", refs)
    for name, sh in (("means", s[4]), ("stds", s[5])):
        if sh is not None and tuple(sh) != (4,):
            fail(f"{name} {tuple(sh)} must be (4,): one value per box coordinate")
    bn = next((tuple(x[:2]) for x in (anchors, samples, matches) if x is not None), None)
    for name, sh in (("samples", samples), ("matches", matches), ("anchors", anchors)):
        if sh is not None and tuple(sh[:2]) != bn:
            fail(f"{name} {tuple(sh)} does not fit {bn} (batch, anchors) of the other inputs")
    if refs is not None and bn is not None and refs[0] != bn[0]:
        fail(f"refs {tuple(refs)} must have the batch size {bn[0]} of anchors")
    if bn is None:
        return s[:4] + [(4,), (4,)], [None, None]
    out = bn + (4,)
    return [bn, bn, out, refs, (4,), (4,)], [out, out]


def _encode_lower(a, ins, aux, ctx):
    _encode_shape(a, [x.shape for x in ins])  # mx.nd calls skip inference
    samples, matches, anchors, refs, means, stds = (_sg(x) for x in ins)
    idx = jnp.clip(matches.astype(jnp.int32), 0, refs.shape[1] - 1)
    ref = jnp.take_along_axis(refs, jnp.broadcast_to(idx[..., None], anchors.shape), axis=1)
    rx, ry, rw, rh = _center(ref)
    ax, ay, aw, ah = _center(anchors)
    raw = jnp.stack([(rx - ax) / aw, (ry - ay) / ah, jnp.log(rw / aw), jnp.log(rh / ah)], -1)
    valid = (samples > 0.5)[..., None]
    targets = jnp.where(valid, (raw - means) / stds, jnp.zeros_like(raw))
    masks = jnp.broadcast_to(valid, anchors.shape).astype(anchors.dtype)
    return [targets, masks]


register(
    OpDef(
        name="_contrib_box_encode",
        inputs=("samples", "matches", "anchors", "refs", "means", "stds"),
        outputs=("output0", "output1"),
        infer_shape=_encode_shape,
        lower=_encode_lower,
    )
)


# ------------------------------------------------------------------ box_decode
def _decode_shape(a, s):
    data, anchors = s
    _check_boxes("data", data)
    _check_boxes("anchors", anchors, ndim=None)
    if data is not None and anchors is not None and math.prod(anchors) != data[1] * 4:
        fail(
            f"anchors {tuple(anchors)} must hold one box per anchor of data {tuple(data)}, "
            f"i.e. be (1, {data[1]}, 4): the batch shares one set of anchors"
        )
    return s, [None if data is None else tuple(data)]


def _decode_lower(a, ins, aux, ctx):
    _decode_shape(a, [x.shape for x in ins])  # mx.nd calls skip inference
    x, anchors = (_sg(v) for v in ins)
    anchors = anchors.reshape(1, x.shape[1], 4)
    if a.format == "corner":
        ax, ay, aw, ah = _center(anchors)
    else:
        ax, ay, aw, ah = (anchors[..., i] for i in range(4))
    ox = x[..., 0] * a.std0 * aw + ax
    oy = x[..., 1] * a.std1 * ah + ay
    dw, dh = x[..., 2] * a.std2, x[..., 3] * a.std3
    if a.clip > 0:  # MXNet's ``d < clip ? d : clip`` (NaN becomes clip)
        dw = jnp.where(dw < a.clip, dw, jnp.asarray(a.clip, x.dtype))
        dh = jnp.where(dh < a.clip, dh, jnp.asarray(a.clip, x.dtype))
    hw, hh = jnp.exp(dw) * aw * 0.5, jnp.exp(dh) * ah * 0.5
    return [jnp.stack([ox - hw, oy - hh, ox + hw, oy + hh], -1)]


register(
    OpDef(
        name="_contrib_box_decode",
        params={
            "std0": Param(p_float, 1.0),
            "std1": Param(p_float, 1.0),
            "std2": Param(p_float, 1.0),
            "std3": Param(p_float, 1.0),
            "clip": Param(p_float, -1.0),
            "format": Param(choice("corner", "center"), "center"),
        },
        inputs=("data", "anchors"),
        infer_shape=_decode_shape,
        lower=_decode_lower,
    )
)
