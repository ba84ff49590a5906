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

# MXNet's sparse operators (mx.nd.sparse.<op>, from its generated gen_sparse module) that
# mxmod does not have yet: named in the error rather than a bare AttributeError
_SPARSE_OPS = frozenset(
    "ElementWiseSum Embedding FullyConnected LinearRegressionOutput LogisticRegressionOutput "
    "MAERegressionOutput abs adagrad_update adam_update add_n arccos arccosh arcsin arcsinh "
    "arctan arctanh broadcast_add broadcast_div broadcast_minus broadcast_mul broadcast_plus "
    "broadcast_sub ceil clip concat cos cosh degrees dot elemwise_add elemwise_div "
    "elemwise_mul elemwise_sub exp expm1 fix floor ftrl_update group_adagrad_update log "
    "log1p make_loss mean negative norm radians relu rint round rsqrt sgd_mom_update "
    "sgd_update sigmoid sign sin sinh slice sqrt square square_sum sum tan tanh trunc where "
    "zeros_like".split()
)


def __getattr__(name: str):
    if name in _SPARSE_OPS:
        raise NotImplementedError(
            f"mx.nd.sparse.{name}: sparse operators are not implemented in mxmod yet; convert "
            f"the inputs with .tostype('default') and use the dense mx.nd.{name}"
        )
    raise AttributeError(f"module 'mxmod.ndarray.sparse' has no attribute {name!r}")
