"""CSRNDArray: MXNet's compressed sparse row storage (2-D)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ...context import Context
from ..ndarray import NDArray
from ._base import BaseSparseNDArray

_CSR_SHAPE = "err != kCSRShapeErr (1 vs. 1) : Shape mismatch of this csr NDArray"
_CSR_INDPTR = (
    "err != kCSRIndPtrErr (2 vs. 2) : IndPtr of csr NDArray should be non-negative, in "
    "non-decreasing order, start with 0, and end with value equal with size of indices."
)
_CSR_IDX = (
    "err != kCSRIdxErr (3 vs. 3) : Indices of csr NDArray should be non-negative, in "
    "ascending order per row  and less than the number of columns."
)


class CSRNDArray(BaseSparseNDArray):
    """A 2-D array in compressed sparse row format (MXNet's ``CSRNDArray``).

    Row ``i``'s column indices are ``indices[indptr[i]:indptr[i+1]]`` (ascending, no
    duplicates) and its values ``data[indptr[i]:indptr[i+1]]``.
    """

    _stype = "csr"
    _aux_names = ("indptr", "indices")

    @property
    def indptr(self) -> NDArray:
        """A copy of the row pointers (length ``shape[0] + 1``)."""
        return self._aux("indptr")

    @classmethod
    def _from_dense(cls, host: np.ndarray, ctx: Context) -> CSRNDArray:
        if host.ndim != 2:
            raise ValueError(
                f"To convert to a CSR, the NDArray should be 2 Dimensional. Current shape "
                f"is {host.shape}"
            )
        rows, cols = np.nonzero(host)
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=host.shape[0]))])
        return cls._from_parts(host.shape, host[rows, cols], [indptr, cols], ctx)

    def _densify(self) -> jax.Array:
        indptr, indices = self._saux
        nnz = int(indices.shape[0])
        rows = jnp.repeat(
            jnp.arange(indptr.shape[0] - 1), jnp.diff(indptr), total_repeat_length=nnz
        )
        dense = jnp.zeros(self.shape, self._sdata.dtype, device=self._ctx.jax_device)
        return dense.at[rows, indices].set(self._sdata)

    def _format_error(self, data: np.ndarray, aux: list, full: bool) -> str:
        indptr, indices = aux
        if indptr.shape[0] != self.shape[0] + 1 or indices.shape[0] != data.shape[0]:
            return _CSR_SHAPE
        if not full:
            return ""
        if (
            indptr[0] != 0
            or indptr[-1] != indices.shape[0]
            or (indptr < 0).any()
            or (np.diff(indptr) < 0).any()
        ):
            return _CSR_INDPTR
        if ((indices < 0) | (indices >= self.shape[1])).any():
            return _CSR_IDX
        for row in range(self.shape[0]):
            if (np.diff(indices[indptr[row] : indptr[row + 1]]) <= 0).any():
                return _CSR_IDX
        return ""

    def __getitem__(self, key: Any) -> CSRNDArray:
        """Rows: ``a[i]`` (as a 1-row CSRNDArray), ``a[i:j]``, ``a[:]``; as MXNet."""
        if isinstance(key, tuple):
            raise ValueError("Multi-dimension indexing is not supported")
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            n = self.shape[0]
            if not -n <= key < n:
                raise IndexError(f"row index {key} is out of bounds for a CSRNDArray of {n} rows")
            begin = int(key) % n
            return self._rows(begin, begin + 1)
        if isinstance(key, slice):
            if key.step is not None:
                raise ValueError("CSRNDArray only supports continuous slicing on axis 0")
            if key.start is None and key.stop is None:
                return self
            # MXNet reads a stop of 0 (or None) as "to the end"
            begin, end, _ = slice(key.start or 0, key.stop or self.shape[0]).indices(self.shape[0])
            return self._rows(begin, max(begin, end))
        raise ValueError(f"Undefined behaviour for {key!r}: index rows with an int or a slice")

    def _rows(self, begin: int, end: int) -> CSRNDArray:
        indptr, indices = self._saux
        lo, hi = int(indptr[begin]), int(indptr[end])
        part = indptr[begin : end + 1] - lo
        return CSRNDArray._from_parts(
            (end - begin, self.shape[1]), self._sdata[lo:hi], [part, indices[lo:hi]], self._ctx
        )

    def asscipy(self) -> Any:
        """A ``scipy.sparse.csr_matrix`` copy.

        Raises:
            ImportError: scipy is not installed (mxmod does not depend on it).
        """
        try:
            import scipy.sparse as spsp  # optional dependency, as in MXNet
        except ImportError:
            raise ImportError(
                "asscipy needs scipy, which is not installed; pip install scipy, or use "
                "arr.data/arr.indices/arr.indptr (.asnumpy())"
            ) from None
        data, (indptr, indices) = self._host_parts()
        return spsp.csr_matrix((data, indices, indptr), shape=self.shape, dtype=data.dtype)
