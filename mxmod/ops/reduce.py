"""Reductions and their duals: sum/mean/max/min/prod/nansum/nanprod/norm,
argmax/argmin/argmax_channel, softmax/log_softmax/softmin, dot, batch_dot,
softmax_cross_entropy and broadcast_to/_axis/_like.

MXNet 1.9.1 semantics (legacy shapes): reducing every axis gives shape ``(1,)``;
``axis=None`` or ``()`` reduces everything (``exclude`` is then ignored); ``exclude=True``
reduces the axes *not* listed. ``max``/``min`` send the full gradient to every element
equal to the result (MXNet), not JAX's even split. argmax/argmin return indices in the
input's dtype. ``dot`` contracts the last axis of lhs (first with ``transpose_a``) with
the first axis of rhs (last with ``transpose_b``), keeping the other axes in order.
"""

from __future__ import annotations

import math

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from ._attrs import Param, choice, optional, p_bool, p_dtype, p_float, p_int, p_shape
from ._def import OpDef, fail, np_dtype, register
from .shape import _lower1, _unary, first_type, norm_axis


# ------------------------------------------------------------------- reductions
def reduce_axes(a, nd):
    """The axes an ``axis``/``exclude`` attribute pair reduces over (sorted)."""
    if not a.axis:
        return tuple(range(nd))
    axes = sorted(norm_axis(x, nd) for x in a.axis)
    if len(set(axes)) != len(axes):
        fail(f"reduction axes {tuple(a.axis)} have duplicates")
    if a.get("exclude"):
        return tuple(i for i in range(nd) if i not in axes)
    return tuple(axes)


def reduce_shape(a, s):
    axes = reduce_axes(a, len(s))
    if a.keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(s))
    return tuple(d for i, d in enumerate(s) if i not in axes) or (1,)


def _mean(x, axis, keepdims):
    if jnp.issubdtype(x.dtype, jnp.integer):  # MXNet: integer division
        n = math.prod(x.shape[i] for i in axis)
        total = jnp.sum(x, axis, keepdims=keepdims, dtype=x.dtype)  # int64 with x64 else
        return lax.div(total, jnp.asarray(n, x.dtype))
    return jnp.mean(x, axis, keepdims=keepdims)


def _chooser(fn):
    """max/min whose gradient reaches every element equal to the result (MXNet)."""

    def f(x, axis, keepdims):
        m = lax.stop_gradient(fn(x, axis=axis, keepdims=True))
        hit = jnp.where(x == m, x - lax.stop_gradient(x), jnp.zeros_like(x))
        out = m + jnp.sum(hit, axis=axis, keepdims=True)
        return out if keepdims else jnp.squeeze(out, axis)

    return f


def _reducer(fn):
    def lower(a, ins, aux, ctx):
        x = ins[0]
        out = fn(x, axis=reduce_axes(a, x.ndim), keepdims=a.keepdims)
        return [out.astype(x.dtype).reshape(reduce_shape(a, x.shape))]

    return lower


_REDUCE_PARAMS = {
    "axis": Param(optional(p_shape), None),
    "keepdims": Param(p_bool, False),
    "exclude": Param(p_bool, False),
}
_REDUCERS = {
    "sum": (jnp.sum, ("sum_axis",)),
    "mean": (_mean, ()),
    "prod": (jnp.prod, ()),
    "nansum": (jnp.nansum, ()),
    "nanprod": (jnp.nanprod, ()),
    "max": (_chooser(jnp.max), ("max_axis",)),
    "min": (_chooser(jnp.min), ("min_axis",)),
}
for _name, (_fn, _aliases) in _REDUCERS.items():
    register(
        OpDef(
            name=_name,
            params=dict(_REDUCE_PARAMS),
            infer_shape=_unary(reduce_shape),
            lower=_reducer(_fn),
            aliases=_aliases,
        )
    )


def _norm_lower(a, ins, aux, ctx):
    x = ins[0]
    axes = reduce_axes(a, x.ndim)
    if a.ord == 1:
        out = jnp.sum(jnp.abs(x), axes, keepdims=a.keepdims)
    else:
        out = jnp.sqrt(jnp.sum(jnp.square(x), axes, keepdims=a.keepdims))
    dt = x.dtype if a.out_dtype is None else np_dtype(a.out_dtype)
    return [out.reshape(reduce_shape(a, x.shape)).astype(dt)]


def _p_ord(v):
    o = p_int(v)
    if o not in (1, 2):
        raise NotImplementedError(f"norm: ord={o} is not supported (MXNet supports ord=1 and 2)")
    return o


register(
    OpDef(
        name="norm",
        params={
            "ord": Param(_p_ord, 2),
            "axis": Param(optional(p_shape), None),
            "out_dtype": Param(optional(p_dtype), None),
            "keepdims": Param(p_bool, False),
        },
        infer_shape=_unary(reduce_shape),
        lower=_norm_lower,
        infer_type=lambda a, t: (t, [t[0] if a.out_dtype is None else np_dtype(a.out_dtype)]),
    )
)


# ----------------------------------------------------------------- argmax/min
def _arg_shape(a, s):
    if a.axis is None:
        return (1,) * len(s) if a.keepdims else (1,)
    ax = norm_axis(a.axis, len(s))
    return s[:ax] + ((1,) if a.keepdims else ()) + s[ax + 1 :]


def _arg_lower(fn):
    def lower(a, ins, aux, ctx):
        x = ins[0]
        if a.axis is None:
            idx = fn(x.reshape(-1))
        else:
            idx = fn(x, axis=norm_axis(a.axis, x.ndim))
        return [idx.astype(x.dtype).reshape(_arg_shape(a, x.shape))]

    return lower


for _name, _fn in (("argmax", jnp.argmax), ("argmin", jnp.argmin)):
    register(
        OpDef(
            name=_name,
            params={"axis": Param(optional(p_int), None), "keepdims": Param(p_bool, False)},
            infer_shape=_unary(_arg_shape),
            lower=_arg_lower(_fn),
        )
    )


def _channel_shape(a, s):
    """MXNet's legacy ``argmax_channel`` is ``argmax(axis=1)``: (N, C, ...) -> (N, ...)."""
    if len(s) < 2:
        fail(
            f"argmax_channel reduces axis 1 but the data has shape {tuple(s)}; give at least "
            "2-D (batch, channel, ...) data or use argmax(axis=0)"
        )
    return s[:1] + s[2:]


def _channel_argmax(a, x):
    _channel_shape(a, x.shape)  # the imperative path skips shape inference
    return jnp.argmax(x, axis=1).astype(x.dtype)


register(
    OpDef(
        name="argmax_channel",
        infer_shape=_unary(_channel_shape),
        lower=_lower1(_channel_argmax),
    )
)


# -------------------------------------------------------------------- softmax
def _p_use_length(v):
    if v is None or (isinstance(v, str) and v.strip() == "None"):
        return False
    return p_bool(v)


def _length_mask(a, x, length):
    """True where a position along ``a.axis`` is within its row's length. MXNet reads past
    the row for a length above the axis size; mxmod takes the whole row."""
    axis = norm_axis(a.axis, x.ndim)
    pos = jax.lax.broadcasted_iota(jnp.int32, x.shape, axis)
    return pos < jnp.expand_dims(length.astype(jnp.int32), axis)


def _length_only_for_softmax(name: str, a) -> None:
    if a.use_length and name != "softmax":
        fail(
            f"{name}: use_length=True needs a length input, which only softmax takes "
            "(as in MXNet); mask the data before the operator instead"
        )


def _softmax(kind):
    def lower(a, ins, aux, ctx):
        _length_only_for_softmax(kind, a)
        x = ins[0]
        if a.dtype is not None:
            x = x.astype(np_dtype(a.dtype))
        if a.temperature is not None and a.temperature != 1.0:
            x = x / jnp.asarray(a.temperature, x.dtype)
        if kind == "softmin":
            return [jax.nn.softmax(-x, axis=a.axis)]
        fn = jax.nn.log_softmax if kind == "log_softmax" else jax.nn.softmax
        if not a.use_length:
            return [fn(x, axis=a.axis)]
        # a row of length 0 gives zeros (jax.nn.softmax's where= would give NaN there)
        inside = _length_mask(a, x, ins[1])
        x = jnp.where(inside, x, jnp.asarray(-jnp.inf, x.dtype))
        top = jnp.max(x, axis=a.axis, keepdims=True)
        e = jnp.where(inside, jnp.exp(x - jnp.where(jnp.isfinite(top), top, 0)), 0)
        total = jnp.sum(e, axis=a.axis, keepdims=True)
        return [jnp.where(inside, e / jnp.where(total > 0, total, 1), 0)]

    return lower


def _softmax_inputs(a):
    return ("data", "length") if a.use_length else ("data",)


def _softmax_shape(name):
    def infer(a, s):
        _length_only_for_softmax(name, a)
        data = s[0]
        if data is None:
            return s, [None]
        axis = norm_axis(a.axis, len(data))
        if not a.use_length:
            return s, [data]
        want = tuple(data[:axis]) + tuple(data[axis + 1 :])
        if s[1] is not None and tuple(s[1]) != want:
            fail(
                f"softmax: length has shape {tuple(s[1])}, but data {tuple(data)} with "
                f"axis={a.axis} needs one length per row: {want}"
            )
        return [data, want], [data]

    return infer


def _softmax_type(a, t):
    out = t[0] if a.dtype is None else np_dtype(a.dtype)
    if not a.use_length:
        return t, [out]
    length = t[1]
    if length is not None and not np.issubdtype(np.dtype(length), np.integer):
        fail(
            f"softmax: the length input must have an integer dtype (MXNet's rule), got "
            f"{np.dtype(length).name}; cast it, e.g. length.astype('int32')"
        )
    return [t[0], np.dtype(np.int32) if length is None else length], [out]


for _name in ("softmax", "log_softmax", "softmin"):
    register(
        OpDef(
            name=_name,
            inputs=_softmax_inputs,
            signature_inputs=("data", "length") if _name == "softmax" else ("data",),
            infer_shape=_softmax_shape(_name),
            lower=_softmax(_name),
            params={
                "axis": Param(p_int, -1),
                "temperature": Param(optional(p_float), None),
                "dtype": Param(optional(choice("float16", "float32", "float64")), None),
                "use_length": Param(_p_use_length, False),
            },
            infer_type=_softmax_type,
        )
    )


def _sce_shape(a, s):
    data, label = s
    if data is None:
        return s, [(1,)]
    if len(data) != 2:
        fail(f"softmax_cross_entropy needs 2-D data (batch, classes), got {tuple(data)}")
    return [data, (data[0],)], [(1,)]


def _sce_lower(a, ins, aux, ctx):
    data, label = ins
    logp = jax.nn.log_softmax(data, axis=-1)
    picked = jnp.take_along_axis(logp, label.astype(jnp.int32)[:, None], axis=-1)
    return [-jnp.sum(picked).reshape(1)]


register(
    OpDef(
        name="softmax_cross_entropy",
        inputs=("data", "label"),
        infer_shape=_sce_shape,
        lower=_sce_lower,
    )
)


# ------------------------------------------------------------------------ dot
def _dot_shape(a, l, r):
    if len(l) == 1 and len(r) == 1:
        if l[0] != r[0]:
            fail(f"dot: lhs {tuple(l)} and rhs {tuple(r)} have different lengths")
        return (1,)
    kl, lrest = (l[0], l[1:]) if a.transpose_a else (l[-1], l[:-1])
    kr, rrest = (r[-1], r[:-1]) if a.transpose_b else (r[0], r[1:])
    if kl != kr:
        fail(
            f"dot: lhs {tuple(l)} (transpose_a={a.transpose_a}) and rhs {tuple(r)} "
            f"(transpose_b={a.transpose_b}) contract axes of sizes {kl} and {kr}"
        )
    return tuple(lrest) + tuple(rrest)


def _dot_lower(a, ins, aux, ctx):
    l, r = ins
    axes = ([0 if a.transpose_a else l.ndim - 1], [r.ndim - 1 if a.transpose_b else 0])
    return [jnp.tensordot(l, r, axes=axes).reshape(_dot_shape(a, l.shape, r.shape))]


def _p_stype(v):
    s = optional(choice("csr", "default", "row_sparse"))(v)
    if s not in (None, "default"):
        raise NotImplementedError(f"forward_stype={s!r}: sparse storage is not supported by mxmod")
    return s


_DOT_PARAMS = {
    "transpose_a": Param(p_bool, False),
    "transpose_b": Param(p_bool, False),
    "forward_stype": Param(_p_stype, None),
}


def _binary_infer(fn):
    return lambda a, s: (s, [None if None in s else fn(a, tuple(s[0]), tuple(s[1]))])


def _dot_op(name, shape, lower):
    """``dot`` and ``batch_dot``: same attributes and inputs, ``shape(a, lhs, rhs)``."""
    return OpDef(
        name=name,
        params=dict(_DOT_PARAMS),
        inputs=("lhs", "rhs"),
        infer_shape=_binary_infer(shape),
        lower=lower,
    )


register(_dot_op("dot", _dot_shape, _dot_lower))


def _bdot_shape(a, l, r):
    if len(l) < 3 or len(l) != len(r) or l[:-2] != r[:-2]:
        fail(f"batch_dot: lhs {l} and rhs {r} need the same ndim >= 3 and batch dims")
    m, kl = (l[-1], l[-2]) if a.transpose_a else (l[-2], l[-1])
    kr, n = (r[-1], r[-2]) if a.transpose_b else (r[-2], r[-1])
    if kl != kr:
        fail(f"batch_dot: lhs {l} and rhs {r} contract axes of sizes {kl} and {kr}")
    return tuple(l[:-2]) + (m, n)


def _matmul(l, r, ta, tb):
    return jnp.matmul(jnp.swapaxes(l, -1, -2) if ta else l, jnp.swapaxes(r, -1, -2) if tb else r)


def _bdot_lower(a, ins, aux, ctx):
    return [_matmul(ins[0], ins[1], a.transpose_a, a.transpose_b)]


register(_dot_op("batch_dot", _bdot_shape, _bdot_lower))


# ------------------------------------------------------------------ broadcast
def _check_broadcast(s, out):
    for d, o in zip(s, out):
        if d != o and d != 1 and d and o:
            fail(f"cannot broadcast shape {s} to {out}: dims must be 1 or equal")
    return tuple(out)


def _broadcast_to_shape(a, s):
    if len(a.shape) != len(s):
        fail(f"broadcast_to: input {s} and shape={a.shape} must have the same ndim")
    return _check_broadcast(s, tuple(d if t == 0 else t for d, t in zip(s, a.shape)))


register(
    OpDef(
        name="broadcast_to",
        params={"shape": Param(p_shape, ())},
        infer_shape=_unary(_broadcast_to_shape),
        lower=_lower1(lambda a, x: jnp.broadcast_to(x, _broadcast_to_shape(a, x.shape))),
    )
)


def _broadcast_axis_shape(a, s):
    if len(a.axis) != len(a.size):
        fail(f"broadcast_axis: axis {a.axis} and size {a.size} must have the same length")
    out = list(s)
    for ax, n in zip(a.axis, a.size):
        ax = norm_axis(ax, len(s))
        if s[ax] != 1:
            fail(f"broadcast_axis: axis {ax} of {s} has size {s[ax]}; only size-1 axes broadcast")
        out[ax] = n
    return tuple(out)


register(
    OpDef(
        name="broadcast_axis",
        aliases=("broadcast_axes",),
        params={"axis": Param(p_shape, ()), "size": Param(p_shape, ())},
        infer_shape=_unary(_broadcast_axis_shape),
        lower=_lower1(lambda a, x: jnp.broadcast_to(x, _broadcast_axis_shape(a, x.shape))),
    )
)


def _broadcast_like_shape(a, s, like):
    if a.lhs_axes is None and a.rhs_axes is None:
        if len(s) != len(like):
            fail(f"broadcast_like: lhs {s} and rhs {like} must have the same ndim")
        return _check_broadcast(s, like)
    if a.lhs_axes is None or a.rhs_axes is None or len(a.lhs_axes) != len(a.rhs_axes):
        fail("broadcast_like: lhs_axes and rhs_axes must be given together with the same length")
    if not a.lhs_axes:
        fail("broadcast_like: empty lhs_axes/rhs_axes are not allowed; omit both to match all axes")
    out = list(s)
    for la, ra in zip(a.lhs_axes, a.rhs_axes):
        out[norm_axis(la, len(s))] = like[norm_axis(ra, len(like))]
    return _check_broadcast(s, out)


register(
    OpDef(
        name="broadcast_like",
        inputs=("lhs", "rhs"),
        params={
            "lhs_axes": Param(optional(p_shape), None),
            "rhs_axes": Param(optional(p_shape), None),
        },
        infer_shape=lambda a, s: (s, [None if None in s else _broadcast_like_shape(a, s[0], s[1])]),
        infer_type=first_type,
        lower=lambda a, ins, aux, ctx: [
            jnp.broadcast_to(ins[0], _broadcast_like_shape(a, ins[0].shape, ins[1].shape))
        ],
    )
)
