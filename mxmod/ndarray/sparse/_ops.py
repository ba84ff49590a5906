"""MXNet 1.9.1's imperative sparse operators on CSRNDArray / RowSparseNDArray.

Each operator returns the storage type MXNet 1.9.1 gives (recorded in
tests/fixtures/sparse_ops): ``dot`` (csr x dense -> dense, csr.T x dense -> row_sparse,
dense x csr -> csr, other mixes computed densely as MXNet's fallback does),
``_square_sum`` on row_sparse, the elementwise ``add``/``subtract``/``multiply``/``divide``
(and ``elemwise_*``, ``+ - * /``) and the unary operators that map zero to zero (their
output keeps the input's storage). Sparse parts are combined with gathers and
``jax.ops.segment_sum``; the index sets (which decide the output sizes) are merged on the
host.
"""

from __future__ import annotations

import numbers
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ...base import MXNetError
from ...ops.elemwise import _UNARY
from ..ndarray import NDArray
from ._base import BaseSparseNDArray
from ._csr import CSRNDArray
from ._row_sparse import RowSparseNDArray


def _stype(x: Any) -> str:
    return getattr(x, "stype", type(x).__name__)


def _values(x: NDArray) -> jax.Array:
    """Dense values of any NDArray (a sparse one is converted)."""
    return x._densify() if isinstance(x, BaseSparseNDArray) else x._data


def _csr_rows(a: CSRNDArray) -> jax.Array:
    indptr, indices = a._saux
    return jnp.repeat(
        jnp.arange(a.shape[0]), jnp.diff(indptr), total_repeat_length=int(indices.shape[0])
    )


def _dense_out(values: jax.Array, like: NDArray) -> NDArray:
    return NDArray(values, like._ctx)


def _csr_from_dense(values: jax.Array, like: NDArray) -> CSRNDArray:
    return CSRNDArray._from_dense(np.asarray(values), like._ctx)


def _check_2d(op: str, *arrays: NDArray) -> None:
    for x in arrays:
        if not isinstance(x, NDArray):
            raise TypeError(f"{op} needs NDArrays, got a {type(x).__name__}")
        if isinstance(x, BaseSparseNDArray) and len(x.shape) != 2:
            raise NotImplementedError(f"{op} on a {len(x.shape)}-D {x.stype} array")


# ------------------------------------------------------------------ dot
def dot(
    lhs: NDArray,
    rhs: NDArray,
    transpose_a: bool = False,
    transpose_b: bool = False,
    forward_stype: Any = None,
) -> NDArray:
    """MXNet's ``sparse.dot``: the output storage follows MXNet 1.9.1 (see module doc)."""
    if forward_stype is not None:
        raise NotImplementedError("sparse.dot(forward_stype=...) is not supported by mxmod")
    _check_2d("sparse.dot", lhs, rhs)
    ls, rs = _stype(lhs), _stype(rhs)
    if (ls != "default" and len(rhs.shape) != 2) or (rs != "default" and len(lhs.shape) != 2):
        raise MXNetError(
            f"sparse dot only supports 2 dimensional rhs and lhs: got lhs {lhs.shape} ({ls}) "
            f"and rhs {rhs.shape} ({rs})"
        )
    m_l = lhs.shape[::-1] if transpose_a else lhs.shape
    m_r = rhs.shape[::-1] if transpose_b else rhs.shape
    if len(m_l) != 2 or len(m_r) != 2 or m_l[1] != m_r[0]:
        raise MXNetError(
            f"dot: shape mismatch: lhs {lhs.shape} ({ls}, transpose_a={transpose_a}) and rhs "
            f"{rhs.shape} ({rs}, transpose_b={transpose_b}) do not share an inner dimension"
        )
    if ls == "csr" and rs in ("default", "row_sparse") and not (transpose_a and transpose_b):
        right = _values(rhs)
        right = right.T if transpose_b else right
        rows, (_, cols) = _csr_rows(lhs), lhs._saux
        if not transpose_a:  # out[r] += v * right[c]
            prod = lhs._sdata[:, None] * right[cols]
            return _dense_out(jax.ops.segment_sum(prod, rows, lhs.shape[0]), lhs)
        # csr.T: out[c] += v * right[r], stored on the columns the csr uses (row_sparse)
        prod = lhs._sdata[:, None] * right[rows]
        full = jax.ops.segment_sum(prod, cols, lhs.shape[1])
        used = np.unique(np.asarray(cols))
        out_shape = (lhs.shape[1], right.shape[1])
        return RowSparseNDArray._from_parts(out_shape, full[used], [used], lhs._ctx)
    if ls == "default" and rs == "csr" and not transpose_a:
        left = lhs._data
        rows, (_, cols) = _csr_rows(rhs), rhs._saux
        if not transpose_b:  # out[:, c] += left[:, r] * v
            cols_out = jax.ops.segment_sum(rhs._sdata[:, None] * left.T[rows], cols, rhs.shape[1])
        else:  # out[:, r] += left[:, c] * v
            cols_out = jax.ops.segment_sum(rhs._sdata[:, None] * left.T[cols], rows, rhs.shape[0])
        return _csr_from_dense(cols_out.T, lhs)
    if ls == "row_sparse" and rs == "default":
        right = rhs._data.T if transpose_b else rhs._data
        (idx,) = lhs._saux
        if transpose_a:
            return _dense_out(lhs._sdata.T @ right[idx], lhs)
        out = jnp.zeros((lhs.shape[0], right.shape[1]), lhs._sdata.dtype)
        return _dense_out(out.at[idx].set(lhs._sdata @ right), lhs)
    # MXNet's storage fallback: both operands dense, a dense result
    left, right = _values(lhs), _values(rhs)
    left = left.T if transpose_a else left
    right = right.T if transpose_b else right
    return _dense_out(jnp.dot(left, right), lhs if isinstance(lhs, NDArray) else rhs)


# ------------------------------------------------------------------ _square_sum
def square_sum(data: NDArray, axis: Any = None, keepdims: bool = False, exclude: bool = False):
    """MXNet's ``_square_sum`` (sum of squares) of a 2-D row_sparse array along ``axis`` 0
    or 1: dense, except ``axis=1, keepdims=True`` which is row_sparse on the stored rows."""
    if not isinstance(data, RowSparseNDArray):
        raise MXNetError(
            f"Operator not implemented: operator = _square_sum for input storage type "
            f"{_stype(data)!r} (MXNet 1.9.1 takes only row_sparse); use "
            f"mx.nd.sum(mx.nd.square(x), axis=...) on a dense array"
        )
    if exclude:
        raise NotImplementedError("_square_sum(exclude=True) is not supported by mxmod")
    axis = axis[0] if isinstance(axis, (tuple, list)) and len(axis) == 1 else axis
    if len(data.shape) != 2 or axis not in (0, 1, -1, -2):
        raise NotImplementedError(
            f"_square_sum on row_sparse: axis={axis!r} on shape {data.shape}; MXNet supports "
            f"axis 0 or 1 of a 2-D array"
        )
    axis %= 2
    squares = data._sdata * data._sdata
    (idx,) = data._saux
    if axis == 0:
        total = squares.sum(axis=0)
        return _dense_out(total[None] if keepdims else total, data)
    per_row = squares.sum(axis=1)
    if keepdims:
        shape = (data.shape[0], 1)
        return RowSparseNDArray._from_parts(shape, per_row[:, None], [idx], data._ctx)
    full = jnp.zeros(data.shape[0], per_row.dtype).at[idx].set(per_row)
    return _dense_out(full, data)


# ------------------------------------------------------------------ elementwise binary
def _keys(a: BaseSparseNDArray) -> np.ndarray:
    """Host positions of the stored entries: row ids (row_sparse) or row*ncol+col (csr)."""
    if isinstance(a, CSRNDArray):
        return np.asarray(_csr_rows(a)).astype(np.int64) * a.shape[1] + np.asarray(a._saux[1])
    return np.asarray(a._saux[0]).astype(np.int64)


def _on_union(a: BaseSparseNDArray, b: BaseSparseNDArray, fn: Any) -> BaseSparseNDArray:
    """``fn`` of the two arrays' values over the union of their stored positions."""
    ka, kb = _keys(a), _keys(b)
    union = np.union1d(ka, kb)
    shape = (len(union),) + tuple(a._sdata.shape[1:])
    dtype = a._sdata.dtype
    va = jnp.zeros(shape, dtype).at[np.searchsorted(union, ka)].set(a._sdata)
    vb = jnp.zeros(shape, dtype).at[np.searchsorted(union, kb)].set(b._sdata.astype(dtype))
    values = fn(va, vb).astype(dtype)
    if isinstance(a, RowSparseNDArray):
        return RowSparseNDArray._from_parts(a.shape, values, [union], a._ctx)
    rows, cols = union // a.shape[1], union % a.shape[1]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=a.shape[0]))])
    return CSRNDArray._from_parts(a.shape, values, [indptr, cols], a._ctx)


def _scale_stored(sp: BaseSparseNDArray, dense: jax.Array) -> BaseSparseNDArray:
    """``sp * dense`` on ``sp``'s stored entries only (the storage of ``sp`` is kept)."""
    if isinstance(sp, CSRNDArray):
        factor = dense[_csr_rows(sp), sp._saux[1]]
    else:
        factor = dense[sp._saux[0]]
    return sp._like((sp._sdata * factor).astype(sp._sdata.dtype), sp._saux, sp._ctx)


def _add_stored(dense: jax.Array, sp: BaseSparseNDArray, sign: int) -> jax.Array:
    """``dense + sign * sp`` without densifying ``sp``."""
    if isinstance(sp, CSRNDArray):
        return dense.at[_csr_rows(sp), sp._saux[1]].add(sign * sp._sdata)
    return dense.at[sp._saux[0]].add(sign * sp._sdata)


_BINARY = {"add": jnp.add, "sub": jnp.subtract, "mul": jnp.multiply, "div": jnp.divide}


def _check_broadcast(op: str, lhs: NDArray, rhs: NDArray) -> None:
    try:
        np.broadcast_shapes(lhs.shape, rhs.shape)
    except ValueError:
        raise MXNetError(
            f"{op}: operands could not be broadcast together with shapes {lhs.shape} {rhs.shape}"
        ) from None


def _binary(kind: str, op: str, lhs: Any, rhs: Any) -> NDArray:
    if not isinstance(lhs, NDArray) or not isinstance(rhs, NDArray):
        raise TypeError(
            f"{op} needs two NDArrays, got {type(lhs).__name__} and {type(rhs).__name__}"
        )
    if lhs.shape != rhs.shape and op.startswith("elemwise_"):
        raise NotImplementedError(
            f"{op} of a {_stype(lhs)} array {lhs.shape} and a {_stype(rhs)} array {rhs.shape}: "
            f"elemwise operators need arrays of one shape; use the broadcasting operator"
        )
    if lhs.shape != rhs.shape:  # broadcast_<op>
        _check_broadcast(op, lhs, rhs)
        if kind == "mul" and _stype(lhs) == "csr" and _stype(rhs) == "default":
            if np.broadcast_shapes(lhs.shape, rhs.shape) == lhs.shape:  # csr kernel
                return _scale_stored(lhs, jnp.broadcast_to(rhs._data, lhs.shape))
        # MXNet's storage fallback: dense
        return _dense_out(_BINARY[kind](_values(lhs), _values(rhs)).astype(lhs.dtype), lhs)
    ls, rs = _stype(lhs), _stype(rhs)
    if ls == rs != "default" and kind != "div":
        return _on_union(lhs, rhs, _BINARY[kind])
    if kind == "mul" and {ls, rs} in ({"csr", "default"}, {"row_sparse", "default"}):
        sp, dense = (lhs, rhs) if ls != "default" else (rhs, lhs)
        return _scale_stored(sp, dense._data)
    if kind in ("add", "sub") and "default" in (ls, rs):
        if ls == "default":
            return _dense_out(_add_stored(lhs._data, rhs, -1 if kind == "sub" else 1), lhs)
        base = -rhs._data if kind == "sub" else rhs._data
        return _dense_out(_add_stored(base, lhs, 1), lhs)
    # MXNet's storage fallback (csr with row_sparse, any division): a dense result
    return _dense_out(_BINARY[kind](_values(lhs), _values(rhs)), lhs)


def elemwise_add(lhs: NDArray, rhs: NDArray) -> NDArray:
    """``lhs + rhs``: same sparse stype -> that stype, with dense -> dense."""
    return _binary("add", "elemwise_add", lhs, rhs)


def elemwise_sub(lhs: NDArray, rhs: NDArray) -> NDArray:
    """``lhs - rhs``: same sparse stype -> that stype, with dense -> dense."""
    return _binary("sub", "elemwise_sub", lhs, rhs)


def elemwise_mul(lhs: NDArray, rhs: NDArray) -> NDArray:
    """``lhs * rhs``: same sparse stype, or sparse with dense -> the sparse stype."""
    return _binary("mul", "elemwise_mul", lhs, rhs)


def elemwise_div(lhs: NDArray, rhs: NDArray) -> NDArray:
    """``lhs / rhs``: always dense (MXNet falls back to dense storage)."""
    return _binary("div", "elemwise_div", lhs, rhs)


def add(lhs: NDArray, rhs: NDArray) -> NDArray:
    """MXNet's ``sparse.add`` for arrays of one shape (= ``elemwise_add``)."""
    return _binary("add", "sparse.add", lhs, rhs)


def subtract(lhs: NDArray, rhs: NDArray) -> NDArray:
    """MXNet's ``sparse.subtract`` for arrays of one shape (= ``elemwise_sub``)."""
    return _binary("sub", "sparse.subtract", lhs, rhs)


def multiply(lhs: NDArray, rhs: NDArray) -> NDArray:
    """MXNet's ``sparse.multiply`` for arrays of one shape (= ``elemwise_mul``)."""
    return _binary("mul", "sparse.multiply", lhs, rhs)


def divide(lhs: NDArray, rhs: NDArray) -> NDArray:
    """MXNet's ``sparse.divide`` for arrays of one shape (= ``elemwise_div``)."""
    return _binary("div", "sparse.divide", lhs, rhs)


# ------------------------------------------------------------------ operators on the class
_DENSE_FALLBACK = {
    "pow": jnp.power, "mod": jnp.remainder, "eq": jnp.equal, "ne": jnp.not_equal,
    "lt": jnp.less, "le": jnp.less_equal, "gt": jnp.greater, "ge": jnp.greater_equal,
}  # fmt: skip
_COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")


def _is_number(x: Any) -> bool:
    return isinstance(x, numbers.Number) and not isinstance(x, bool)


def _fallback(fn: Any, self: BaseSparseNDArray, other: Any, reverse: bool) -> NDArray:
    """MXNet's storage fallback: ``fn`` on dense copies, a dense result in ``self``'s dtype."""
    mine = self._densify()
    theirs = other._data if isinstance(other, NDArray) else np.asarray(other).astype(self.dtype)
    out = fn(theirs, mine) if reverse else fn(mine, theirs)
    return _dense_out(out.astype(self._sdata.dtype), self)


def _operator(kind: str, op: str, reverse: bool = False):
    """``self <op> other`` (``other <op> self`` when ``reverse``) with MXNet's storage:
    sparse (op) sparse and sparse * dense / scalar keep sparse storage (see ``_binary``);
    a dense left operand, a scalar added or any other operator give dense storage (MXNet's
    fallback); a comparison with a scalar keeps storage where it maps 0 to 0 (``rsp > 0``)."""
    fn = _BINARY.get(kind) or _DENSE_FALLBACK[kind]

    def method(self: BaseSparseNDArray, other: Any) -> NDArray:
        if _is_number(other):
            if kind in ("mul", "div") and not (reverse and kind == "div"):
                return self._scaled(other, "*" if kind == "mul" else "/")
            if kind in _COMPARE and not bool(fn(self.dtype(0), self.dtype(other))):
                values = fn(self._sdata, np.asarray(other).astype(self.dtype))
                return self._like(values.astype(self._sdata.dtype), self._saux, self._ctx)
            return _fallback(fn, self, other, reverse)
        if not isinstance(other, NDArray):
            if kind in ("eq", "ne"):
                return kind == "ne"
            raise NotImplementedError(
                f"{op} of a {type(self).__name__} with a {type(other).__name__}: use an "
                f"NDArray or a Python scalar"
            )
        if reverse or kind in _DENSE_FALLBACK:  # a dense left operand: dense (MXNet)
            _check_broadcast(op, self, other)
            return _fallback(fn, self, other, reverse)
        if kind == "div" and self.stype == "csr" and other.stype == "default":
            raise MXNetError(
                "Please use elemwise_div for division between csr and dense of the same "
                "shape (MXNet's broadcast_div does not take them)"
            )
        return _binary(kind, op, self, other)

    method.__name__ = op
    return method


def _inplace(kind: str, op: str):
    """``self <op>= other``: computed as the operator, stored back in ``self``'s storage
    (MXNet writes a dense result back through a cast)."""
    compute = _operator(kind, op)

    def method(self: BaseSparseNDArray, other: Any) -> BaseSparseNDArray:
        out = compute(self, other)
        if out.stype == self.stype:
            self._set_parts(out.shape, out._sdata, out._saux)
        else:
            self._set_data(out._data)
        return self

    method.__name__ = op
    return method


OPERATORS = {
    "__add__": _operator("add", "__add__"),
    "__radd__": _operator("add", "__radd__", reverse=True),
    "__sub__": _operator("sub", "__sub__"),
    "__rsub__": _operator("sub", "__rsub__", reverse=True),
    "__mul__": _operator("mul", "__mul__"),
    "__rmul__": _operator("mul", "__rmul__", reverse=True),
    "__truediv__": _operator("div", "__truediv__"),
    "__rtruediv__": _operator("div", "__rtruediv__", reverse=True),
    "__pow__": _operator("pow", "__pow__"),
    "__rpow__": _operator("pow", "__rpow__", reverse=True),
    "__mod__": _operator("mod", "__mod__"),
    "__rmod__": _operator("mod", "__rmod__", reverse=True),
    "__iadd__": _inplace("add", "__iadd__"),
    "__isub__": _inplace("sub", "__isub__"),
    "__imul__": _inplace("mul", "__imul__"),
    "__itruediv__": _inplace("div", "__itruediv__"),
    **{f"__{k}__": _operator(k, f"__{k}__") for k in _COMPARE},
}


# ------------------------------------------------------------------ unary
def _round_half_away(x: jax.Array) -> jax.Array:
    return jnp.sign(x) * jnp.floor(jnp.abs(x) + 0.5)


# operators that map 0 to 0: MXNet keeps csr / row_sparse storage (values of stored entries)
ZERO_KEEPING = {
    "abs": jnp.abs, "sign": jnp.sign, "sqrt": jnp.sqrt, "square": jnp.square,
    "relu": lambda x: jnp.maximum(x, 0), "negative": jnp.negative, "ceil": jnp.ceil,
    "floor": jnp.floor, "round": _round_half_away, "rint": jnp.rint, "fix": jnp.trunc,
    "trunc": jnp.trunc, "sin": jnp.sin, "sinh": jnp.sinh, "tan": jnp.tan, "tanh": jnp.tanh,
    "arcsin": jnp.arcsin, "arcsinh": jnp.arcsinh, "arctan": jnp.arctan,
    "arctanh": jnp.arctanh, "log1p": jnp.log1p, "expm1": jnp.expm1,
    "degrees": jnp.degrees, "radians": jnp.radians, "cbrt": jnp.cbrt,
    "stop_gradient": jax.lax.stop_gradient,
    # the straight-through estimators: their forward is round / sign
    "_contrib_round_ste": _round_half_away, "_contrib_sign_ste": jnp.sign,
}  # fmt: skip
# operators that do not: MXNet falls back to dense storage and returns a dense array
DENSE_RESULT = {
    "exp": jnp.exp, "cos": jnp.cos, "cosh": jnp.cosh, "log": jnp.log,
    "rsqrt": jax.lax.rsqrt, "sigmoid": jax.nn.sigmoid, "log2": jnp.log2,
    "log10": jnp.log10, "gamma": _UNARY["gamma"], "gammaln": _UNARY["gammaln"],
}  # fmt: skip


def unary(name: str):
    """MXNet's ``sparse.<name>`` for one array (dense input: a dense result)."""
    fn = ZERO_KEEPING.get(name) or DENSE_RESULT[name]

    def op(data: NDArray) -> NDArray:
        if not isinstance(data, NDArray):
            raise TypeError(f"sparse.{name} needs an NDArray, got a {type(data).__name__}")
        if isinstance(data, BaseSparseNDArray) and name in ZERO_KEEPING:
            values = fn(data._sdata).astype(data._sdata.dtype)
            return data._like(values, data._saux, data._ctx)
        return _dense_out(fn(_values(data)).astype(data.dtype), data)

    op.__name__ = name
    op.__doc__ = f"MXNet's ``sparse.{name}``: elementwise, as described in ``_ops``."
    return op


def clip(data: NDArray, a_min: Any, a_max: Any, out: NDArray | None = None) -> NDArray:
    """MXNet's ``clip`` on any storage: a sparse array keeps its storage (only stored values
    are clipped); a dense one gives a dense result. ``out`` receives it in ``out``'s storage.

    Raises:
        TypeError: ``data`` is not an NDArray.
        MXNetError: a sparse ``data`` with bounds that exclude 0 (MXNet has no kernel).
    """
    if not isinstance(data, NDArray):
        raise TypeError(f"clip needs an NDArray, got a {type(data).__name__}")
    lo, hi = np.asarray(a_min).astype(data.dtype), np.asarray(a_max).astype(data.dtype)
    if isinstance(data, BaseSparseNDArray) and not lo <= 0 <= hi:
        raise MXNetError(
            f"Check failed: infer_stype_success: Operator not implemented: operator = clip, "
            f"input storage type {data.stype} with a_min={a_min}, a_max={a_max}: sparse clip "
            f"needs a_min <= 0 <= a_max; clip data.tostype('default') instead"
        )
    if isinstance(data, BaseSparseNDArray):
        values = jnp.where(data._sdata > hi, hi, jnp.where(data._sdata < lo, lo, data._sdata))
        res = data._like(values.astype(data._sdata.dtype), data._saux, data._ctx)
    else:
        x = _values(data)
        res = _dense_out(jnp.where(x > hi, hi, jnp.where(x < lo, lo, x)).astype(x.dtype), data)
    if out is None:
        return res
    if isinstance(out, BaseSparseNDArray) and res.stype == out.stype:
        out._set_parts(res.shape, res._sdata, res._saux)
    else:
        out._set_data(res._data)
    return out


def zeros_like(data: NDArray) -> NDArray:
    """An array of ``data``'s shape, dtype and storage type that stores nothing."""
    if not isinstance(data, BaseSparseNDArray):
        return _dense_out(jnp.zeros_like(_values(data)), data)
    empty = np.zeros((0,) + tuple(data._sdata.shape[1:]), np.dtype(data.dtype))
    if isinstance(data, CSRNDArray):
        aux = [np.zeros(data.shape[0] + 1, np.int64), np.zeros(0, np.int64)]
    else:
        aux = [np.zeros(0, np.int64)]
    return type(data)._from_parts(data.shape, empty, aux, data._ctx)
