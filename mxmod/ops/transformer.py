"""Contrib helpers that exported transformer (and other Gluon) models use:
``_contrib_interleaved_matmul_selfatt_qk``/``_valatt``,
``_contrib_interleaved_matmul_encdec_qk``/``_valatt``, ``_contrib_div_sqrt_dim``,
``_contrib_arange_like``, ``_contrib_index_copy``, ``_contrib_boolean_mask`` and
``_contrib_quadratic`` (MXNet 1.9.1 names, attributes, shapes and gradients).

The interleaved attention layout is MXNet's: sequences are (seq, batch, features) and the
projected features of one head sit together, ``(heads, 3, head_dim)`` for self-attention
(queries, keys, values) and ``(heads, 2, head_dim)`` for the encoder's keys/values. Score
maps are (batch * heads, query seq, key seq) and the ``qk`` ops scale the queries by
``1/sqrt(head_dim)``, as MXNet's kernels do.

``boolean_mask`` keeps the rows whose mask entry is non-zero, so its output shape depends
on the mask's values. As in MXNet, shape inference leaves its output unknown, so
``simple_bind`` and Module cannot bind a graph holding it (a compiled lowering raises an
MXNetError naming the fix), while ``Symbol.bind`` with given arrays runs such a graph op
by op (``DYNAMIC_SHAPE_OPS``; ``executor/executor.py``) and ``mx.nd.contrib.boolean_mask``
runs it on NDArrays.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import concrete_or_error

from ..base import MXNetError
from ._attrs import Param, optional, p_float, p_int, p_str
from ._def import OpDef, register


def _bad(msg: str) -> None:
    raise MXNetError(msg)


def _split_heads(x, heads: int, parts: int, what: str):
    """(seq, batch, heads*parts*d) -> (seq, batch, heads, parts, d)."""
    seq, batch, feat = x.shape
    if feat % (heads * parts):
        _bad(f"{what} last dim {feat} is not divisible by heads*{parts} = {heads * parts}")
    return x.reshape(seq, batch, heads, parts, feat // (heads * parts))


def _scores(q, k):
    """q (qs, b, h, d), k (ks, b, h, d) -> (b*h, qs, ks) of q/sqrt(d) . k."""
    d = q.shape[-1]
    s = jnp.einsum("qbhd,kbhd->bhqk", q / jnp.asarray(math.sqrt(d), q.dtype), k)
    return s.reshape(-1, q.shape[0], k.shape[0])


def _apply(att, v):
    """att (b*h, qs, ks), v (ks, b, h, d) -> (qs, b, h*d)."""
    ks, b, h, d = v.shape
    out = jnp.einsum("bhqk,kbhd->qbhd", att.reshape(b, h, att.shape[1], ks), v)
    return out.reshape(out.shape[0], b, h * d)


def _need(shape, ndim: int, what: str, layout: str) -> None:
    if len(shape) != ndim:
        _bad(f"{what} {tuple(shape)} must be {ndim}-D {layout}")


def _check_heads(a, feat: int, parts: int, what: str) -> int:
    if a.heads <= 0:
        _bad(f"heads={a.heads} must be positive")
    if feat % (a.heads * parts):
        _bad(f"{what} last dim {feat} is not divisible by {parts} * heads = {parts * a.heads}")
    return feat // (a.heads * parts)


# The interleaved inputs: how many (heads * head_dim) blocks their last dim holds, and layout.
_INTERLEAVED = {
    "queries_keys_values": (3, "(seq, batch, 3 * heads * head_dim)"),
    "queries": (1, "(query seq, batch, heads * head_dim)"),
    "keys_values": (2, "(key seq, batch, 2 * heads * head_dim)"),
}


def _head_dim(a, shape, what: str) -> int:
    """``head_dim`` of the interleaved input ``what`` after checking its shape."""
    parts, layout = _INTERLEAVED[what]
    _need(shape, 3, what, layout)
    return _check_heads(a, shape[2], parts, what)


def _selfatt_qk_shape(a, s):
    qkv = s[0]
    if qkv is None:
        return s, [None]
    _head_dim(a, qkv, "queries_keys_values")
    return s, [(qkv[1] * a.heads, qkv[0], qkv[0])]


def _selfatt_valatt_shape(a, s):
    qkv, att = s
    if qkv is None:
        return s, [None]
    d = _head_dim(a, qkv, "queries_keys_values")
    want = (qkv[1] * a.heads, qkv[0], qkv[0])
    return [tuple(qkv), want], [(qkv[0], qkv[1], a.heads * d)]


def _encdec_qk_shape(a, s):
    q, kv = s
    if q is None or kv is None:
        return s, [None]
    dq = _head_dim(a, q, "queries")
    dk = _head_dim(a, kv, "keys_values")
    if dq != dk or q[1] != kv[1]:
        _bad(
            f"queries {tuple(q)} and keys_values {tuple(kv)} do not fit: need the same batch "
            f"and keys_values last dim = 2 * queries last dim"
        )
    return s, [(q[1] * a.heads, q[0], kv[0])]


def _encdec_valatt_shape(a, s):
    kv, att = s
    if kv is None or att is None:
        return s, [None]
    d = _head_dim(a, kv, "keys_values")
    _need(att, 3, "attention", "(batch * heads, query seq, key seq)")
    if att[0] != kv[1] * a.heads or att[2] != kv[0]:
        _bad(
            f"attention {tuple(att)} must be (batch * heads, query seq, key seq) = "
            f"({kv[1] * a.heads}, ?, {kv[0]})"
        )
    return s, [(att[1], kv[1], a.heads * d)]


def _selfatt_scores(qkv, heads: int):
    t = _split_heads(qkv, heads, 3, "queries_keys_values")
    return _scores(t[:, :, :, 0], t[:, :, :, 1])


def _register_interleaved(kind: str, inputs: tuple, infer_shape, lower) -> None:
    """Register ``_contrib_interleaved_matmul_<kind>``; its one attribute is ``heads``."""
    register(
        OpDef(
            name=f"_contrib_interleaved_matmul_{kind}",
            params={"heads": Param(p_int)},
            inputs=inputs,
            infer_shape=infer_shape,
            lower=lower,
        )
    )


_register_interleaved(
    "selfatt_qk",
    ("queries_keys_values",),
    _selfatt_qk_shape,
    lambda a, ins, aux, ctx: [_selfatt_scores(ins[0], a.heads)],
)
_register_interleaved(
    "selfatt_valatt",
    ("queries_keys_values", "attention"),
    _selfatt_valatt_shape,
    lambda a, ins, aux, ctx: [_apply(ins[1], _split_heads(ins[0], a.heads, 3, "qkv")[:, :, :, 2])],
)
_register_interleaved(
    "encdec_qk",
    ("queries", "keys_values"),
    _encdec_qk_shape,
    lambda a, ins, aux, ctx: [
        _scores(
            _split_heads(ins[0], a.heads, 1, "queries")[:, :, :, 0],
            _split_heads(ins[1], a.heads, 2, "keys_values")[:, :, :, 0],
        )
    ],
)
_register_interleaved(
    "encdec_valatt",
    ("keys_values", "attention"),
    _encdec_valatt_shape,
    lambda a, ins, aux, ctx: [
        _apply(ins[1], _split_heads(ins[0], a.heads, 2, "keys_values")[:, :, :, 1])
    ],
)


def _same_shape(a, s):
    return s, [s[0]]


# -------------------------------------------------------------------- div_sqrt_dim
register(
    OpDef(
        name="_contrib_div_sqrt_dim",
        infer_shape=_same_shape,
        lower=lambda a, ins, aux, ctx: [
            ins[0] / jnp.asarray(math.sqrt(ins[0].shape[-1]), ins[0].dtype)
        ],
    )
)


# ---------------------------------------------------------------------- quadratic
register(
    OpDef(
        name="_contrib_quadratic",
        params={"a": Param(p_float, 0.0), "b": Param(p_float, 0.0), "c": Param(p_float, 0.0)},
        infer_shape=_same_shape,
        lower=lambda a, ins, aux, ctx: [
            (a.a * ins[0] * ins[0] + a.b * ins[0] + a.c).astype(ins[0].dtype)
        ],
    )
)


# -------------------------------------------------------------------- arange_like
def _arange_axis(a, ndim: int):
    if a.axis is None:
        return None
    if not -ndim <= a.axis < ndim:
        _bad(f"axis {a.axis} is out of range for {ndim}-D data")
    return a.axis % ndim


def _arange_shape(a, s):
    data = s[0]
    if a.repeat <= 0:
        _bad(f"repeat={a.repeat} must be a positive integer")
    if data is None:
        return s, [None]
    ax = _arange_axis(a, len(data))
    return s, [tuple(data) if ax is None else (data[ax],)]


def _arange_lower(a, ins, aux, ctx):
    x = ins[0]
    ax = _arange_axis(a, x.ndim)
    shape = x.shape if ax is None else (x.shape[ax],)
    n = int(np.prod(shape))
    vals = a.start + a.step * (np.arange(n, dtype=np.float64) // a.repeat)
    return [jnp.asarray(vals.reshape(shape), x.dtype)]


register(
    OpDef(
        name="_contrib_arange_like",
        params={
            "start": Param(p_float, 0.0),
            "step": Param(p_float, 1.0),
            "repeat": Param(p_int, 1),
            "ctx": Param(p_str, ""),
            "axis": Param(optional(p_int), None),
        },
        infer_shape=_arange_shape,
        lower=_arange_lower,
    )
)


# --------------------------------------------------------------------- index_copy
def _index_copy_shape(a, s):
    old, idx, new = s
    if idx is not None and len(idx) != 1:
        _bad(f"index_vector {tuple(idx)} must be 1-D")
    if old is None:
        return s, [None]
    if idx is not None:
        want = (idx[0],) + tuple(old[1:])
        if new is not None and tuple(new) != want:
            _bad(
                f"new_tensor {tuple(new)} must be (len(index_vector),) + old_tensor.shape[1:] "
                f"= {want}"
            )
        return [tuple(old), tuple(idx), want], [tuple(old)]
    return s, [tuple(old)]


register(
    OpDef(
        name="_contrib_index_copy",
        inputs=("old_tensor", "index_vector", "new_tensor"),
        infer_shape=_index_copy_shape,
        infer_type=lambda a, t: ([t[0], t[1], t[2] if t[2] is not None else t[0]], [t[0]]),
        lower=lambda a, ins, aux, ctx: [
            ins[0]
            .at[jax.lax.stop_gradient(ins[1]).astype(jnp.int32)]
            .set(ins[2].astype(ins[0].dtype))
        ],
    )
)


# ------------------------------------------------------------------- boolean_mask
def check_boolean_mask_axis(axis: int) -> None:
    if axis != 0:
        raise NotImplementedError(
            f"boolean_mask axis={axis}: MXNet 1.9.1 supports only axis=0 "
            "(transpose the masked axis to the front first)"
        )


def _bm_shape(a, s):
    data, index = s
    check_boolean_mask_axis(a.axis)
    if data is not None and not -len(data) <= a.axis < len(data):
        _bad(f"axis {a.axis} is out of range for {len(data)}-D data")
    if data is not None and index is not None:
        if len(index) != 1 or index[0] != data[a.axis % len(data)]:
            _bad(
                f"index {tuple(index)} must be 1-D with data.shape[axis] = "
                f"{data[a.axis % len(data)]} entries"
            )
    return s, [None]  # the number of kept rows depends on the mask values


def boolean_mask(data, index, axis: int = 0):
    """The rows of ``data`` along ``axis`` whose ``index`` entry is non-zero.

    Needs the mask's values: runs on concrete arrays, also under an eager ``jax.vjp``
    (``Symbol.bind`` executors of graphs holding this operator run op by op), never in a
    jitted program."""
    check_boolean_mask_axis(axis)
    try:
        mask = np.asarray(concrete_or_error(None, index))
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        raise MXNetError(
            "boolean_mask: the output shape depends on the mask values, so the operator cannot "
            "run in a compiled Module or simple_bind program (MXNet cannot bind it there "
            "either: its shape inference leaves the output unknown); bind the symbol with "
            "Symbol.bind(ctx, args={...}), which runs it, call mx.nd.contrib.boolean_mask on "
            "NDArrays, or multiply by the mask instead of removing rows"
        ) from None
    keep = np.nonzero(mask != 0)[0]
    return jnp.take(data, jnp.asarray(keep, jnp.int32), axis=axis)


#: Operators whose output shapes depend on input values: graphs holding one run op by op.
DYNAMIC_SHAPE_OPS = frozenset({"_contrib_boolean_mask"})


register(
    OpDef(
        name="_contrib_boolean_mask",
        params={"axis": Param(p_int, 0)},
        inputs=("data", "index"),
        infer_shape=_bm_shape,
        infer_type=lambda a, t: (t, [t[0]]),
        lower=lambda a, ins, aux, ctx: [boolean_mask(ins[0], ins[1], a.axis)],
    )
)
