"""Indexing and ordering operators: slice, slice_axis, slice_like, take, pick, one_hot,
where, sort, argsort and topk (MXNet 1.9.1 names, defaults and rules).

Indices are truncated to integers as MXNet does; ``clip`` clamps them to the axis and
``wrap`` takes them modulo its size. Index outputs (argsort, topk) are floats by default,
in the ``dtype`` attribute, like MXNet's; sorts are stable (ties keep input order).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..base import MXNetError
from ._attrs import REQUIRED, Param, choice, optional, p_bool, p_dtype, p_float, p_int, p_shape
from ._def import OpDef, fail, np_dtype, register
from .shape import _lower1, _unary, first_type, norm_axis, p_opt_ints


# ------------------------------------------------------------------- slices
def _slices(a, s):
    if len(a.begin) != len(a.end) or (a.step and len(a.step) != len(a.begin)):
        fail(f"begin {a.begin}, end {a.end} and step {a.step} must have the same length")
    if len(a.begin) > len(s):
        fail(f"begin {a.begin} has more entries than the input has dims {s}")
    out = []
    for i, (b, e) in enumerate(zip(a.begin, a.end)):
        st = a.step[i] if a.step else None
        if st == 0:
            fail("slice step cannot be 0")
        out.append(slice(b, e, st))
    return tuple(out)


def _slice_shape(a, s):
    sl = _slices(a, s)
    return tuple(len(range(*x.indices(d))) for x, d in zip(sl, s)) + tuple(s[len(sl) :])


register(
    OpDef(
        name="slice",
        aliases=("crop",),
        params={
            "begin": Param(p_opt_ints),
            "end": Param(p_opt_ints),
            "step": Param(p_opt_ints, ()),
        },
        infer_shape=_unary(_slice_shape),
        lower=_lower1(lambda a, x: x[_slices(a, x.shape)]),
    )
)


def _slice_axis_range(a, s):
    ax = norm_axis(a.axis, len(s))
    n = s[ax]
    b = a.begin + n if a.begin < 0 else a.begin
    e = n if a.end is None else (a.end + n if a.end < 0 else a.end)
    if not (0 <= b < e <= n):
        fail(
            f"slice_axis: begin={a.begin}, end={a.end} is not a valid range of axis {a.axis} "
            f"with size {n}"
        )
    return ax, b, e


def _slice_axis_shape(a, s):
    ax, b, e = _slice_axis_range(a, s)
    return s[:ax] + (e - b,) + s[ax + 1 :]


def _slice_axis_lower(a, x):
    ax, b, e = _slice_axis_range(a, x.shape)
    return jax.lax.slice_in_dim(x, b, e, axis=ax)


register(
    OpDef(
        name="slice_axis",
        params={"axis": Param(p_int), "begin": Param(p_int), "end": Param(optional(p_int))},
        infer_shape=_unary(_slice_axis_shape),
        lower=_lower1(_slice_axis_lower),
    )
)


def _slice_like_shape(a, s, like):
    if a.axes:
        axes = [norm_axis(x, len(s), "axes entry") for x in a.axes]
        for x in a.axes:
            norm_axis(x, len(like), "axes entry")
    else:
        if len(s) != len(like):
            fail(f"slice_like without axes needs data {s} and shape_like {like} of the same ndim")
        axes = range(len(s))
    out = list(s)
    for ax in axes:
        if like[ax] > s[ax]:
            fail(f"slice_like: shape_like {like} exceeds data {s} on axis {ax}")
        out[ax] = like[ax]
    return tuple(out)


register(
    OpDef(
        name="slice_like",
        params={"axes": Param(p_shape, ())},
        inputs=("data", "shape_like"),
        infer_shape=lambda a, s: (s, [None if None in s else _slice_like_shape(a, s[0], s[1])]),
        infer_type=first_type,
        lower=lambda a, ins, aux, ctx: [
            ins[0][tuple(slice(0, d) for d in _slice_like_shape(a, ins[0].shape, ins[1].shape))]
        ],
    )
)


# --------------------------------------------------------------- take, pick
def _fix_index(idx, n, mode):
    i = idx.astype(jnp.int32)
    return jnp.clip(i, 0, n - 1) if mode == "clip" else jnp.mod(i, n)


def _take_shape(a, s):
    data, idx = s
    if data is None or idx is None:
        return s, [None]
    ax = norm_axis(a.axis, len(data))
    return s, [tuple(data[:ax]) + tuple(idx) + tuple(data[ax + 1 :])]


def _take_lower(a, ins, aux, ctx):
    x, idx = ins
    ax = a.axis % x.ndim
    return [jnp.take(x, _fix_index(idx, x.shape[ax], a.mode), axis=ax, mode="clip")]


def _p_take_mode(v):
    mode = choice("clip", "wrap", "raise")(v)
    if mode == "raise":
        raise NotImplementedError(
            "take: mode='raise' is not supported by mxmod (compiled code "
            "cannot raise on bad indices); use mode='clip' or 'wrap'"
        )
    return mode


register(
    OpDef(
        name="take",
        params={"axis": Param(p_int, 0), "mode": Param(_p_take_mode, "clip")},
        inputs=("a", "indices"),
        infer_shape=_take_shape,
        infer_type=first_type,
        lower=_take_lower,
    )
)


def _pick_axis(a, nd):
    if a.axis is None:
        raise MXNetError("pick: axis=None is not supported (as in MXNet); give an axis")
    return norm_axis(a.axis, nd)


def _pick_shape(a, s):
    data, idx = s
    if data is None:
        return s, [None]
    ax = _pick_axis(a, len(data))
    out = tuple(data[:ax]) + ((1,) if a.keepdims else ()) + tuple(data[ax + 1 :])
    want = tuple(data[:ax]) + tuple(data[ax + 1 :])
    if idx is not None and tuple(idx) not in (want, out):
        fail(
            f"pick: index shape {tuple(idx)} does not fit data {tuple(data)} with axis={a.axis}; "
            f"expected {want}"
        )
    return [data, want if idx is None else idx], [out]


def _pick_lower(a, ins, aux, ctx):
    x, idx = ins
    ax = _pick_axis(a, x.ndim)
    i = _fix_index(idx, x.shape[ax], a.mode)
    i = i.reshape(x.shape[:ax] + (1,) + x.shape[ax + 1 :])
    out = jnp.take_along_axis(x, i, axis=ax)
    return [out if a.keepdims else out.squeeze(ax)]


register(
    OpDef(
        name="pick",
        inputs=("data", "index"),
        params={
            "axis": Param(optional(p_int), -1),
            "keepdims": Param(p_bool, False),
            "mode": Param(choice("clip", "wrap"), "clip"),
        },
        infer_shape=_pick_shape,
        infer_type=first_type,
        lower=_pick_lower,
    )
)


# ------------------------------------------------------------ one_hot, where
def _one_hot_lower(a, ins, aux, ctx):
    i = ins[0].astype(jnp.int32)[..., None]
    hit = i == jnp.arange(a.depth, dtype=jnp.int32)
    dt = np_dtype(a.dtype)
    return [jnp.where(hit, jnp.asarray(a.on_value, dt), jnp.asarray(a.off_value, dt))]


register(
    OpDef(
        name="one_hot",
        inputs=("indices",),
        params={
            "depth": Param(p_int),
            "on_value": Param(p_float, 1.0),
            "off_value": Param(p_float, 0.0),
            "dtype": Param(p_dtype, "float32"),
        },
        infer_shape=_unary(lambda a, s: tuple(s) + (a.depth,)),
        infer_type=lambda a, t: (t, [np_dtype(a.dtype)]),
        lower=_one_hot_lower,
    )
)


def _where_shape(a, s):
    cond, x, y = s
    shape = x if x is not None else y
    if shape is None:
        return s, [None]
    if x is not None and y is not None and tuple(x) != tuple(y):
        fail(f"where: x {tuple(x)} and y {tuple(y)} must have the same shape")
    if cond is not None and tuple(cond) not in (tuple(shape), tuple(shape[:1])):
        fail(
            f"where: condition {tuple(cond)} must have the shape of x {tuple(shape)} or be "
            f"1-D of length {shape[0]}"
        )
    return [cond, shape, shape], [shape]


def _where_type(a, t):
    known = t[1] if t[1] is not None else t[2]
    return [t[0], known, known], [known]


def _where_lower(a, ins, aux, ctx):
    cond, x, y = ins
    if cond.ndim == 1 and x.ndim > 1:
        cond = cond.reshape((-1,) + (1,) * (x.ndim - 1))
    return [jnp.where(cond != 0, x, y)]


register(
    OpDef(
        name="where",
        inputs=("condition", "x", "y"),
        infer_shape=_where_shape,
        infer_type=_where_type,
        lower=_where_lower,
    )
)


# ------------------------------------------------------------ sort, topk
def _flat_axis(a, x):
    """(array, axis) to sort along; axis=None sorts the flattened array."""
    if a.axis is None:
        return x.reshape(-1), 0
    return x, norm_axis(a.axis, x.ndim)


def _sorted_shape(a, s):
    if a.axis is None:
        return (int(np.prod(s)),)
    norm_axis(a.axis, len(s))  # checks the axis
    return tuple(s)


def _argsort(x, ax, ascend):
    return jnp.argsort(x, axis=ax, stable=True, descending=not ascend)


def _sort_lower(a, ins, aux, ctx):
    x, ax = _flat_axis(a, ins[0])
    idx = _argsort(x, ax, a.is_ascend)
    return [jnp.take_along_axis(x, idx, axis=ax), idx.astype(x.dtype)]


_SORT_PARAMS = {"axis": Param(optional(p_int), -1), "is_ascend": Param(p_bool, True)}
register(
    OpDef(
        name="sort",
        params=_SORT_PARAMS,
        outputs=("output0",),
        num_outputs_total=lambda a: 2,
        infer_shape=lambda a, s: (s, [None if s[0] is None else _sorted_shape(a, s[0])] * 2),
        infer_type=lambda a, t: (t, [t[0], t[0]]),
        lower=_sort_lower,
    )
)

register(
    OpDef(
        name="argsort",
        params={**_SORT_PARAMS, "dtype": Param(p_dtype, "float32")},
        infer_shape=_unary(_sorted_shape),
        infer_type=lambda a, t: (t, [np_dtype(a.dtype)]),
        lower=lambda a, ins, aux, ctx: [
            _argsort(*_flat_axis(a, ins[0]), a.is_ascend).astype(np_dtype(a.dtype))
        ],
    )
)


def _topk_k(a, n):
    k = n if a.k < 1 else a.k
    if k > n:
        fail(f"topk: k={a.k} is larger than the axis size {n}")
    return k


def _topk_shapes(a, s):
    if s[0] is None:
        return s, [None] * _topk_total(a)
    flat = _sorted_shape(a, s[0])
    ax = 0 if a.axis is None else norm_axis(a.axis, len(flat))
    out = tuple(flat[:ax]) + (_topk_k(a, flat[ax]),) + tuple(flat[ax + 1 :])
    if a.ret_typ == "mask":
        return s, [tuple(s[0])]
    return s, [out] * _topk_total(a)


def _topk_total(a):
    return 2 if a.ret_typ in ("value", "both") else 1


def _topk_types(a, t):
    idx = np_dtype(a.dtype)
    return t, {"indices": [idx], "mask": [t[0]], "value": [t[0], idx], "both": [t[0], idx]}[
        a.ret_typ
    ]


def _topk_lower(a, ins, aux, ctx):
    x, ax = _flat_axis(a, ins[0])
    n = x.shape[ax]
    k = _topk_k(a, n)
    idx = jnp.moveaxis(_argsort(x, ax, a.is_ascend), ax, -1)[..., :k]
    vals = jnp.take_along_axis(jnp.moveaxis(x, ax, -1), idx, axis=-1)
    vals, idx_out = jnp.moveaxis(vals, -1, ax), jnp.moveaxis(idx, -1, ax).astype(np_dtype(a.dtype))
    if a.ret_typ == "indices":
        return [idx_out]
    if a.ret_typ == "mask":
        mask = jnp.sum(jax.nn.one_hot(idx, n, dtype=x.dtype), axis=-2)
        return [jnp.moveaxis(mask, -1, ax).reshape(ins[0].shape)]
    return [vals, idx_out]


register(
    OpDef(
        name="topk",
        params={
            "axis": Param(optional(p_int), -1),
            "k": Param(p_int, 1),
            "ret_typ": Param(choice("both", "indices", "mask", "value"), "indices"),
            "is_ascend": Param(p_bool, False),
            "dtype": Param(p_dtype, "float32"),
        },
        outputs=lambda a: {"both": ["output0", "output1"], "value": ["output0"]}.get(
            a.ret_typ, ["output"]
        ),
        num_outputs_total=_topk_total,
        infer_shape=_topk_shapes,
        infer_type=_topk_types,
        lower=_topk_lower,
    )
)


def _batch_take_shape(a, s):
    data, idx = s
    if data is None:
        return s, [None]
    if len(data) != 2:
        fail(f"batch_take: a must be 2-D, got shape {tuple(data)}")
    want = (data[0],)
    if idx is not None and tuple(idx) != want:
        fail(f"batch_take: indices shape {tuple(idx)} must be {want} (one index per row of a)")
    return [data, want], [want]


def _batch_take_lower(a, ins, aux, ctx):
    data, idx = ins
    cols = jnp.clip(idx.astype(jnp.int32), 0, data.shape[1] - 1)
    return [data[jnp.arange(data.shape[0]), cols]]


register(
    OpDef(
        name="batch_take",
        inputs=("a", "indices"),
        infer_shape=_batch_take_shape,
        infer_type=first_type,
        lower=_batch_take_lower,
    )
)


def _gather_nd_shape(a, s):
    data, idx = s
    if data is None or idx is None:
        return s, [None]
    m = idx[0]
    if m > len(data):
        fail(f"gather_nd: indices index {m} axes but data has only {len(data)}")
    return s, [tuple(idx[1:]) + tuple(data[m:])]


def _gather_nd_lower(a, ins, aux, ctx):
    data, idx = ins
    idx = idx.astype(jnp.int32)
    return [data[tuple(idx[i] for i in range(idx.shape[0]))]]


register(
    OpDef(
        name="gather_nd",
        inputs=("data", "indices"),
        infer_shape=_gather_nd_shape,
        infer_type=first_type,
        lower=_gather_nd_lower,
    )
)


def _scatter_nd_shape(a, s):
    data, idx = s
    out = tuple(a.shape)
    if idx is not None and data is not None:
        want = tuple(idx[1:]) + out[idx[0] :]
        if tuple(data) != want:
            fail(f"scatter_nd: data shape {tuple(data)} must be {want} for indices {tuple(idx)}")
    return s, [out]


def _scatter_nd_lower(a, ins, aux, ctx):
    data, idx = ins
    idx = idx.astype(jnp.int32)
    out = jnp.zeros(tuple(a.shape), data.dtype)
    return [out.at[tuple(idx[i] for i in range(idx.shape[0]))].set(data)]


register(
    OpDef(
        name="scatter_nd",
        params={"shape": Param(p_shape, REQUIRED)},
        inputs=("data", "indices"),
        infer_shape=_scatter_nd_shape,
        infer_type=first_type,
        lower=_scatter_nd_lower,
    )
)
