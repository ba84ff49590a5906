"""Convolution and Deconvolution (MXNet's ``Convolution``/``Deconvolution``), lowered to
XLA's native convolution (``jax.lax.conv_general_dilated``) for 1-D, 2-D and 3-D data in
channel-first (NCW/NCHW/NCDHW) or channel-last (NHWC/NDHWC) layout."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..base import MXNetError
from ._attrs import Param, choice, int_at_least, optional, p_bool, p_shape, p_uint32, p_uint64
from ._def import OpDef, register

_FIRST = {1: "NCW", 2: "NCHW", 3: "NCDHW"}
_LAYOUTS = ("NCW", "NCHW", "NCDHW", "NHWC", "NDHWC")


def _bad(msg: str) -> None:
    """A shape/attribute error; ``OpDef.run_infer_shape`` prefixes ``Op 'node': ``."""
    raise MXNetError(msg)


def spatial_params(a, names=("stride", "dilate", "pad"), defaults=(1, 1, 0)) -> dict:
    """Kernel-length tuples for ``stride``/``dilate``/``pad``/... (MXNet's empty defaults)."""
    nd = len(a.kernel)
    if nd not in (1, 2, 3):
        _bad(f"kernel {a.kernel} must have 1, 2 or 3 dimensions (1-D, 2-D or 3-D data)")
    out = {}
    for name, dflt in zip(names, defaults):
        v = a.get(name) or ()
        if len(v) == 0:
            v = (dflt,) * nd
        if len(v) != nd:
            _bad(f"{name} {tuple(v)} must have as many dimensions as kernel {a.kernel}")
        out[name] = tuple(v)
    if any(k <= 0 for k in a.kernel):
        _bad(f"kernel {a.kernel} must be positive")
    for name in ("stride", "dilate"):
        if name in out and any(x <= 0 for x in out[name]):
            _bad(f"{name} {out[name]} must be positive")
    return out


def layout_of(layout, nd: int, what: str = "kernel") -> str:
    """The layout string for ``nd`` spatial dims (None -> channel-first)."""
    if layout is None:
        return _FIRST[nd]
    if len(layout) != nd + 2:
        _bad(
            f"layout {layout!r} is for {len(layout) - 2}-D data but {what} has {nd} dimensions; "
            f"use layout={_FIRST[nd]!r} or a matching {what}"
        )
    return layout


def split_layout(shape: tuple, layout: str):
    """(batch, channels, spatial dims) of a data shape in ``layout``."""
    c = layout.index("C")
    spatial = tuple(d for i, d in enumerate(shape) if i not in (0, c))
    return shape[0], shape[c], spatial


def join_layout(n, c, spatial, layout: str) -> tuple:
    it = iter(spatial)
    return tuple(n if ch == "N" else c if ch == "C" else next(it) for ch in layout)


def _check_data(data: tuple, layout: str) -> None:
    if len(data) != len(layout):
        _bad(
            f"data {tuple(data)} must be {len(layout)}-D in layout {layout} "
            f"(batch, channel and {len(layout) - 2} spatial dims)"
        )


def _weight_shape(layout: str, o: int, i: int, kernel: tuple) -> tuple:
    return (o,) + tuple(kernel) + (i,) if layout[-1] == "C" else (o, i) + tuple(kernel)


def _groups(a, c: int, what_in: str, n_out: int) -> None:
    g = a.num_group
    if g <= 0:
        _bad(f"num_group {g} must be positive")
    if c and c % g:
        _bad(f"{what_in} channels {c} must be divisible by num_group {g}")
    if n_out % g:
        _bad(f"num_filter {n_out} must be divisible by num_group {g}")


# ------------------------------------------------------------------ Convolution
def conv_inputs(a):
    return ["data", "weight"] if a.no_bias else ["data", "weight", "bias"]


def _filter_shape(a, s, out_spatial, weight_channels):
    """Shape inference shared by Convolution and Deconvolution: checks ``data`` against the
    layout, ``num_filter`` and ``num_group``; ``out_spatial(sp)`` gives the output's spatial
    dims and ``weight_channels(c)`` the weight's (first, second) channel dims."""
    layout = layout_of(a.layout, len(a.kernel))
    data = s[0]
    if data is None:
        return s, [None]
    _check_data(data, layout)
    if a.num_filter <= 0:
        _bad(f"num_filter {a.num_filter} must be positive")
    n, c, sp = split_layout(tuple(data), layout)
    _groups(a, c, "data", a.num_filter)
    out_sp = out_spatial(sp)
    shapes = [tuple(data), _weight_shape(layout, *weight_channels(c), a.kernel)]
    if not a.no_bias:
        shapes.append((a.num_filter,))
    return shapes, [join_layout(n, a.num_filter, out_sp, layout)]


def conv_shape(a, s):
    p = spatial_params(a)
    return _filter_shape(
        a, s, lambda sp: _conv_spatial(a, sp, p), lambda c: (a.num_filter, c // a.num_group)
    )


def _conv_spatial(a, sp, p) -> list:
    out_sp = []
    for x, k, st, d, pd in zip(sp, a.kernel, p["stride"], p["dilate"], p["pad"]):
        dk = d * (k - 1) + 1
        if x and dk > x + 2 * pd:
            dil = "" if d == 1 else f" (dilated to {dk})"
            _bad(
                f"kernel {a.kernel}{dil} does not fit input {tuple(sp)} padded by {p['pad']}: "
                f"each kernel dim must be <= input dim + 2*pad"
            )
        out_sp.append((x + 2 * pd - dk) // st + 1 if x else 0)
    return out_sp


def _dn(layout: str):
    rhs = "O" + layout[1:-1] + "I" if layout[-1] == "C" else "OI" + layout[2:]
    return (layout, rhs, layout)


def _bias(y, b, layout: str):
    c = layout.index("C")
    return y + b.reshape((-1,) + (1,) * (y.ndim - 1 - c)).astype(y.dtype)


def conv_lower(a, ins, aux, ctx):
    p = spatial_params(a)
    layout = layout_of(a.layout, len(a.kernel))
    x, w = ins[0], ins[1]
    y = jax.lax.conv_general_dilated(
        x,
        w.astype(x.dtype),
        window_strides=p["stride"],
        padding=[(q, q) for q in p["pad"]],
        rhs_dilation=p["dilate"],
        dimension_numbers=_dn(layout),
        feature_group_count=a.num_group,
    )
    if not a.no_bias:
        y = _bias(y, ins[2], layout)
    return [y]


def conv_params(no_bias: bool, extra: dict) -> dict:
    base = {
        "kernel": Param(p_shape),
        "num_filter": Param(int_at_least(1, p_uint32)),
        "stride": Param(p_shape, ()),
        "dilate": Param(p_shape, ()),
        "pad": Param(p_shape, ()),
        "num_group": Param(p_uint32, 1),
        "no_bias": Param(p_bool, no_bias),
        "workspace": Param(p_uint64, 1024),
        "cudnn_tune": Param(optional(choice("fastest", "limited_workspace", "off")), None),
        "cudnn_off": Param(p_bool, False),
        "layout": Param(optional(choice(*_LAYOUTS)), None),
    }
    base.update(extra)
    return base


# MXNet's positional order of the attributes (Convolution has no adj/target_shape)
CONV_ORDER = (
    "kernel", "stride", "dilate", "pad", "adj", "target_shape", "num_filter", "num_group",
    "workspace", "no_bias", "cudnn_tune", "cudnn_off", "layout",
)  # fmt: skip

register(
    OpDef(
        name="Convolution",
        params=conv_params(False, {}),
        positional=CONV_ORDER[:4] + CONV_ORDER[6:],
        inputs=conv_inputs,
        signature_inputs=("data", "weight", "bias"),
        infer_shape=conv_shape,
        lower=conv_lower,
    )
)


# ---------------------------------------------------------------- Deconvolution
def _deconv_pads(a, sp, p):
    """(pad, adj) per spatial dim; ``target_shape`` overrides both as in MXNet."""
    tgt = tuple(a.target_shape or ())
    if tgt and any(t != 0 for t in tgt):
        if len(tgt) != len(a.kernel):
            _bad(f"target_shape {tgt} must have as many dimensions as kernel {a.kernel}")
        pads, adjs = [], []
        for x, k, st, d, t in zip(sp, a.kernel, p["stride"], p["dilate"], tgt):
            full = st * (x - 1) + d * (k - 1) + 1
            if full < t:
                _bad(
                    f"target_shape {tgt} is too big: input {tuple(sp)} with kernel {a.kernel} "
                    f"and stride {p['stride']} reaches at most {full} in a dim"
                )
            pads.append((full - t + 1) // 2)
            adjs.append((full - t) % 2)
        return tuple(pads), tuple(adjs)
    for adj, st in zip(p["adj"], p["stride"]):
        if adj >= st:
            _bad(f"adj {p['adj']} must be smaller than stride {p['stride']} in every dim")
    return p["pad"], p["adj"]


def _deconv_shape(a, s):
    p = spatial_params(a, ("stride", "dilate", "pad", "adj"), (1, 1, 0, 0))
    return _filter_shape(
        a, s, lambda sp: _deconv_spatial(a, sp, p), lambda c: (c, a.num_filter // a.num_group)
    )


def _deconv_spatial(a, sp, p) -> list:
    if not all(sp):
        return [0] * len(sp)
    out_sp = []
    pads, adjs = _deconv_pads(a, sp, p)
    for x, k, st, d, pd, adj in zip(sp, a.kernel, p["stride"], p["dilate"], pads, adjs):
        o = st * (x - 1) + d * (k - 1) + 1 - 2 * pd + adj
        if o <= 0:
            _bad(
                f"pad {p['pad']} is too large for input {tuple(sp)} with kernel {a.kernel}: "
                f"the output would be empty"
            )
        out_sp.append(o)
    return out_sp


def deconv(x, w, layout: str, kernel, stride, dilate, pads, adjs, groups: int):
    """Transposed convolution of ``x`` with MXNet's weight ``(C, F/g, *k)`` (or ``(C, *k, F/g)``
    channel-last), as one forward ``conv_general_dilated`` with input dilation."""
    nd = len(kernel)
    last = layout[-1] == "C"
    if last:  # (C, *k, F/g) -> (C, F/g, *k)
        w = jnp.moveaxis(w, -1, 1)
    cin, fg = w.shape[0], w.shape[1]
    w = w.reshape((groups, cin // groups, fg) + tuple(kernel))
    w = jnp.swapaxes(w, 1, 2).reshape((groups * fg, cin // groups) + tuple(kernel))
    w = jnp.flip(w, axis=tuple(range(2, 2 + nd)))
    padding = [
        (d * (k - 1) - p, d * (k - 1) - p + adj) for k, d, p, adj in zip(kernel, dilate, pads, adjs)
    ]
    lo_crop = [max(0, -lo) for lo, _ in padding]
    hi_crop = [max(0, -hi) for _, hi in padding]
    padding = [(max(0, lo), max(0, hi)) for lo, hi in padding]
    rhs = "OI" + layout[2:] if not last else "OI" + layout[1:-1]
    y = jax.lax.conv_general_dilated(
        x,
        w.astype(x.dtype),
        window_strides=(1,) * nd,
        padding=padding,
        lhs_dilation=stride,
        rhs_dilation=dilate,
        dimension_numbers=(layout, rhs, layout),
        feature_group_count=groups,
    )
    if any(lo_crop) or any(hi_crop):
        c = layout.index("C")
        sl = [slice(None)] * y.ndim
        sp_axes = [i for i in range(y.ndim) if i not in (0, c)]
        for ax, lo, hi in zip(sp_axes, lo_crop, hi_crop):
            sl[ax] = slice(lo, y.shape[ax] - hi)
        y = y[tuple(sl)]
    return y


def _deconv_lower(a, ins, aux, ctx):
    p = spatial_params(a, ("stride", "dilate", "pad", "adj"), (1, 1, 0, 0))
    layout = layout_of(a.layout, len(a.kernel))
    x, w = ins[0], ins[1]
    _, _, sp = split_layout(x.shape, layout)
    pads, adjs = _deconv_pads(a, sp, p)
    y = deconv(x, w, layout, a.kernel, p["stride"], p["dilate"], pads, adjs, a.num_group)
    if not a.no_bias:
        y = _bias(y, ins[2], layout)
    return [y]


register(
    OpDef(
        name="Deconvolution",
        positional=CONV_ORDER,
        params=conv_params(
            True,
            {
                "adj": Param(p_shape, ()),
                "target_shape": Param(p_shape, ()),
                "workspace": Param(p_uint64, 512),
            },
        ),
        inputs=conv_inputs,
        signature_inputs=("data", "weight", "bias"),
        infer_shape=_deconv_shape,
        lower=_deconv_lower,
    )
)
