"""MXNet's internal write operators behind ``NDArray`` methods and its older optimizers
(``mx.nd._internal``): copies and fills, and the ``_scatter_*`` operators, which on a sparse
left-hand side compute only its stored values (the others stay absent)."""

from __future__ import annotations

from typing import Any, Optional

import jax.numpy as jnp
import numpy as np

from ..base import MXNetError
from .ndarray import NDArray
from .sparse import BaseSparseNDArray, RowSparseNDArray


def _into(out: Optional[NDArray], value: NDArray) -> NDArray:
    if out is None:
        return value
    out[:] = value
    return out


def _copyto(data: NDArray, out: Optional[NDArray] = None) -> NDArray:
    """A copy of ``data`` (written into ``out``, in ``out``'s dtype, when given)."""
    return _into(out, data.copy())


def _set_value(src: float, out: Optional[NDArray] = None) -> NDArray:
    """``out`` filled with ``src``."""
    if out is None:
        raise MXNetError("_set_value fills an existing array: pass it as out=")
    out[:] = float(src)
    return out


def _scalar_on_stored(data: NDArray, fn, out: Optional[NDArray]) -> NDArray:
    if isinstance(data, BaseSparseNDArray):  # stored values only: the storage is kept
        result = data._like(fn(data._sdata).astype(data._sdata.dtype), data._saux, data._ctx)
        return _into(out, result)
    return _into(out, NDArray(fn(data._data).astype(data.dtype), data.context))


def _scatter_plus_scalar(data: NDArray, scalar: float = 1.0, out=None) -> NDArray:
    """``data + scalar``; a csr/row_sparse ``data`` adds to its stored values only."""
    return _scalar_on_stored(data, lambda v: v + scalar, out)


def _scatter_minus_scalar(data: NDArray, scalar: float = 1.0, out=None) -> NDArray:
    """``data - scalar``; a csr/row_sparse ``data`` subtracts from its stored values only."""
    return _scalar_on_stored(data, lambda v: v - scalar, out)


def _scatter_elemwise_div(lhs: NDArray, rhs: NDArray, out=None) -> NDArray:
    """``lhs / rhs``; a row_sparse ``lhs`` divides its stored rows only (by ``rhs``'s same
    rows, whatever its storage) and stays row_sparse."""
    if lhs.shape != rhs.shape:
        raise MXNetError(f"_scatter_elemwise_div: shapes {lhs.shape} and {rhs.shape} differ")
    if isinstance(lhs, RowSparseNDArray):
        rows = lhs._saux[0]
        dense_rhs = (
            rhs.tostype("default")._data if isinstance(rhs, BaseSparseNDArray) else rhs._data
        )
        values = (lhs._sdata / dense_rhs[rows]).astype(lhs._sdata.dtype)
        return _into(out, lhs._like(values, lhs._saux, lhs._ctx))
    dense = [x.tostype("default") if isinstance(x, BaseSparseNDArray) else x for x in (lhs, rhs)]
    return _into(out, NDArray(dense[0]._data / dense[1]._data, lhs.context))


def _scatter_set_nd(
    lhs: NDArray, rhs: NDArray, indices: NDArray, shape: Any = None, out=None
) -> NDArray:
    """``lhs`` with the elements at ``indices`` (``(M, N)``: the first M axes of N points)
    set to ``rhs``, the others kept (``scatter_nd`` onto ``lhs`` instead of zeros). MXNet
    writes into ``out``, which must be ``lhs``; here ``out`` may be any array of that shape,
    and without it a new array is returned."""
    if shape is not None and tuple(shape) != tuple(lhs.shape):
        raise MXNetError(f"_scatter_set_nd: shape {tuple(shape)} is not lhs's {lhs.shape}")
    idx = np.asarray(indices.asnumpy()).astype(np.int64)
    if idx.ndim == 1:
        idx = idx[:, None]
    if idx.shape[0] > lhs.ndim:
        raise MXNetError(
            f"_scatter_set_nd: indices index {idx.shape[0]} axes of a {lhs.ndim}-D lhs"
        )
    values = jnp.asarray(rhs._data, lhs.dtype)
    result = lhs._data.at[tuple(jnp.asarray(i) for i in idx)].set(values)
    return _into(out, NDArray(result, lhs.context))
