"""A csr source of ``NDArrayIter`` kept on the host (numpy parts).

MXNet 1.9.1's ``NDArrayIter`` accepts ``CSRNDArray`` and ``scipy.sparse.csr_matrix``
inputs (only with ``last_batch_handle='discard'``) and slices each batch with
``slice_axis``, which has no csr kernel: the batches come out **dense** (MXNet's storage
fallback). :class:`HostCsr` keeps the source compressed and densifies only the rows of
each batch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ndarray.sparse import CSRNDArray
from ..ndarray.sparse import csr_matrix as nd_csr_matrix
from ..ndarray.sparse.parts import CsrParts, padded_size

__all__ = ["DenseRows", "HostCsr", "is_csr_source", "remember_csr", "remembered_csr"]


def _is_scipy_sparse(value: Any) -> bool:
    return type(value).__module__.startswith("scipy.sparse")


def is_csr_source(value: Any) -> bool:
    """Whether ``value`` is a csr input NDArrayIter takes (CSRNDArray or scipy csr)."""
    if isinstance(value, CSRNDArray):
        return True
    return _is_scipy_sparse(value) and getattr(value, "format", None) == "csr"


class HostCsr:
    """Rows of a 2-D csr matrix on the host: ``indptr``/``indices``/``data`` numpy parts."""

    ndim = 2

    def __init__(self, data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, shape):
        self.data, self.indices, self.indptr = data, indices, indptr
        self.shape = tuple(int(d) for d in shape)
        self.dtype = data.dtype

    @classmethod
    def from_source(cls, value: Any) -> HostCsr:
        """From a CSRNDArray (its dtype) or a scipy csr_matrix (its dtype, as ``mx.nd.array``)."""
        if isinstance(value, CSRNDArray):
            return cls(
                value.data.asnumpy(), value.indices.asnumpy(), value.indptr.asnumpy(), value.shape
            )
        return cls(
            np.asarray(value.data),
            np.asarray(value.indices, np.int64),
            np.asarray(value.indptr, np.int64),
            value.shape,
        )

    def __len__(self) -> int:
        return self.shape[0]

    @property
    def nbytes(self) -> int:
        return self.data.nbytes + self.indices.nbytes + self.indptr.nbytes

    def take_rows(self, positions: Any) -> HostCsr:
        """The rows at ``positions`` (a slice or an index array), still compressed."""
        rows = np.arange(self.shape[0])[positions]
        starts, ends = self.indptr[rows], self.indptr[rows + 1]
        lengths = ends - starts
        indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        picked = np.repeat(starts - indptr[:-1], lengths) + np.arange(indptr[-1])
        return HostCsr(self.data[picked], self.indices[picked], indptr, (len(rows), self.shape[1]))

    def dense_rows(self, positions: Any) -> np.ndarray:
        """The rows at ``positions`` (a slice or an index array) as a dense numpy array."""
        part = self.take_rows(positions)
        out = np.zeros(part.shape, self.dtype)
        row_of = np.repeat(np.arange(part.shape[0]), np.diff(part.indptr))
        out[row_of, part.indices] = part.data
        out = out.view(DenseRows)
        out.csr = part
        return out

    def parts(self) -> CsrParts:
        """The rows as host ``CsrParts`` (entries padded to ``parts.padded_size``)."""
        nnz = self.data.shape[0]
        pad = padded_size(nnz) - nnz
        n_rows, n_cols = self.shape
        rows = np.repeat(np.arange(n_rows, dtype=np.int32), np.diff(self.indptr))
        return CsrParts(
            data=np.concatenate([self.data, np.zeros(pad, self.dtype)]),
            rows=np.concatenate([rows, np.full(pad, n_rows, np.int32)]),
            cols=np.concatenate([self.indices.astype(np.int32), np.full(pad, n_cols, np.int32)]),
            shape=(n_rows, n_cols),
        )

    def to_ndarray(self, positions: Any, ctx: Any) -> CSRNDArray:
        """The rows at ``positions`` as a CSRNDArray on ``ctx``."""
        part = self.take_rows(positions)
        return nd_csr_matrix(
            (part.data, part.indices, part.indptr), shape=part.shape, ctx=ctx, dtype=self.dtype
        )


class DenseRows(np.ndarray):
    """A dense batch made from csr rows, remembering them (``csr``) so a Module feeding a
    csr input skips the scan for non-zeros."""

    csr = None


def remember_csr(batch_array: Any, rows: HostCsr) -> None:
    """Tie the csr ``rows`` to the NDArray ``batch_array`` made from them."""
    batch_array._csr_rows = (batch_array._data, rows)


def remembered_csr(batch_array: Any) -> HostCsr | None:
    """The csr rows a batch NDArray was made from, unless it was written since."""
    tied = getattr(batch_array, "_csr_rows", None)
    if tied is None or tied[0] is not batch_array._data:
        return None
    return tied[1]
