"""MXNet's ``Correlation`` (FlowNet's correlation layer): for every position of ``data1``
(window top-left ``x1 = j * stride1 + max_displacement`` in the zero-padded input) and
every displacement ``(dy, dx)`` of the ``(2r + 1)^2`` grid (``r = max_displacement //
stride2``, steps of ``stride2``; output channel ``(dy index) * (2r + 1) + (dx index)``),
the sum over a ``kernel_size`` window and all channels of ``data1 * data2`` (``is_multiply``)
or ``|data1 - data2|`` at the displaced window, divided by ``kernel_size^2 * channels``.
The output is ``(N, (2r + 1)^2, ceil((H + 2 pad - 2 border) / stride1), ...)`` with
``border = max_displacement + (kernel_size - 1) / 2``. Two hidden outputs stand for MXNet's
padded channel-last copies of the inputs. Gradients are this forward's derivative (at
``data1 == data2`` the absolute difference takes data1's side, as MXNet's kernel does).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ._attrs import Param, p_bool, p_int
from ._def import OpDef, fail, register


def _geometry(a, data: tuple) -> tuple:
    """``(top_h, top_w, radius, grid)`` of a Correlation over ``data`` (N, C, H, W)."""
    if a.kernel_size % 2 == 0:
        fail(f"kernel_size {a.kernel_size} must be odd")
    if a.stride1 < 1 or a.stride2 < 1:
        fail(f"stride1 {a.stride1} and stride2 {a.stride2} must be positive")
    _, _, h, w = data
    border = a.max_displacement + (a.kernel_size - 1) // 2
    top_h = math.ceil((h + 2 * a.pad_size - 2 * border) / a.stride1)
    top_w = math.ceil((w + 2 * a.pad_size - 2 * border) / a.stride1)
    if top_h < 1 or top_w < 1:
        fail(
            f"data {tuple(data)} is too small for max_displacement {a.max_displacement} and "
            f"kernel_size {a.kernel_size} with pad_size {a.pad_size}: pad it more"
        )
    radius = a.max_displacement // a.stride2
    return top_h, top_w, radius, 2 * radius + 1


def _shape(a, s):
    d1, d2 = s
    data = d1 if d1 is not None else d2
    if data is None:
        return s, [None] * 3
    if len(data) != 4:
        fail(f"data {tuple(data)} must be 4-D (batch, channel, height, width)")
    if d1 is not None and d2 is not None and tuple(d1) != tuple(d2):
        fail(f"data1 {tuple(d1)} and data2 {tuple(d2)} must have the same shape")
    n, c, h, w = data
    top_h, top_w, _, grid = _geometry(a, data)
    padded = (n, h + 2 * a.pad_size, w + 2 * a.pad_size, c)
    return [tuple(data)] * 2, [(n, grid * grid, top_h, top_w), padded, padded]


def _abs_diff(x, y):
    d = x - y
    return jnp.where(d >= 0, d, -d)  # derivative +1 for x at x == y, as MXNet's


def _lower(a, ins, aux, ctx):
    x1, x2 = ins
    n, c, h, w = x1.shape
    top_h, top_w, radius, grid = _geometry(a, x1.shape)
    k, md, s1, s2, p = a.kernel_size, a.max_displacement, a.stride1, a.stride2, a.pad_size
    pads = ((0, 0), (0, 0), (p, p), (p, p))
    p1, p2 = jnp.pad(x1, pads), jnp.pad(x2, pads)
    rows, cols = (top_h - 1) * s1 + k, (top_w - 1) * s1 + k
    first = p1[:, :, md : md + rows, md : md + cols]
    steps = jnp.arange(-radius, radius + 1) * s2
    dy, dx = jnp.repeat(steps, grid), jnp.tile(steps, grid)
    combine = jnp.multiply if a.is_multiply else _abs_diff

    def one(oy, ox):
        second = jax.lax.dynamic_slice(p2, (0, 0, md + oy, md + ox), (n, c, rows, cols))
        per_pixel = jnp.sum(combine(first, second), axis=1)
        window = jax.lax.reduce_window(
            per_pixel,
            np.zeros((), per_pixel.dtype),
            jax.lax.add,
            (1, k, k),
            (1, s1, s1),
            "VALID",
        )
        return window / (k * k * c)

    out = jnp.transpose(jax.vmap(one)(dy, dx), (1, 0, 2, 3))
    hidden = [jax.lax.stop_gradient(jnp.transpose(q, (0, 2, 3, 1))) for q in (p1, p2)]
    return [out.astype(x1.dtype), *hidden]


register(
    OpDef(
        name="Correlation",
        params={
            "kernel_size": Param(p_int, 1),
            "max_displacement": Param(p_int, 1),
            "stride1": Param(p_int, 1),
            "stride2": Param(p_int, 1),
            "pad_size": Param(p_int, 0),
            "is_multiply": Param(p_bool, True),
        },
        inputs=("data1", "data2"),
        num_outputs_total=lambda a: 3,
        infer_shape=_shape,
        infer_type=lambda a, t: (t, [t[0] if t[0] is not None else t[1]] * 3),
        lower=_lower,
    )
)
