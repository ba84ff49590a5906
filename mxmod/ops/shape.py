"""Shape-changing operators: Reshape, Flatten, Concat, stack, SliceChannel, transpose,
SwapAxis, expand_dims, squeeze, reverse, tile, repeat, reshape_like,
``_zeros``/``_ones``/``_full``, shape_array and size_array. (Slicing and indexing ops
live in ``indexing.py``; broadcast_to/_like/_axis in ``reduce.py``.)

Attribute names, defaults and shape rules are MXNet 1.9.1's (legacy shape mode: a dim
of 0 in an input shape means "not known yet"; reductions to nothing give ``(1,)``).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ._attrs import (
    REQUIRED,
    AttrError,
    Param,
    _literal,
    optional,
    p_bool,
    p_dtype,
    p_float,
    p_int,
    p_shape,
    p_str,
)
from ..base import FLAG_DTYPES
from ._def import OpDef, fail, np_dtype, register
from .elemwise import _arg_names, merge_shapes


def p_opt_ints(v):
    """A tuple whose entries are ints or None: ``(None, 1)``, ``"(0, None)"``."""
    if isinstance(v, str):
        v = _literal(v.strip())
    if isinstance(v, (int, np.integer)) or v is None:
        v = (v,)
    if not isinstance(v, (tuple, list)):
        raise AttrError(f"expected a tuple of ints or None, got {v!r}")
    return tuple(None if x is None else p_int(x) for x in v)


def norm_axis(axis: int, ndim: int, what: str = "axis") -> int:
    """A non-negative axis; negative counts from the end (MXNet's ``CheckAxis``)."""
    if not -ndim <= axis < ndim:
        fail(f"{what}={axis} is out of range for an input with {ndim} dimensions")
    return axis % ndim


def first_type(a, dtypes):
    """Type rule: the output has the first input's dtype; other inputs are free."""
    return dtypes, [dtypes[0]]


def _unary(fn):
    """Shape rule for one-input ops: ``fn(a, shape) -> out shape`` once data is known."""

    def infer(a, s):
        return s, [None if s[0] is None else tuple(fn(a, tuple(s[0])))]

    return infer


def _lower1(fn):
    return lambda a, ins, aux, ctx: [fn(a, ins[0])]


# ------------------------------------------------------------------ Reshape
def reshape_shape(shape, dshape, reverse=False):
    """MXNet's ``InferReshapeShape``: codes 0 (copy), -1 (infer), -2 (copy rest),
    -3 (merge two), -4 (split one into the next two values)."""
    src, prm = list(dshape), list(shape)
    if reverse:
        src, prm = src[::-1], prm[::-1]
    out, i, k, inf = [], 0, 0, -1
    while i < len(prm):
        d = prm[i]
        if d == 0:
            if k >= len(src):
                fail(
                    f"shape {tuple(shape)}: code 0 at position {i} has no input dim to copy "
                    f"from {tuple(dshape)}"
                )
            out.append(src[k])
            k += 1
        elif d == -1:
            if inf >= 0:
                fail(f"shape {tuple(shape)}: only one dim can be inferred (-1)")
            inf = len(out)
            out.append(1)
            k += 1
        elif d == -2:
            out.extend(src[k:])
            k = len(src)
        elif d == -3:
            if k + 1 >= len(src):
                fail(
                    f"shape {tuple(shape)}: code -3 needs two input dims, {tuple(dshape)} has "
                    f"too few left"
                )
            out.append(src[k] * src[k + 1])
            k += 2
        elif d == -4:
            if i + 2 >= len(prm) or k >= len(src):
                fail(
                    f"shape {tuple(shape)}: code -4 must be followed by two dims and have an "
                    f"input dim to split"
                )
            d0, d1, d2 = src[k], prm[i + 1], prm[i + 2]
            k, i = k + 1, i + 2
            if d1 == -1 and d2 == -1:
                fail(f"shape {tuple(shape)}: split dims cannot both be -1")
            if d1 == -1:
                d1 = d0 // d2 if d0 else 0
            if d2 == -1:
                d2 = d0 // d1 if d0 else 0
            if d0 and d1 * d2 != d0:
                fail(f"shape {tuple(shape)}: split dims {d1}, {d2} do not divide input dim {d0}")
            out.extend([d1, d2])
        elif d > 0:
            out.append(d)
            k += 1
        else:
            fail(f"shape {tuple(shape)}: invalid code {d} (valid: positive, 0, -1, -2, -3, -4)")
        i += 1
    if inf >= 0:
        rest = math.prod(out)
        size = math.prod(dshape)
        out[inf] = size // rest if size and rest else 0
    if reverse:
        out = out[::-1]
    if all(dshape) and all(out) and math.prod(out) != math.prod(dshape):
        fail(
            f"cannot reshape {tuple(dshape)} ({math.prod(dshape)} elements) to shape "
            f"{tuple(shape)} -> {tuple(out)} ({math.prod(out)} elements)"
        )
    return tuple(out)


def _p_target_shape(v):
    if v is None or (isinstance(v, str) and v.strip() in ("", "None")):
        return ()
    return p_shape(v)


def legacy_reshape_shape(dshape, target, keep_highest: bool) -> tuple:
    """MXNet's deprecated ``Reshape(target_shape=..., keep_highest=...)``: ``target`` as
    given, its first dim taken from the input with ``keep_highest``, and a single 0 (after
    that first dim) standing for what the other dims leave. MXNet outputs a wrong-sized
    shape when the sizes differ (two 0s, or dims that do not divide); mxmod raises."""
    out = list(target)
    start = 1 if keep_highest else 0
    if keep_highest:
        out[0] = dshape[0]
    zeros = [i for i in range(start, len(out)) if out[i] == 0]
    if len(zeros) == 1:
        out[zeros[0]] = 1
        rest = math.prod(out)
        out[zeros[0]] = math.prod(dshape) // rest if rest else 0
    if all(dshape) and math.prod(out) != math.prod(dshape):
        fail(
            f"Reshape: target_shape={tuple(target)}"
            + (" with keep_highest" if keep_highest else "")
            + f" gives {tuple(out)} ({math.prod(out)} elements) for input {tuple(dshape)} "
            f"({math.prod(dshape)} elements); use shape= with MXNet's codes (0, -1, -2, -3, -4)"
        )
    return tuple(out)


def _reshape_out(a, dshape) -> tuple:
    if a.shape:
        return reshape_shape(a.shape, dshape, a.reverse)
    return legacy_reshape_shape(dshape, a.target_shape, a.keep_highest)


def _reshape_infer(a, s):
    if not a.shape and not a.target_shape:
        fail("Reshape needs shape=... (or the deprecated target_shape=...)")
    if s[0] is None:
        fixed = all(d > 0 for d in a.shape)
        return s, [tuple(a.shape) if a.shape and fixed else None]
    return s, [_reshape_out(a, s[0])]


register(
    OpDef(
        name="Reshape",
        aliases=("reshape",),
        params={
            "shape": Param(p_shape, ()),
            "reverse": Param(p_bool, False),
            "target_shape": Param(_p_target_shape, ()),
            "keep_highest": Param(p_bool, False),
        },
        infer_shape=_reshape_infer,
        lower=_lower1(lambda a, x: x.reshape(_reshape_out(a, x.shape))),
    )
)

register(
    OpDef(
        name="Flatten",
        aliases=("flatten",),
        infer_shape=_unary(
            lambda a, s: (s[0], math.prod(s[1:])) if s else fail("Flatten needs ndim >= 1")
        ),
        lower=_lower1(lambda a, x: x.reshape(x.shape[0], -1)),
    )
)


# ------------------------------------------------------------------- Concat
def _concat_infer(a, s):
    known = [x for x in s if x is not None]
    if not known:
        return s, [None]
    nd = len(known[0])
    ax = norm_axis(a.dim, nd, "dim")
    rest = merge_shapes([x[:ax] + x[ax + 1 :] for x in known], "Concat inputs (except along dim)")
    if len(known) < len(s):
        return s, [None]
    total = 0 if any(x[ax] == 0 for x in s) else sum(x[ax] for x in s)
    filled = [rest[:ax] + (x[ax],) + rest[ax:] for x in s]
    return filled, [rest[:ax] + (total,) + rest[ax:]]


# ``_rnn_param_concat``: the Concat Gluon's RNN layers export to join their flat weights
for _name, _aliases in (("Concat", ("concat",)), ("_rnn_param_concat", ())):
    register(
        OpDef(
            name=_name,
            aliases=_aliases,
            params={"dim": Param(p_int, 1)},
            inputs=_arg_names,
            variadic="num_args",
            infer_shape=_concat_infer,
            lower=lambda a, ins, aux, ctx: [jnp.concatenate(ins, axis=a.dim)],
        )
    )


def _stack_infer(a, s):
    shape = merge_shapes(s, "stack inputs")
    if shape is None or any(x is None for x in s):
        return [shape] * len(s), [None]
    ax = norm_axis(a.axis, len(shape) + 1)
    return [shape] * len(s), [shape[:ax] + (len(s),) + shape[ax:]]


register(
    OpDef(
        name="stack",
        params={"axis": Param(p_int, 0)},
        inputs=_arg_names,
        variadic="num_args",
        infer_shape=_stack_infer,
        lower=lambda a, ins, aux, ctx: [jnp.stack(ins, axis=a.axis)],
    )
)


# ------------------------------------------------------- axes permutations
def _transpose_axes(a, nd):
    if not a.axes:
        return tuple(range(nd))[::-1]
    axes = tuple(norm_axis(x, nd, "axes entry") for x in a.axes)
    if len(axes) != nd or sorted(axes) != list(range(nd)):
        fail(f"axes={a.axes} is not a permutation of the {nd} input dimensions")
    return axes


register(
    OpDef(
        name="transpose",
        params={"axes": Param(p_shape, ())},
        infer_shape=_unary(lambda a, s: tuple(s[i] for i in _transpose_axes(a, len(s)))),
        lower=_lower1(lambda a, x: jnp.transpose(x, _transpose_axes(a, x.ndim))),
    )
)


def _swap(a, nd):
    d1, d2 = norm_axis(a.dim1, nd, "dim1"), norm_axis(a.dim2, nd, "dim2")
    perm = list(range(nd))
    perm[d1], perm[d2] = perm[d2], perm[d1]
    return perm


register(
    OpDef(
        name="SwapAxis",
        aliases=("swapaxes",),
        params={"dim1": Param(p_int, 0), "dim2": Param(p_int, 0)},
        infer_shape=_unary(lambda a, s: tuple(s[i] for i in _swap(a, len(s)))),
        lower=_lower1(lambda a, x: jnp.transpose(x, _swap(a, x.ndim))),
    )
)


def _expand(a, s):
    ax = norm_axis(a.axis, len(s) + 1)
    return s[:ax] + (1,) + s[ax:]


register(
    OpDef(
        name="expand_dims",
        params={"axis": Param(p_int)},
        infer_shape=_unary(_expand),
        lower=_lower1(lambda a, x: x.reshape(_expand(a, x.shape))),
    )
)


def _squeeze(a, s):
    if a.axis is None:
        out = tuple(d for d in s if d != 1)
    else:
        axes = {norm_axis(x, len(s)) for x in a.axis}
        for ax in axes:
            if s[ax] != 1:
                fail(f"cannot squeeze axis {ax} of shape {s}: its size is {s[ax]}, not 1")
        out = tuple(d for i, d in enumerate(s) if i not in axes)
    return out or (1,)


register(
    OpDef(
        name="squeeze",
        params={"axis": Param(optional(p_shape), None)},
        infer_shape=_unary(_squeeze),
        lower=_lower1(lambda a, x: x.reshape(_squeeze(a, x.shape))),
    )
)


def _reverse_axes(a, nd):
    return tuple(norm_axis(x, nd) for x in a.axis)


register(
    OpDef(
        name="reverse",
        aliases=("flip",),
        params={"axis": Param(p_shape)},
        infer_shape=_unary(lambda a, s: (_reverse_axes(a, len(s)), s)[1]),
        lower=_lower1(lambda a, x: jnp.flip(x, _reverse_axes(a, x.ndim))),
    )
)


# --------------------------------------------------------------- tile/repeat
def _tile_shape(a, s):
    reps = tuple(a.reps)
    nd = max(len(s), len(reps))
    s = (1,) * (nd - len(s)) + tuple(s)
    reps = (1,) * (nd - len(reps)) + reps
    return tuple(d * r for d, r in zip(s, reps))


register(
    OpDef(
        name="tile",
        params={"reps": Param(p_shape)},
        infer_shape=_unary(_tile_shape),
        lower=_lower1(lambda a, x: jnp.tile(x, a.reps)),
    )
)


def _repeat_shape(a, s):
    if a.axis is None:
        return (math.prod(s) * a.repeats,)
    ax = norm_axis(a.axis, len(s))
    return s[:ax] + (s[ax] * a.repeats,) + s[ax + 1 :]


register(
    OpDef(
        name="repeat",
        params={"repeats": Param(p_int), "axis": Param(optional(p_int), None)},
        infer_shape=_unary(_repeat_shape),
        lower=_lower1(lambda a, x: jnp.repeat(x, a.repeats, axis=a.axis)),
    )
)


# ---------------------------------------------------------------- reshape_like
def _reshape_like_shape(a, s, like):
    def span(b, e, n, what):
        b = 0 if b is None else (b + n if b < 0 else b)
        e = n if e is None else (e + n if e < 0 else e)
        if not 0 <= b <= e <= n:
            fail(f"reshape_like: {what} range [{b}, {e}) is invalid for ndim {n}")
        return b, e

    lb, le = span(a.lhs_begin, a.lhs_end, len(s), "lhs")
    rb, re_ = span(a.rhs_begin, a.rhs_end, len(like), "rhs")
    out = tuple(s[:lb]) + tuple(like[rb:re_]) + tuple(s[le:])
    if math.prod(out) != math.prod(s):
        fail(f"reshape_like: cannot reshape lhs {s} to {out} (from rhs {like})")
    return out


register(
    OpDef(
        name="reshape_like",
        inputs=("lhs", "rhs"),
        params={
            k: Param(optional(p_int), None)
            for k in ("lhs_begin", "lhs_end", "rhs_begin", "rhs_end")
        },
        infer_shape=lambda a, s: (s, [None if None in s else _reshape_like_shape(a, s[0], s[1])]),
        infer_type=first_type,
        lower=lambda a, ins, aux, ctx: [
            ins[0].reshape(_reshape_like_shape(a, ins[0].shape, ins[1].shape))
        ],
    )
)


# ----------------------------------------------------------- zero-input inits
def _init_lower(fill, dtype_of=lambda a: np_dtype(a.dtype)):
    def lower(a, ins, aux, ctx):
        shape = tuple(a.shape)
        if not all(shape):
            known = getattr(ctx, "out_shapes", None)
            if not known or not known[0] or not all(known[0]):
                raise ValueError(
                    f"{ctx.node_name!r}: shape {shape} has unknown (0) dims that shape "
                    f"inference did not resolve; give the full shape"
                )
            shape = tuple(known[0])
        return [jnp.full(shape, fill(a), dtype_of(a))]

    return lower


_INIT_PARAMS = {
    "shape": Param(p_shape, ()),
    "ctx": Param(p_str, ""),
    "dtype": Param(p_dtype, "float32"),
}
for _name, _fill, _extra in (
    ("_zeros", lambda a: 0, {}),
    ("_ones", lambda a: 1, {}),
    ("_full", lambda a: a.value, {"value": Param(p_float, REQUIRED)}),
):
    register(
        OpDef(
            name=_name,
            params={**_INIT_PARAMS, **_extra},
            inputs=(),
            infer_shape=lambda a, s: (s, [tuple(a.shape) if all(a.shape) else None]),
            infer_type=lambda a, t: (t, [np_dtype(a.dtype)]),
            lower=_init_lower(_fill),
        )
    )


def _flag_dtype(a):
    """``_zeros_without_dtype``'s dtype: MXNet's type flag, -1 (unset) reading float32."""
    if a.dtype == -1:
        return np.dtype("float32")
    if a.dtype not in FLAG_DTYPES:
        fail(f"_zeros_without_dtype: dtype {a.dtype} is not an MXNet type flag")
    return np_dtype(FLAG_DTYPES[a.dtype])


# Gluon's F.zeros(shape) without a dtype, in exported symbol files
register(
    OpDef(
        name="_zeros_without_dtype",
        params={"shape": Param(p_shape, ()), "ctx": Param(p_str, ""), "dtype": Param(p_int, -1)},
        inputs=(),
        infer_shape=lambda a, s: (s, [tuple(a.shape) if all(a.shape) else None]),
        infer_type=lambda a, t: (t, [_flag_dtype(a)]),
        lower=_init_lower(lambda a: 0, _flag_dtype),
    )
)


# --------------------------------------------------------- shape_array/size
def _int64():
    return jax.dtypes.canonicalize_dtype(np.int64)  # int32 unless x64 is enabled


register(
    OpDef(
        name="shape_array",
        infer_shape=_unary(lambda a, s: (len(s),)),
        infer_type=lambda a, t: (t, [np.dtype(_int64())]),
        lower=_lower1(lambda a, x: jnp.asarray(x.shape, dtype=_int64())),
    )
)
register(
    OpDef(
        name="size_array",
        infer_shape=_unary(lambda a, s: (1,)),
        infer_type=lambda a, t: (t, [np.dtype(_int64())]),
        lower=_lower1(lambda a, x: jnp.asarray([x.size], dtype=_int64())),
    )
)
