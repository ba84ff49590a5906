"""Imperative math operators of ``mx.nd`` (``mx.nd.sum``, ``mx.nd.pick``, ``mx.nd.dot`` ...).

Each function mirrors its MXNet 1.9.1 namesake on NDArrays: results keep the
input's dtype (``mx.nd.log`` of an int32 array is int32), reductions over all
axes return shape ``(1,)`` (MXNet 1.x, not numpy), and shape mistakes raise
:class:`MXNetError` naming the shapes. They run eagerly through ``jax.numpy``
on the first input's device. The symbolic versions of these operators live in
``mxmod.ops``; these are for the NDArray (imperative) code paths.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..base import MXNetError, named
from . import _device
from ._programs import program as _program
from .op_table import nd_function
from .tape import recorded, write_out
from .ndarray import NDArray, _fresh, _put, jax_dtype

__all__ = [
    "sum",
    "mean",
    "max",
    "min",
    "prod",
    "argmax",
    "argmin",
    "norm",
    "pick",
    "one_hot",
    "softmax",
    "log_softmax",
    "where",
    "clip",
    "dot",
    "maximum",
    "minimum",
    "log",
    "exp",
    "sqrt",
    "square",
    "abs",
    "zeros_like",
    "ones_like",
]


def _check(x: Any, op: str, arg: str = "data") -> NDArray:
    if not isinstance(x, NDArray):
        raise TypeError(
            f"{op}: {arg} must be an NDArray, got {type(x)}; wrap it with mx.nd.array()"
        )
    return x


def _like(out: jax.Array, ref: NDArray, keep_dtype: bool = True) -> NDArray:
    if keep_dtype and out.dtype != ref._data.dtype:
        out = out.astype(ref._data.dtype)
    return NDArray(_fresh(out, ref._data), ref._ctx)


def _axes(axis: Any, ndim: int, exclude: bool = False) -> tuple:
    if axis is None or axis == ():
        axes = tuple(range(ndim))
    else:
        axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
        for a in axes:
            if not -ndim <= a < ndim:
                raise MXNetError(f"axis {a} is out of range for an array with {ndim} dimensions")
        axes = tuple(sorted({a % ndim for a in axes}))
    if exclude:
        axes = tuple(a for a in range(ndim) if a not in axes)
    return axes


def _reduce(fn, op: str, data: NDArray, axis: Any, keepdims: bool, exclude: bool) -> NDArray:
    _check(data, op)
    axes = _axes(axis, data.ndim, exclude)
    static = (("fn", fn), ("axis", axes), ("keepdims", keepdims), ("dtype", data._data.dtype))
    return NDArray(_program(_reduced, static)(data._data), data._ctx)


def _reduced(x, fn, axis, keepdims, dtype, **more):
    """``fn`` over ``axis``, in ``dtype``, a full reduction as shape ``(1,)`` (MXNet's)."""
    out = fn(x, axis=axis, keepdims=keepdims, **more).astype(dtype)
    return out.reshape(1) if out.ndim == 0 else out


def sum(data: NDArray, axis: Any = None, keepdims: bool = False, exclude: bool = False) -> NDArray:
    """Sum over ``axis`` (all axes if None/()); ``exclude=True`` reduces the other axes."""
    return _reduce(jnp.sum, "sum", data, axis, keepdims, exclude)


def mean(data: NDArray, axis: Any = None, keepdims: bool = False, exclude: bool = False) -> NDArray:
    """Mean over ``axis``; integer inputs give integer (truncated) results, as MXNet."""
    return _reduce(jnp.mean, "mean", data, axis, keepdims, exclude)


def max(data: NDArray, axis: Any = None, keepdims: bool = False, exclude: bool = False) -> NDArray:
    """Maximum over ``axis``."""
    return _reduce(jnp.max, "max", data, axis, keepdims, exclude)


def min(data: NDArray, axis: Any = None, keepdims: bool = False, exclude: bool = False) -> NDArray:
    """Minimum over ``axis``."""
    return _reduce(jnp.min, "min", data, axis, keepdims, exclude)


def prod(data: NDArray, axis: Any = None, keepdims: bool = False, exclude: bool = False) -> NDArray:
    """Product over ``axis``."""
    return _reduce(jnp.prod, "prod", data, axis, keepdims, exclude)


def _arg(fn, op: str, data: NDArray, axis: Any, keepdims: bool) -> NDArray:
    _check(data, op)
    if axis is None:
        out = fn(data._data.reshape(-1)).reshape(1)
        return _like(out.reshape((1,) * data.ndim) if keepdims else out, data)
    ax = _axes(axis, data.ndim)[0]
    static = (("fn", fn), ("axis", ax), ("keepdims", keepdims), ("dtype", data._data.dtype))
    return NDArray(_program(_reduced, static)(data._data), data._ctx)


def argmax(data: NDArray, axis: int | None = None, keepdims: bool = False) -> NDArray:
    """Indices of the maxima, in the input's dtype (MXNet returns e.g. float32 indices)."""
    return _arg(jnp.argmax, "argmax", data, axis, keepdims)


def argmin(data: NDArray, axis: int | None = None, keepdims: bool = False) -> NDArray:
    """Indices of the minima, in the input's dtype."""
    return _arg(jnp.argmin, "argmin", data, axis, keepdims)


def norm(
    data: NDArray, ord: int = 2, axis: Any = None, out_dtype: Any = None, keepdims: bool = False
) -> NDArray:
    """L1 or L2 norm over ``axis`` (all elements when None), shape ``(1,)`` for a full norm.

    Raises:
        MXNetError: for ``ord`` other than 1 or 2.
    """
    _check(data, "norm")
    if ord not in (1, 2):
        raise MXNetError(f"norm only supports ord=1 and ord=2, got ord={ord}")
    axes = _axes(axis, data.ndim)
    dtype = data._data.dtype if out_dtype is None else jax_dtype(out_dtype)
    static = (("fn", _norm), ("axis", axes), ("keepdims", keepdims), ("dtype", dtype))
    return NDArray(_program(_reduced, static + (("ord", ord),))(data._data), data._ctx)


def _norm(x, axis, keepdims, ord):
    x = x.astype(jnp.float32) if x.dtype == jnp.float16 else x
    if ord == 1:
        return jnp.sum(jnp.abs(x), axis=axis, keepdims=keepdims)
    return jnp.sqrt(jnp.sum(jnp.square(x), axis=axis, keepdims=keepdims))


def pick(
    data: NDArray, index: NDArray, axis: int = -1, keepdims: bool = False, mode: str = "clip"
) -> NDArray:
    """Pick one element per position along ``axis`` (``mx.nd.pick``); ``mode`` 'clip' or 'wrap'.

    Raises:
        MXNetError: if ``index`` does not have ``data``'s shape without ``axis``.
    """
    _check(data, "pick")
    _check(index, "pick", "index")
    if mode not in ("clip", "wrap"):
        raise ValueError(f"pick: mode must be 'clip' or 'wrap', got {mode!r}")
    ax = _axes(axis, data.ndim)[0]
    want = data.shape[:ax] + data.shape[ax + 1 :]
    want_k = data.shape[:ax] + (1,) + data.shape[ax + 1 :]
    if index.shape not in (want, want_k):
        raise MXNetError(
            f"pick: index shape {index.shape} does not match data shape {data.shape} without "
            f"axis {ax}; expected {want}"
        )
    idx = _put(index._data, index._ctx, data._ctx)
    static = (("axis", ax), ("keepdims", bool(keepdims)), ("mode", mode))
    return NDArray(_program(_pick, static)(data._data, idx), data._ctx)


def _pick(x, idx, *, axis, keepdims, mode):
    n = x.shape[axis]
    idx = idx.astype(jnp.int32).reshape(x.shape[:axis] + x.shape[axis + 1 :])
    idx = jnp.clip(idx, 0, n - 1) if mode == "clip" else jnp.mod(idx, n)
    out = jnp.take_along_axis(x, jnp.expand_dims(idx, axis), axis=axis)
    return (out if keepdims else jnp.squeeze(out, axis)).astype(x.dtype)


def one_hot(
    indices: NDArray,
    depth: int,
    on_value: float = 1.0,
    off_value: float = 0.0,
    dtype: Any = "float32",
) -> NDArray:
    """One-hot encode ``indices`` into a new last axis of size ``depth``."""
    _check(indices, "one_hot", "indices")
    dt = jax_dtype(dtype)
    on, off = scalar(on_value, dt), scalar(off_value, dt)
    program = _program(_one_hot, (("depth", int(depth)),))
    return NDArray(program(indices._data, on, off), indices._ctx)


def _one_hot(indices, on, off, *, depth):
    hot = indices.astype(jnp.int32)[..., None] == jnp.arange(depth, dtype=jnp.int32)
    return jnp.where(hot, on, off)


def _softmax_args(data: NDArray, op: str, temperature: Any):
    _check(data, op)
    if not jnp.issubdtype(data._data.dtype, jnp.floating):
        raise MXNetError(
            f"{op}: This operation only support floating point types, not "
            f"{np.dtype(data.dtype).name}; cast with .astype('float32')"
        )
    x = data._data
    return x / temperature if temperature not in (None, 1.0) else x


def _softmax_op(fn, name: str, doc: str):
    def op(
        data: NDArray,
        axis: int = -1,
        temperature: float | None = None,
        dtype: Any = None,
        use_length: bool = False,
    ) -> NDArray:
        if use_length:
            raise MXNetError(
                f"{name}: use_length=True needs a length input, which only softmax takes (as "
                "in MXNet); mask the data before the operator instead"
            )
        x = _softmax_args(data, name, temperature)
        out = NDArray(_program(fn, (("axis", axis),))(x), data._ctx)
        return out.astype(dtype) if dtype is not None else out

    return named(op, name, doc)


_softmax_by_length = nd_function("softmax")  # the operator's own lowering


def softmax(
    data: NDArray,
    length: Any = None,
    axis: int = -1,
    temperature: float | None = None,
    dtype: Any = None,
    use_length: bool = False,
) -> NDArray:
    """Softmax along ``axis`` with optional ``temperature``; with ``use_length=True`` each
    row counts only its first ``length`` entries (an integer array with one value per row;
    the rest of the row is 0). MXNet's argument order: ``length`` comes second."""
    if isinstance(length, int) and not isinstance(length, bool) and axis == -1:
        length, axis = None, length  # softmax(x, 1): the axis, as mxmod always took it
    if not use_length:
        if length is not None:
            raise MXNetError("softmax: a length input needs use_length=True")
        return _plain_softmax(data, axis, temperature, dtype)
    _check(data, "softmax")
    if not isinstance(length, NDArray):
        raise MXNetError(
            f"softmax: use_length=True needs the length input as an NDArray, got "
            f"{type(length).__name__}"
        )
    if not np.issubdtype(np.dtype(length.dtype), np.integer):
        raise MXNetError(
            f"softmax: the length input must have an integer dtype (MXNet's rule), got "
            f"{np.dtype(length.dtype).name}; cast it, e.g. length.astype('int32')"
        )
    given = {"temperature": temperature, "dtype": dtype}
    attrs = {k: v for k, v in given.items() if v is not None}
    return _softmax_by_length(data, length, axis=axis, use_length=True, **attrs)


_plain_softmax = _softmax_op(jax.nn.softmax, "softmax", softmax.__doc__)
log_softmax = _softmax_op(jax.nn.log_softmax, "log_softmax", "Log-softmax along ``axis``.")


def where(condition: NDArray, x: NDArray, y: NDArray) -> NDArray:
    """``x`` where ``condition`` is non-zero else ``y``; a 1-D condition selects rows.

    Raises:
        MXNetError: for mismatched shapes.
    """
    for name, v in (("condition", condition), ("x", x), ("y", y)):
        _check(v, "where", name)
    if x.shape != y.shape:
        raise MXNetError(f"where: x shape {x.shape} and y shape {y.shape} must be equal")
    cond = _put(condition._data, condition._ctx, x._ctx)
    rows = cond.ndim == 1 and x.ndim >= 1 and cond.shape[0] == x.shape[0]
    if cond.shape != x.shape and not rows:
        raise MXNetError(
            f"where: condition shape {condition.shape} must equal x shape {x.shape} or be "
            f"({x.shape[0] if x.ndim else 1},)"
        )
    y_data = _put(y._data, y._ctx, x._ctx)
    return NDArray(_fresh(_program(_select, ())(cond, x._data, y_data), x._data), x._ctx)


def _select(cond, x, y):
    """``where``'s one program: a 1-D condition picks rows; the result has ``x``'s dtype."""
    cond = cond.reshape(cond.shape + (1,) * (x.ndim - cond.ndim))
    return jnp.where(cond != 0, x, y).astype(x.dtype)


def clip(data: NDArray, a_min: float, a_max: float) -> NDArray:
    """Clip values into ``[a_min, a_max]``."""
    _check(data, "clip")
    if data.stype != "default":  # MXNet's sparse kernel (mx.nd.sparse)
        return data._sparse_unary("clip", a_min, a_max)
    dt = data._data.dtype
    lo, hi = scalar(a_min, dt), scalar(a_max, dt)
    return NDArray(_program(jnp.clip, ())(data._data, lo, hi), data._ctx)


def dot(
    lhs: NDArray, rhs: NDArray, transpose_a: bool = False, transpose_b: bool = False
) -> NDArray:
    """Matrix product; N-d inputs contract the last axis of ``lhs`` with the first of ``rhs``.

    Raises:
        MXNetError: for incompatible shapes or mismatched dtypes.
        NotImplementedError: for ``transpose_a/transpose_b`` with inputs above 2-D.
    """
    _check(lhs, "dot", "lhs")
    _check(rhs, "dot", "rhs")
    sparse = lhs if lhs.stype != "default" else rhs
    if sparse.stype != "default":  # MXNet's sparse dot (mx.nd.sparse.dot)
        return sparse._sparse_unary("dot", lhs, rhs, transpose_a, transpose_b)
    if lhs._data.dtype != rhs._data.dtype:
        raise MXNetError(
            f"dot: lhs dtype {lhs._data.dtype} differs from rhs dtype {rhs._data.dtype}; "
            f"cast one with .astype()"
        )
    a, b = lhs._data, _put(rhs._data, rhs._ctx, lhs._ctx)
    if (transpose_a and a.ndim > 2) or (transpose_b and b.ndim > 2):
        raise NotImplementedError("dot: transpose_a/transpose_b on inputs above 2-D")
    a = a.T if transpose_a else a
    b = b.T if transpose_b else b
    ka = a.shape[-1] if a.ndim else 1
    kb = b.shape[0] if b.ndim else 1
    if ka != kb:
        raise MXNetError(f"dot shape error: {tuple(a.shape)} X {tuple(b.shape)}")
    out = jnp.tensordot(a, b, axes=1)
    return _like(out.reshape(1) if out.ndim == 0 else out, lhs)


def binary(lhs: NDArray, rhs: NDArray, fn, op: str) -> NDArray:
    """Apply ``fn`` to two NDArrays with MXNet's dtype/shape/context checks."""
    if lhs._data.dtype != rhs._data.dtype:
        raise MXNetError(
            f"{op}: operand dtypes differ ({np.dtype(lhs.dtype).name} vs "
            f"{np.dtype(rhs.dtype).name}); cast one side with .astype('{np.dtype(lhs.dtype).name}')"
        )
    try:
        np.broadcast_shapes(lhs.shape, rhs.shape)
    except ValueError:
        raise MXNetError(
            f"{op}: operands could not be broadcast together with shapes {lhs.shape} {rhs.shape}"
        ) from None
    out = elementwise(fn, lhs._data, _put(rhs._data, rhs._ctx, lhs._ctx), lhs._data.dtype)
    return NDArray(out, lhs._ctx)


def scalar(x: Any, dtype) -> jax.Array:
    """``x`` as a 0-d array of ``dtype`` (MXNet casts a scalar operand to the array's
    dtype first): an argument of a program, never a constant compiled into it."""
    if isinstance(x, jax.Array):  # a 0-d jax value (e.g. a traced learning rate)
        return x.astype(dtype)
    if isinstance(x, (bool, np.bool_)):
        x = int(x)
    return jnp.asarray(np.asarray(x).astype(dtype))


def _in_dtype(a, b, *, fn, dtype: str):
    return fn(a, b).astype(dtype)


def elementwise(fn, a: jax.Array, b: jax.Array, dtype) -> jax.Array:
    """``fn(a, b)`` cast to ``dtype``, one program per (``fn``, shapes, dtypes), not one
    per JAX primitive (and a quick build first: ``program_tiers``)."""
    return _program(_in_dtype, (("fn", fn), ("dtype", np.dtype(dtype).name)))(a, b)


def binary_fn(fn, op: str, lhs: Any, rhs: Any) -> NDArray:
    """``fn`` on NDArrays and/or scalars (a scalar takes the NDArray's dtype)."""
    if isinstance(lhs, NDArray) and isinstance(rhs, NDArray):
        return binary(lhs, rhs, fn, op)
    if isinstance(lhs, NDArray):
        out = elementwise(fn, lhs._data, scalar(rhs, lhs._data.dtype), lhs._data.dtype)
        return NDArray(_fresh(out, lhs._data), lhs._ctx)
    if isinstance(rhs, NDArray):
        dtype = rhs._data.dtype
        out = elementwise(fn, scalar(lhs, dtype), rhs._data, dtype)
        return NDArray(_fresh(out, rhs._data), rhs._ctx)
    return fn(lhs, rhs)


def maximum(lhs: Any, rhs: Any) -> NDArray:
    """Element-wise maximum; either side may be a scalar."""
    return binary_fn(jnp.maximum, "maximum", lhs, rhs)


def minimum(lhs: Any, rhs: Any) -> NDArray:
    """Element-wise minimum; either side may be a scalar."""
    return binary_fn(jnp.minimum, "minimum", lhs, rhs)


def _unary(fn, op: str):
    def f(data: NDArray) -> NDArray:
        if _check(data, op).stype != "default":  # MXNet's sparse kernel or dense fallback
            res = data._sparse_unary(op)
            if res is not NotImplemented:
                return res
        return _like(_program(fn, ())(data._data), data)

    return named(f, op, f"Element-wise ``{op}`` (``mx.nd.{op}``); keeps the input dtype.")


log = _unary(jnp.log, "log")
exp = _unary(jnp.exp, "exp")
sqrt = _unary(jnp.sqrt, "sqrt")
square = _unary(jnp.square, "square")
abs = _unary(jnp.abs, "abs")


def zeros_like(data: NDArray, ctx: Any = None, dtype: Any = None) -> NDArray:
    """Zeros with ``data``'s shape, dtype and context. ``ctx`` and ``dtype`` are accepted as
    MXNet's operator accepts them: its output keeps ``data``'s context and dtype whatever
    they say."""
    if _check(data, "zeros_like").stype != "default":  # keeps the storage type (MXNet)
        return data._sparse_unary("zeros_like")
    return NDArray(_device.zeros_like(data._data), data._ctx)


def ones_like(data: NDArray, ctx: Any = None, dtype: Any = None) -> NDArray:
    """Ones with ``data``'s shape, dtype and context (``ctx``/``dtype``: as ``zeros_like``)."""
    return NDArray(_device.filled_like(_check(data, "ones_like")._data, 1), data._ctx)


def _takes_out(fn):
    """MXNet's ``out=``/``name=`` keywords on an imperative operator: the result is written
    into ``out`` (a view writes through to its parent array) and ``out`` is returned."""

    run = recorded(fn)  # on autograd's tape inside record()

    @functools.wraps(fn)
    def call(*args: Any, out: NDArray | None = None, name: Any = None, **kwargs: Any):
        res = run(*args, **kwargs)
        if out is None:
            return res
        if not isinstance(out, NDArray):
            raise TypeError(f"{fn.__name__}: out must be an NDArray, got {type(out).__name__}")
        if tuple(out.shape) != tuple(res.shape):
            raise MXNetError(
                f"{fn.__name__}: out has shape {tuple(out.shape)} but the result has shape "
                f"{tuple(res.shape)}"
            )
        if res._tape is not None:  # inside record(): out takes the result's place
            return write_out(out, res)
        out._set_data(res._data.astype(out._data.dtype))
        return out

    call._on_tape = True
    return call


for _name in __all__:
    globals()[_name] = _takes_out(globals()[_name])
