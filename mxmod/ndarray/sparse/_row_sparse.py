"""RowSparseNDArray: MXNet's row_sparse storage (stored rows + their indices), and retain."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ...base import MXNetError
from ...context import Context
from ..ndarray import NDArray
from ._base import BaseSparseNDArray

_RSP_SHAPE = "err != kRSPShapeErr (4 vs. 4) : Shape mismatch of this row_sparse NDArray"
_RSP_IDX = (
    "err != kRSPIdxErr (5 vs. 5) : Indices of row_sparse NDArray should be non-negative, "
    "less than the size of first dimension and in ascending order"
)


class RowSparseNDArray(BaseSparseNDArray):
    """Rows ``indices`` of an array are ``data``; all other rows are zero (MXNet's
    ``RowSparseNDArray``)."""

    _stype = "row_sparse"
    _aux_names = ("indices",)

    @classmethod
    def _from_dense(cls, host: np.ndarray, ctx: Context) -> RowSparseNDArray:
        if host.ndim == 0:
            raise ValueError("a row_sparse array needs at least 1 dimension; got a 0-d NDArray")
        rows = host.reshape(host.shape[0], int(np.prod(host.shape[1:])))
        keep = np.flatnonzero(rows.any(axis=1))
        return cls._from_parts(host.shape, host[keep], [keep], ctx)

    def _densify(self) -> jax.Array:
        dense = jnp.zeros(self.shape, self._sdata.dtype, device=self._ctx.jax_device)
        return dense.at[self._saux[0]].set(self._sdata)

    def _format_error(self, data: np.ndarray, aux: list, full: bool) -> str:
        (indices,) = aux
        if indices.shape[0] != data.shape[0]:
            return _RSP_SHAPE
        if full and (
            ((indices < 0) | (indices >= self.shape[0])).any() or (np.diff(indices) <= 0).any()
        ):
            return _RSP_IDX
        return ""

    def __getitem__(self, key: Any) -> RowSparseNDArray:
        """Only ``a[:]`` (the array itself), as MXNet."""
        if isinstance(key, slice) and key == slice(None):
            return self
        if isinstance(key, tuple):
            raise ValueError("Multi-dimension indexing is not supported")
        raise ValueError(
            f"RowSparseNDArray only supports [:] for __getitem__, got {key!r}; use "
            f".retain(rows) or .tostype('default')[...]"
        )

    def _fill(self, value: Any) -> None:
        rows = np.arange(self.shape[0])
        data = jnp.full(self.shape, value, self._sdata.dtype, device=self._ctx.jax_device)
        self._set_parts(self.shape, data, [rows])

    def retain(self, *args: Any, **kwargs: Any) -> RowSparseNDArray:
        """The rows ``indices`` of this array (see :func:`mxmod.ndarray.sparse.retain`)."""
        return retain(self, *args, **kwargs)


def retain(data: Any, indices: Any = None, **kwargs: Any) -> RowSparseNDArray:
    """MXNet's ``sparse.retain``: a RowSparseNDArray holding the rows ``indices`` of ``data``.

    The result stores one row per requested index (in the order given, as MXNet): the
    stored row where ``data`` has it, zeros otherwise; nothing if ``data`` stores nothing.

    Raises:
        MXNetError: ``data`` is not a RowSparseNDArray, ``indices`` is missing, or an
            unknown keyword is given (MXNet's operator errors).
        ValueError: ``indices`` is not 1-D or names a row outside ``data``.
    """
    if kwargs:
        raise MXNetError(f"retain got unknown arguments {sorted(kwargs)}; it takes data, indices")
    if not isinstance(data, RowSparseNDArray):
        raise MXNetError(
            f"retain needs a RowSparseNDArray, got a {type(data).__name__} (stype "
            f"{getattr(data, 'stype', None)!r}); convert with .tostype('row_sparse')"
        )
    if indices is None:
        raise MXNetError("retain needs indices: the rows to keep")
    want = np.asarray(indices.asnumpy() if isinstance(indices, NDArray) else indices)
    if want.ndim != 1:
        raise ValueError(f"retain: indices must be 1-D, got shape {want.shape}")
    want = want.astype(np.int64)
    if want.size and (want.min() < 0 or want.max() >= data.shape[0]):
        raise ValueError(f"retain: indices {want.tolist()} must lie in [0, {data.shape[0]})")
    have = np.asarray(data._saux[0]).astype(np.int64)
    if not len(have):  # nothing stored: MXNet's result stores nothing either
        return data.copy()
    pos = np.minimum(np.searchsorted(have, want), len(have) - 1)
    mask = jnp.asarray(have[pos] == want).reshape((-1,) + (1,) * (len(data.shape) - 1))
    values = jnp.where(mask, data._sdata[jnp.asarray(pos)], 0).astype(data._sdata.dtype)
    return RowSparseNDArray._from_parts(data.shape, values, [want], data._ctx)
