"""Creating sparse arrays as MXNet 1.9.1's ``mx.nd.sparse`` does, and dense -> sparse casts.

The accepted argument forms, defaults (dtype, shape inference) and error types follow MXNet;
where MXNet needs scipy (``csr_matrix((data, (row, col)))``) mxmod builds the matrix itself,
summing duplicate entries as scipy does. scipy matrices are accepted when scipy is installed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...base import MXNetError, mx_real_t
from ...context import Context, current_context
from .._device import requested_dtype, shape_tuple
from ..ndarray import NDArray
from ._base import check_stype
from ._csr import CSRNDArray
from ._row_sparse import RowSparseNDArray

__all__ = ["csr_matrix", "row_sparse_array", "zeros", "empty", "array", "cast_storage"]


def _ctx(ctx: Any) -> Context:
    return current_context() if ctx is None else Context(ctx)


def _is_scipy_sparse(x: Any) -> bool:
    return type(x).__module__.startswith("scipy.sparse")


def _default_dtype(src: Any, dtype: Any) -> np.dtype:
    """MXNet's rule: the source's dtype for an NDArray / numpy / scipy source, else float32."""
    if dtype is None:
        has = isinstance(src, (NDArray, np.ndarray)) or _is_scipy_sparse(src)
        dtype = src.dtype if has else mx_real_t
    return requested_dtype(dtype, "mx.nd.sparse")


def _host(x: Any, dtype: Any, what: str) -> np.ndarray:
    try:
        out = np.asarray(x.asnumpy() if isinstance(x, NDArray) else x)
        if out.dtype == object:
            raise ValueError
        return out if dtype is None else out.astype(dtype)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be an array like object, got {type(x).__name__}") from None


def _check_shape(given: Any, shape: Any) -> None:
    if given and shape and tuple(given) != tuple(shape):
        raise ValueError(f"Shape mismatch detected. {tuple(given)} v.s. {tuple(shape)}")


# ------------------------------------------------------------------ zeros
def zeros(stype: str, shape: Any, ctx: Any = None, dtype: Any = None, **kwargs: Any) -> NDArray:
    """An all-zero array of storage type ``stype`` (nothing stored), as ``mx.nd.sparse.zeros``.

    Raises:
        ValueError: unknown ``stype``; MXNetError: csr with a shape that is not 2-D.
    """
    if kwargs:
        raise TypeError(f"sparse.zeros() got unsupported keyword arguments {sorted(kwargs)}")
    if stype == "default":
        dt = requested_dtype(dtype or mx_real_t, "zeros")
        return NDArray(np.zeros(shape_tuple(shape), dt), ctx)
    if stype not in ("csr", "row_sparse"):
        raise ValueError(f"unknown storage type {stype!r}; use 'default', 'csr' or 'row_sparse'")
    shape, ctx = shape_tuple(shape), _ctx(ctx)
    dt = requested_dtype(mx_real_t if dtype is None else dtype, "mx.nd.sparse.zeros")
    if stype == "csr":
        if len(shape) != 2:
            raise MXNetError(f"a csr array is 2-D; got shape {shape}")
        parts = [np.zeros(shape[0] + 1, np.int64), np.zeros(0, np.int64)]
        return CSRNDArray._from_parts(shape, np.zeros(0, dt), parts, ctx)
    if not shape:
        raise MXNetError("a row_sparse array needs at least 1 dimension; got shape ()")
    data = np.zeros((0,) + shape[1:], dt)
    return RowSparseNDArray._from_parts(shape, data, [np.zeros(0, np.int64)], ctx)


def empty(stype: str, shape: Any, ctx: Any = None, dtype: Any = None) -> NDArray:
    """As :func:`zeros` (MXNet's empty sparse arrays store nothing either)."""
    if stype not in ("csr", "row_sparse"):
        raise ValueError(f"unknown stype : {stype}; use 'csr' or 'row_sparse'")
    return zeros(stype, shape, ctx=ctx, dtype=dtype)


# -------------------------------------------------------------------- csr
def csr_matrix(arg1: Any, shape: Any = None, ctx: Any = None, dtype: Any = None) -> CSRNDArray:
    """A CSRNDArray from ``(data, indices, indptr)``, ``(data, (row, col))``, a shape
    ``(M, N)``, a dense array (NDArray, numpy, nested lists), a CSRNDArray or a scipy matrix.

    Raises:
        ValueError: a tuple of another length, mismatching shapes, a RowSparseNDArray, or
            parts of invalid shapes ("invalid shape", as MXNet).
    """
    if isinstance(arg1, tuple):
        if len(arg1) == 2 and isinstance(arg1[1], tuple) and len(arg1[1]) == 2:
            return _csr_from_coo(arg1[0], *arg1[1], shape=shape, ctx=ctx, dtype=dtype)
        if len(arg1) == 2:
            _check_shape(arg1, shape)
            return zeros("csr", arg1, ctx=ctx, dtype=dtype)
        if len(arg1) == 3:
            return _csr_from_parts(*arg1, shape=shape, ctx=ctx, dtype=dtype)
        raise ValueError(
            f"Unexpected length of input tuple: {len(arg1)}; pass (data, indices, indptr), "
            f"(data, (row, col)) or a shape (M, N)"
        )
    if isinstance(arg1, CSRNDArray) or _is_scipy_sparse(arg1):
        _check_shape(arg1.shape, shape)
        return array(arg1, ctx=ctx, dtype=dtype)
    if isinstance(arg1, RowSparseNDArray):
        raise ValueError("Unexpected input type: RowSparseNDArray")
    dense = _dense(arg1, ctx, dtype)
    _check_shape(dense.shape, shape)
    return dense.tostype("csr")


def _dense(src: Any, ctx: Any, dtype: Any) -> NDArray:
    host = _host(src, _default_dtype(src, dtype), "the dense source")
    return NDArray(host, src.context if ctx is None and isinstance(src, NDArray) else _ctx(ctx))


def _csr_from_parts(data, indices, indptr, shape=None, ctx=None, dtype=None) -> CSRNDArray:
    data = _host(data, _default_dtype(data, dtype), "data")
    indices = _host(indices, np.int64, "indices")
    indptr = _host(indptr, np.int64, "indptr")
    if data.ndim != 1 or indptr.ndim != 1 or indices.ndim != 1 or not len(indptr):
        raise ValueError(
            f"invalid shape: data, indices and indptr must be 1-D and indptr non-empty; got "
            f"{data.shape}, {indices.shape}, {indptr.shape}"
        )
    if shape is None:
        if indices.shape[0] == 0:
            raise ValueError("invalid shape: give shape= when indices is empty")
        shape = (len(indptr) - 1, int(indices.max()) + 1)
    shape = shape_tuple(shape)
    if len(shape) != 2:
        raise ValueError(f"invalid shape: a csr array is 2-D, got shape {shape}")
    if data.shape != indices.shape:
        raise ValueError(
            f"data has {data.shape[0]} values but indices has {indices.shape[0]}; they must "
            f"have the same length"
        )
    return CSRNDArray._from_parts(shape, data, [indptr, indices], _ctx(ctx))


def _csr_from_coo(data, row, col, shape=None, ctx=None, dtype=None) -> CSRNDArray:
    raw = _host(data, None, "data")  # MXNet goes through scipy: the values' own dtype
    vals = raw.astype(_default_dtype(raw, dtype))
    row, col = _host(row, np.int64, "row"), _host(col, np.int64, "col")
    if not (vals.ndim == row.ndim == col.ndim == 1 and len(vals) == len(row) == len(col)):
        raise ValueError(
            f"(data, (row, col)) must be 1-D arrays of one length; got {vals.shape}, "
            f"{row.shape}, {col.shape}"
        )
    if (row < 0).any() or (col < 0).any():
        raise ValueError("row and col indices must be non-negative")
    inferred = (int(row.max()) + 1, int(col.max()) + 1) if len(row) else None
    if shape is None and inferred is None:
        raise ValueError("cannot infer dimensions from empty row/col; give shape=")
    shape = shape_tuple(shape) if shape is not None else inferred
    if inferred and (inferred[0] > shape[0] or inferred[1] > shape[1]):
        raise ValueError(f"row/col index exceeds matrix dimensions {shape}")
    key = row * shape[1] + col
    uniq, where = np.unique(key, return_inverse=True)  # sorted by (row, col)
    summed = np.zeros(len(uniq), vals.dtype)
    np.add.at(summed, where, vals)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(uniq // shape[1], minlength=shape[0]))])
    return CSRNDArray._from_parts(shape, summed, [indptr, uniq % shape[1]], _ctx(ctx))


# ------------------------------------------------------------- row_sparse
def row_sparse_array(
    arg1: Any, shape: Any = None, ctx: Any = None, dtype: Any = None
) -> RowSparseNDArray:
    """A RowSparseNDArray from ``(data, indices)``, a shape, a dense array or a
    RowSparseNDArray, as MXNet's ``row_sparse_array``.

    Raises:
        ValueError: a 1-tuple, mismatching shapes, a CSRNDArray, or parts of invalid shapes.
    """
    if isinstance(arg1, tuple):
        if len(arg1) < 2:
            raise ValueError(f"Unexpected length of input tuple: {len(arg1)}")
        ints = all(isinstance(d, (int, np.integer)) for d in arg1)
        if len(arg1) > 2 or ints:
            _check_shape(arg1, shape)
            return zeros("row_sparse", arg1, ctx=ctx, dtype=dtype)
        return _rsp_from_parts(arg1[0], arg1[1], shape=shape, ctx=ctx, dtype=dtype)
    if isinstance(arg1, RowSparseNDArray):
        _check_shape(arg1.shape, shape)
        return array(arg1, ctx=ctx, dtype=dtype)
    if isinstance(arg1, CSRNDArray):
        raise ValueError("Unexpected input type: CSRNDArray")
    dense = _dense(arg1, ctx, dtype)
    _check_shape(dense.shape, shape)
    return dense.tostype("row_sparse")


def _rsp_from_parts(data, indices, shape=None, ctx=None, dtype=None) -> RowSparseNDArray:
    data = _host(data, _default_dtype(data, dtype), "data")
    indices = _host(indices, np.int64, "indices")
    if shape is None:
        if indices.ndim != 1 or indices.shape[0] == 0:
            raise ValueError("invalid shape: give shape= when indices is empty")
        shape = (int(indices[-1]) + 1,) + data.shape[1:]
    shape = shape_tuple(shape)
    if data.ndim != len(shape) or indices.ndim != 1 or int(np.prod(shape[1:])) == 0:
        raise ValueError(
            f"invalid shape: data {data.shape} must have the {len(shape)} dims of shape "
            f"{shape} (no zero-size row), indices {indices.shape} must be 1-D"
        )
    if data.shape[0] != indices.shape[0] or data.shape[1:] != shape[1:]:
        raise ValueError(
            f"data of shape {data.shape} does not fit {indices.shape[0]} rows of shape "
            f"{shape}: it must be ({indices.shape[0]},) + {shape[1:]}"
        )
    return RowSparseNDArray._from_parts(shape, data, [indices], _ctx(ctx))


# ------------------------------------------------------------ conversions
def array(source_array: Any, ctx: Any = None, dtype: Any = None) -> NDArray:
    """A sparse copy of a CSRNDArray / RowSparseNDArray / scipy matrix (``mx.nd.sparse.array``).

    Raises:
        ValueError: for a dense source (use ``mx.nd.array`` or ``tostype``).
    """
    if isinstance(source_array, (CSRNDArray, RowSparseNDArray)):
        out = source_array.astype(_default_dtype(source_array, dtype))
        return out.as_in_context(_ctx(ctx)) if ctx is not None else out
    if isinstance(source_array, NDArray):
        raise ValueError(
            "Please use `tostype` to create RowSparseNDArray or CSRNDArray from an NDArray"
        )
    if _is_scipy_sparse(source_array):
        csr = source_array.tocsr().sorted_indices()
        csr.sum_duplicates()
        return _csr_from_parts(
            csr.data,
            csr.indices,
            csr.indptr,
            shape=csr.shape,
            ctx=ctx,
            dtype=_default_dtype(source_array, dtype),
        )
    if isinstance(source_array, (np.ndarray, np.generic)):
        raise ValueError(
            "Please use mx.nd.array to create an NDArray with a numpy source_array "
            "(or mx.nd.sparse.csr_matrix / row_sparse_array for a sparse one)"
        )
    raise ValueError(f"Unexpected source_array type: {type(source_array)}")


def dense_tostype(self: NDArray, stype: str) -> NDArray:
    """``NDArray.tostype`` for dense arrays: a copy, or the csr / row_sparse form.

    Raises:
        ValueError: csr of an array that is not 2-D; MXNetError: unknown ``stype``.
    """
    check_stype(stype)
    if stype == "default":
        return self.copy()
    cls = CSRNDArray if stype == "csr" else RowSparseNDArray
    return cls._from_dense(np.asarray(self._data), self._ctx)


def cast_storage(data: NDArray, stype: str) -> NDArray:
    """``mx.nd.cast_storage``: ``data.tostype(stype)``."""
    if not isinstance(data, NDArray):
        raise TypeError(f"cast_storage needs an NDArray, got {type(data).__name__}")
    return data.tostype(stype)
