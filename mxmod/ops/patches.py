"""``im2col`` (sliding image patches as columns) and its adjoint ``col2im`` (columns summed
back into an image), MXNet 1.9.1's operators for 1-D to 3-D data ``(N, C, *spatial)``.

A column holds one output position's patch, channel-major: row ``c * prod(kernel) + k``
is channel ``c`` at kernel offset ``k`` (row-major over the kernel window).
"""

from __future__ import annotations

import jax

from ._attrs import Param, REQUIRED, p_shape
from ._def import OpDef, fail, register

_WINDOW = {
    "kernel": Param(p_shape, REQUIRED),
    "stride": Param(p_shape, ()),
    "dilate": Param(p_shape, ()),
    "pad": Param(p_shape, ()),
}


def _window(a):
    nd = len(a.kernel)
    if not 1 <= nd <= 3:
        fail(f"kernel={a.kernel}: im2col/col2im take 1 to 3 spatial dimensions")
    stride, dilate, pad = (
        tuple(v) or (d,) * nd for v, d in ((a.stride, 1), (a.dilate, 1), (a.pad, 0))
    )
    for name, v in (("stride", stride), ("dilate", dilate), ("pad", pad)):
        if len(v) != nd:
            fail(f"{name}={v} must have as many dimensions as kernel={a.kernel}")
    return tuple(a.kernel), stride, dilate, pad


def _out_spatial(a, spatial) -> tuple:
    kernel, stride, dilate, pad = _window(a)
    out = []
    for x, k, s, d, p in zip(spatial, kernel, stride, dilate, pad):
        n = (x + 2 * p - d * (k - 1) - 1) // s + 1
        if n <= 0:
            fail(
                f"kernel={a.kernel} (dilate={dilate}, pad={pad}) is larger than the input {spatial}"
            )
        out.append(n)
    return tuple(out)


def _patches(a, x):
    kernel, stride, dilate, pad = _window(a)
    cols = jax.lax.conv_general_dilated_patches(
        x, kernel, stride, [(p, p) for p in pad], rhs_dilation=dilate
    )
    return cols.reshape(cols.shape[:2] + (-1,))


def _im2col_shape(a, s):
    data = s[0]
    if data is None:
        return s, [None]
    if len(data) != len(a.kernel) + 2:
        fail(f"data of shape {data} needs {len(a.kernel) + 2} dimensions for kernel={a.kernel}")
    out = _out_spatial(a, data[2:])
    k = 1
    for d in a.kernel:
        k *= d
    n_pos = 1
    for d in out:
        n_pos *= d
    return s, [(data[0], data[1] * k, n_pos)]


def _im2col_lower(a, ins, aux, ctx):
    _im2col_shape(a, [ins[0].shape])  # mx.nd calls skip shape inference: its checks run here
    return [_patches(a, ins[0])]


register(
    OpDef(
        name="im2col",
        params=dict(_WINDOW),
        infer_shape=_im2col_shape,
        lower=_im2col_lower,
    )
)


def _image_shape(a, cols) -> tuple:
    k = 1
    for d in a.kernel:
        k *= d
    if cols[1] % k:
        fail(f"data has {cols[1]} rows, not a multiple of prod(kernel={a.kernel}) = {k}")
    if len(a.output_size) != len(a.kernel):
        fail(f"output_size={a.output_size} must have as many dimensions as kernel={a.kernel}")
    return (cols[0], cols[1] // k) + tuple(a.output_size)


def _col2im_shape(a, s):
    cols = s[0]
    if cols is None:
        return s, [None]
    image = _image_shape(a, cols)
    out = _out_spatial(a, image[2:])
    n_pos = 1
    for d in out:
        n_pos *= d
    if cols[2] != n_pos:
        fail(f"data has {cols[2]} columns; output_size={a.output_size} gives {n_pos} positions")
    return s, [image]


def _col2im_lower(a, ins, aux, ctx):
    cols = ins[0]
    _col2im_shape(a, [cols.shape])  # mx.nd calls skip shape inference: its checks run here
    image = jax.ShapeDtypeStruct(_image_shape(a, cols.shape), cols.dtype)
    (out,) = jax.linear_transpose(lambda x: _patches(a, x), image)(cols)
    return [out]


register(
    OpDef(
        name="col2im",
        params={"output_size": Param(p_shape, REQUIRED), **_WINDOW},
        infer_shape=_col2im_shape,
        lower=_col2im_lower,
    )
)
