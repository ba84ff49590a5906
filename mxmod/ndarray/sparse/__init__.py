"""``mx.nd.sparse``: MXNet's csr and row_sparse storage types (NDArray level).

What exists: :class:`CSRNDArray` and :class:`RowSparseNDArray` (parts, ``tostype``,
``copy``/``copyto``/``astype``, ``check_format``, csr row slicing, ``retain``, scalar ``*``
and ``/``), the creation functions, ``mx.nd.save``/``load`` of sparse records and
``NDArray.tostype('csr' | 'row_sparse')``. Sparse operators (``sparse.dot`` ...) and sparse
gradients are not implemented yet; other arithmetic raises NotImplementedError.
"""

from ..ndarray import NDArray
from ._base import BaseSparseNDArray
from ._csr import CSRNDArray
from ._row_sparse import RowSparseNDArray, retain
from ._create import array, cast_storage, csr_matrix, dense_tostype, empty, row_sparse_array, zeros

NDArray.tostype = dense_tostype  # dense -> sparse casts live here (as _arith sets operators)

__all__ = [
    "BaseSparseNDArray",
    "CSRNDArray",
    "RowSparseNDArray",
    "array",
    "cast_storage",
    "csr_matrix",
    "empty",
    "retain",
    "row_sparse_array",
    "zeros",
]
