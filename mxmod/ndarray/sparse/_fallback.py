"""``mx.nd.sparse.<op>`` for MXNet's generated sparse operators that mostly run through its
storage fallback (the dense operator on dense copies, a dense result), with MXNet 1.9.1's
sparse results where it has a kernel:

* ``ElementWiseSum``/``add_n`` of row_sparse arrays only: row_sparse (the union of rows);
* ``broadcast_mul``/``broadcast_div`` of a csr array by a dense one broadcast to its shape:
  csr (the csr's stored entries scaled);
* ``concat`` of csr arrays along ``dim=0``, ``slice`` of a csr array: csr;
* ``make_loss``: the input's storage (identity forward).

Everything else (``Embedding``, ``FullyConnected``, the regression outputs, ``arccos``,
``arccosh``, the other ``broadcast_*``, ``mean``, ``norm``, ``sum``, ``where``) gives a dense
result, as in MXNet.
"""

from __future__ import annotations

from typing import Any, Callable

import jax.numpy as jnp
import numpy as np

from ..ndarray import NDArray
from ..op_table import nd_function
from ._base import BaseSparseNDArray
from ._csr import CSRNDArray
from ._row_sparse import RowSparseNDArray

DENSE_RESULT = (
    "Embedding FullyConnected LinearRegressionOutput LogisticRegressionOutput "
    "MAERegressionOutput arccos arccosh broadcast_add broadcast_minus broadcast_plus "
    "broadcast_sub mean norm sum where"
).split()


def _dense(name: str) -> Callable:
    fn = nd_function(name)

    def op(*args: Any, **kwargs: Any) -> NDArray:
        return fn(*args, **kwargs)

    op.__name__ = name
    op.__doc__ = f"MXNet's ``sparse.{name}``: computed densely (MXNet's storage fallback)."
    return op


def _add_all(arrays: list, name: str) -> NDArray:
    if len(arrays) == 1 and isinstance(arrays[0], (list, tuple)):
        arrays = list(arrays[0])
    if arrays and all(isinstance(a, RowSparseNDArray) for a in arrays):
        rows = np.unique(np.concatenate([np.asarray(a._saux[0]) for a in arrays]))
        total = sum(a._densify() for a in arrays)
        return RowSparseNDArray._from_parts(
            arrays[0].shape, total[jnp.asarray(rows)], [rows.astype(np.int64)], arrays[0]._ctx
        )
    dense = [NDArray(a._data, a._ctx) if isinstance(a, BaseSparseNDArray) else a for a in arrays]
    return nd_function(name)(*dense)


def ElementWiseSum(*arrays: Any, **kwargs: Any) -> NDArray:  # noqa: N802  (MXNet's name)
    """Sum of arrays: row_sparse when every input is row_sparse, else dense."""
    if kwargs:
        return nd_function("ElementWiseSum")(*arrays, **kwargs)
    return _add_all(list(arrays), "ElementWiseSum")


def add_n(*arrays: Any, **kwargs: Any) -> NDArray:
    """Sum of arrays: row_sparse when every input is row_sparse, else dense."""
    if kwargs:
        return nd_function("add_n")(*arrays, **kwargs)
    return _add_all(list(arrays), "add_n")


def _csr_scale(name: str, fn: Callable) -> Callable:
    def op(lhs: Any, rhs: Any, **kwargs: Any) -> NDArray:
        if (
            isinstance(lhs, CSRNDArray)
            and isinstance(rhs, NDArray)
            and not isinstance(rhs, BaseSparseNDArray)
            and not kwargs
            and np.broadcast_shapes(lhs.shape, rhs.shape) == lhs.shape
        ):
            indptr, cols = (np.asarray(a) for a in lhs._saux)
            rows = np.repeat(np.arange(lhs.shape[0]), np.diff(indptr))
            full = jnp.broadcast_to(rhs._data, lhs.shape)
            values = fn(lhs._sdata, full[jnp.asarray(rows), jnp.asarray(cols)])
            return lhs._like(values.astype(lhs._sdata.dtype), lhs._saux, lhs._ctx)
        return nd_function(name)(lhs, rhs, **kwargs)

    op.__name__ = name
    op.__doc__ = f"MXNet's ``sparse.{name}``: csr by a broadcast dense array stays csr."
    return op


broadcast_mul = _csr_scale("broadcast_mul", jnp.multiply)
broadcast_div = _csr_scale("broadcast_div", jnp.divide)


def concat(*arrays: Any, dim: int = 1, **kwargs: Any) -> NDArray:
    """``concat``: csr arrays along ``dim=0`` stay csr, anything else is dense."""
    if arrays and all(isinstance(a, CSRNDArray) for a in arrays) and int(dim) == 0 and not kwargs:
        dense = jnp.concatenate([a._densify() for a in arrays], axis=0)
        return CSRNDArray._from_dense(np.asarray(dense), arrays[0]._ctx)
    return nd_function("concat")(*arrays, dim=dim, **kwargs)


def slice(data: Any, begin: Any, end: Any, step: Any = (), **kwargs: Any) -> NDArray:  # noqa: A001
    """``slice``: a csr array stays csr, anything else is dense."""
    out = nd_function("slice")(data, begin=begin, end=end, step=step, **kwargs)
    if isinstance(data, CSRNDArray):
        return CSRNDArray._from_dense(out.asnumpy(), data._ctx)
    return out


def make_loss(data: Any, **kwargs: Any) -> NDArray:
    """``make_loss`` forward: the input itself (a copy), storage kept."""
    if isinstance(data, BaseSparseNDArray) and not kwargs:
        return data.copy()
    return nd_function("make_loss")(data, **kwargs)


OPS = {name: _dense(name) for name in DENSE_RESULT}
OPS.update(
    ElementWiseSum=ElementWiseSum,
    add_n=add_n,
    broadcast_mul=broadcast_mul,
    broadcast_div=broadcast_div,
    concat=concat,
    slice=slice,
    make_loss=make_loss,
)
