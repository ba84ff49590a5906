"""``mx.nd.sparse``: MXNet's csr and row_sparse storage types (NDArray level).

What exists: :class:`CSRNDArray` and :class:`RowSparseNDArray` (parts, ``tostype``,
``copy``/``copyto``/``astype``, ``check_format``, csr row slicing, ``retain``, scalar ``*``
and ``/``), the creation functions, ``mx.nd.save``/``load`` of sparse records and
``NDArray.tostype('csr' | 'row_sparse')``, and MXNet's imperative sparse operators
(``_ops``: ``dot``, ``_square_sum``, elementwise ``add``/``subtract``/``multiply``/``divide``
and ``+ - * /``, zero-keeping unary operators, ``zeros_like``) with MXNet's output storage,
and the optimizer updates ``sgd_update``, ``sgd_mom_update``, ``adam_update``,
``ftrl_update``, ``adagrad_update`` with MXNet's lazy/std row_sparse kernels (``_updates``),
and MXNet's other generated sparse operators (``_fallback``: mostly its dense fallback).
Dense operators take sparse inputs through MXNet's storage fallback (a dense copy).
"""

from ..ndarray import NDArray
from ._base import BaseSparseNDArray
from ._csr import CSRNDArray
from ._row_sparse import RowSparseNDArray, retain
from ._create import array, cast_storage, csr_matrix, dense_tostype, empty, row_sparse_array, zeros
from . import _fallback, _ops
from ._ops import (
    add,
    clip,
    divide,
    dot,
    elemwise_add,
    elemwise_div,
    elemwise_mul,
    elemwise_sub,
    multiply,
    subtract,
    zeros_like,
)
from ._ops import square_sum as _square_sum  # noqa: F401  (MXNet: mx.nd._internal._square_sum)
from ..update_ops import adam_update, ftrl_update, sgd_mom_update, sgd_update
from ..update_ops import sparse_adagrad_update as adagrad_update

NDArray.tostype = dense_tostype  # dense -> sparse casts live here (as _arith sets operators)
for _name, _method in _ops.OPERATORS.items():  # sparse + - * / (scalar * and / keep storage)
    setattr(BaseSparseNDArray, _name, _method)
BaseSparseNDArray.__neg__ = _ops.unary("negative")
BaseSparseNDArray.__abs__ = _ops.unary("abs")
# fluent methods that keep sparse storage in MXNet (the others fall back to dense)
for _name in ("abs", "sign", "sqrt", "square"):
    setattr(BaseSparseNDArray, _name, _ops.unary(_name))
BaseSparseNDArray.clip = _ops.clip
BaseSparseNDArray.zeros_like = _ops.zeros_like


def _sparse_unary(self: BaseSparseNDArray, name: str, *args):
    """How ``mx.nd.<name>(self, *args)`` runs (``ndarray/ops.py`` and ``op_table.py`` ask):
    MXNet's sparse kernel, or NotImplemented for its dense fallback. ``dot`` passes both
    operands (this sparse array is one of them)."""
    if name == "clip":
        return _ops.clip(self, *args)
    if name == "zeros_like":
        return _ops.zeros_like(self)
    if name in _ops.ZERO_KEEPING and not args:
        return _ops.unary(name)(self)
    if name == "dot":  # args: lhs, rhs, transpose_a, transpose_b (either may be self)
        return _ops.dot(*args)
    if name in ("add_n", "ElementWiseSum"):
        return _fallback.OPS[name](self, *args)
    return NotImplemented


BaseSparseNDArray._sparse_unary = _sparse_unary
gs_retain = retain  # MXNet's other name for it
for _name in (*_ops.ZERO_KEEPING, *_ops.DENSE_RESULT):
    globals()[_name] = _ops.unary(_name)

__all__ = [
    "BaseSparseNDArray",
    "CSRNDArray",
    "RowSparseNDArray",
    "add",
    "clip",
    "divide",
    "dot",
    "elemwise_add",
    "elemwise_div",
    "elemwise_mul",
    "elemwise_sub",
    "multiply",
    "subtract",
    "zeros_like",
    "adagrad_update",
    "adam_update",
    "ftrl_update",
    "sgd_mom_update",
    "sgd_update",
    *_ops.ZERO_KEEPING,
    *_ops.DENSE_RESULT,
    "array",
    "cast_storage",
    "csr_matrix",
    "empty",
    "retain",
    "gs_retain",
    "row_sparse_array",
    "zeros",
]

for _name, _fn in _fallback.OPS.items():  # MXNet's other generated sparse operators
    globals()[_name] = _fn
__all__ += list(_fallback.OPS)


def __getattr__(name: str):
    raise AttributeError(
        f"module 'mxmod.ndarray.sparse' has no attribute {name!r} (MXNet 1.9.1's mx.nd.sparse "
        f"has none either; dense operators take sparse inputs through mx.nd.{name})"
    )
