"""Sparse values inside compiled programs: the pytrees a traced program passes around.

A ``CSRNDArray`` or ``RowSparseNDArray`` is a Python object over JAX parts; a jitted
program takes and returns these pytrees instead. Their sizes are static, so the number of
stored entries (csr ``nnz``, row_sparse rows) is padded up to a bucket
(:func:`padded_size`): batches with different ``nnz`` share one compiled program.
Padding entries point one past the end (row ``shape[0]`` / column ``shape[1]``) and hold
zero, so gathers read zeros (``mode='fill'``) and scatters drop them (``mode='drop'``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

MIN_BUCKET = 16


def padded_size(n: int) -> int:
    """The static size ``n`` stored entries are padded to: the next power of two (>= 16)."""
    return max(MIN_BUCKET, 1 << max(0, int(n) - 1).bit_length())


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class CsrParts:
    """A 2-D csr matrix inside a program. ``rows[k]``/``cols[k]`` locate ``data[k]``
    (COO order, row-major); padding has ``rows == shape[0]``, ``cols == shape[1]``, 0."""

    data: Any
    rows: Any
    cols: Any
    shape: tuple = dataclasses.field(metadata=dict(static=True))

    def dense(self) -> jax.Array:
        out = jnp.zeros(self.shape, self.data.dtype)
        return out.at[self.rows, self.cols].add(self.data, mode="drop")

    def matmul(self, rhs: jax.Array) -> jax.Array:
        """``self @ rhs`` for a dense 2-D ``rhs`` without densifying ``self``."""
        picked = jnp.take(rhs, self.cols, axis=0, mode="fill", fill_value=0)
        return jax.ops.segment_sum(
            picked * self.data[:, None], self.rows, num_segments=self.shape[0]
        )


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class RowParts:
    """A row_sparse value inside a program: row ``rows[k]`` is ``values[k]``; every other
    row is zero. Padding rows are ``shape[0]``. Rows need not be sorted or unique (a
    gradient's duplicates add up)."""

    rows: Any
    values: Any
    shape: tuple = dataclasses.field(metadata=dict(static=True))

    def dense(self) -> jax.Array:
        out = jnp.zeros(self.shape, self.values.dtype)
        return out.at[self.rows].add(self.values, mode="drop")


def csr_parts(arr: Any, size: int | None = None) -> CsrParts:
    """A ``CSRNDArray``'s parts as a :class:`CsrParts`, padded to ``size`` entries
    (default :func:`padded_size` of its nnz). Runs on the host (a data-loading step)."""
    indptr, indices = (np.asarray(a) for a in arr._saux)
    data = np.asarray(arr._sdata)
    nnz = data.shape[0]
    size = padded_size(nnz) if size is None else size
    if size < nnz:
        raise ValueError(f"csr_parts: size {size} is smaller than the array's nnz {nnz}")
    n_rows, n_cols = arr.shape
    rows = np.repeat(np.arange(n_rows, dtype=np.int32), np.diff(indptr))
    pad = size - nnz
    return CsrParts(
        data=np.concatenate([data, np.zeros(pad, data.dtype)]),
        rows=np.concatenate([rows, np.full(pad, n_rows, np.int32)]),
        cols=np.concatenate([indices.astype(np.int32), np.full(pad, n_cols, np.int32)]),
        shape=(n_rows, n_cols),
    )


def unique_rows(indices: jax.Array, size: int, n_rows: int) -> jax.Array:
    """The distinct values of ``indices`` (ascending), padded with ``n_rows`` to ``size``
    entries: the rows a gradient touches, traceable (static size)."""
    flat = jnp.ravel(indices).astype(jnp.int32)
    flat = jnp.where((flat >= 0) & (flat < n_rows), flat, n_rows)
    return jnp.unique(flat, size=size, fill_value=n_rows)
