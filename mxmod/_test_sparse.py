"""``mxnet.test_utils``'s random sparse arrays: ``rand_sparse_ndarray`` (uniform or
power-law csr, row_sparse), ``create_sparse_array(_zd)`` and ``shuffle_csr_column_indices``.
Values are uniform in [0, 1) unless ``data_init``/``modifier_func`` say otherwise."""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np
import numpy.random as rnd

from .context import Context, current_context
from .ndarray import NDArray, array, sparse


def shuffle_csr_column_indices(csr: Any) -> None:
    """Shuffle, in place, the column indices within each row of a csr matrix with numpy
    ``indptr``/``indices`` (scipy's); the data stay where they are, as in MXNet: the
    result is another valid matrix whose rows list their columns out of order."""
    for row in range(len(csr.indptr) - 1):
        start, end = int(csr.indptr[row]), int(csr.indptr[row + 1])
        part = np.array(csr.indices[start:end])
        rnd.shuffle(part)
        csr.indices[start:end] = part


def _check_csr_request(rows: int, cols: int, density: float, distribution: str) -> None:
    if not 0 <= density <= 1:
        raise ValueError(f"density {density} must be between 0 and 1")
    if rows <= 0 or cols <= 0:
        raise ValueError(f"a csr test array needs positive dims, got ({rows}, {cols})")
    if distribution == "powerlaw" and int(rows * cols * density) < 2 * rows:
        raise ValueError(
            f"the powerlaw distribution needs rows * cols * density >= 2 * rows; got density "
            f"{density} for shape ({rows}, {cols})"
        )


def _powerlaw_dense(rows: int, cols: int, density: float, dtype: Any) -> np.ndarray:
    """MXNet's power-law layout: every row starts with one entry, then row ``i`` fills its
    first ``2**(i+1)`` columns (whole rows once that reaches the width) until the
    ``rows * cols * density`` entries are placed."""
    left = int(rows * cols * density)
    out = np.zeros((rows, cols), dtype=dtype)
    draw = lambda: 1 + rnd.uniform(0.001, 2)  # noqa: E731
    for row in range(rows):
        out[row, 0] = draw()
        left -= 1
        if left <= 0:
            return out
    width = 2
    for row in range(rows):
        limit = min(cols, width)
        if limit == cols and left > limit:
            out[row] = draw()
            left -= limit - 1
            if left <= 0:
                return out
            continue
        for col in range(1, limit):
            out[row, col] = draw()
            left -= 1
            if left <= 0:
                return out
        width *= 2
    raise ValueError(f"density {density} cannot be reached for shape ({rows}, {cols})")


def rand_sparse_ndarray(
    shape: tuple,
    stype: str,
    density: Any = None,
    dtype: Any = None,
    distribution: Any = None,
    data_init: Any = None,
    rsp_indices: Any = None,
    modifier_func: Optional[Callable] = None,
    shuffle_csr_indices: bool = False,
    ctx: Optional[Context] = None,
) -> tuple:
    """A random csr / row_sparse array with about ``density`` of it stored, as MXNet's.

    Returns ``(arr, (data, indices))`` (numpy) for row_sparse and ``(arr, (indptr, indices,
    data))`` (NDArrays) for csr. ``distribution``: ``'uniform'`` (default) or, for csr,
    ``'powerlaw'`` (rows with exponentially more entries). ``shuffle_csr_indices`` leaves
    each csr row's column indices unordered.
    """
    density = rnd.rand() if density is None else density
    dtype = np.float32 if dtype is None else dtype
    ctx = ctx or current_context()
    distribution = distribution or "uniform"
    if stype not in ("csr", "row_sparse"):
        raise ValueError(f"unknown storage type {stype!r}; use 'csr' or 'row_sparse'")
    if distribution not in ("uniform", "powerlaw"):
        raise ValueError(f"unknown distribution {distribution!r}; use 'uniform' or 'powerlaw'")

    def values(shape_: tuple) -> np.ndarray:
        val = rnd.rand(*shape_).astype(dtype)
        if data_init is not None:
            val.fill(data_init)
        return np.vectorize(modifier_func)(val).astype(dtype) if modifier_func else val

    if stype == "row_sparse":
        if distribution != "uniform":
            raise ValueError(f"distribution {distribution!r} is for csr arrays only")
        if rsp_indices is not None:
            indices = np.asarray(rsp_indices, dtype=np.int64)
        else:
            indices = np.flatnonzero(rnd.rand(shape[0]) < density)
        val = values((len(indices),) + tuple(shape[1:]))
        arr = sparse.row_sparse_array((val, indices), shape=shape, dtype=dtype, ctx=ctx)
        return arr, (val, indices)
    if len(shape) != 2:
        raise ValueError(f"a csr array is 2-D; got shape {shape}")
    _check_csr_request(shape[0], shape[1], density, distribution)
    if distribution == "powerlaw":
        csr = array(_powerlaw_dense(shape[0], shape[1], density, dtype), ctx=ctx).tostype("csr")
        return csr, (csr.indptr, csr.indices, csr.data)
    rows, cols = np.nonzero(rnd.rand(*shape) < density)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=shape[0]))])
    host = _HostCsr(values((len(cols),)), cols.astype(np.int64), indptr.astype(np.int64))
    if shuffle_csr_indices:
        shuffle_csr_column_indices(host)
    csr = sparse.csr_matrix(
        (host.data, host.indices, host.indptr), shape=shape, dtype=dtype, ctx=ctx
    )
    return csr, (csr.indptr, csr.indices, csr.data)


class _HostCsr:
    __slots__ = ("data", "indices", "indptr")

    def __init__(self, data, indices, indptr):
        self.data, self.indices, self.indptr = data, indices, indptr


def create_sparse_array(
    shape: tuple,
    stype: str,
    data_init: Any = None,
    rsp_indices: Any = None,
    dtype: Any = None,
    modifier_func: Optional[Callable] = None,
    density: float = 0.5,
    shuffle_csr_indices: bool = False,
) -> NDArray:
    """:func:`rand_sparse_ndarray`'s array (row_sparse ``rsp_indices`` sorted first)."""
    if stype == "row_sparse":
        indices = None if rsp_indices is None else np.sort(np.asarray(rsp_indices))
        return rand_sparse_ndarray(
            shape,
            stype,
            density=density,
            data_init=data_init,
            rsp_indices=indices,
            dtype=dtype,
            modifier_func=modifier_func,
        )[0]
    if stype == "csr":
        return rand_sparse_ndarray(
            shape,
            stype,
            density=density,
            data_init=data_init,
            dtype=dtype,
            modifier_func=modifier_func,
            shuffle_csr_indices=shuffle_csr_indices,
        )[0]
    raise ValueError(f"unknown storage type {stype!r}; use 'csr' or 'row_sparse'")


def create_sparse_array_zd(
    shape: tuple,
    stype: str,
    density: float,
    data_init: Any = None,
    rsp_indices: Any = None,
    dtype: Any = None,
    modifier_func: Optional[Callable] = None,
    shuffle_csr_indices: bool = False,
) -> NDArray:
    """:func:`create_sparse_array` where a row_sparse array stores exactly the rows
    ``rsp_indices`` (none when not given: its density is 0)."""
    if stype == "row_sparse":
        density = 0.0
        if rsp_indices is not None and len(rsp_indices) > shape[0]:
            raise ValueError(f"{len(rsp_indices)} row indices for {shape[0]} rows")
    return create_sparse_array(
        shape,
        stype,
        data_init=data_init,
        rsp_indices=rsp_indices,
        dtype=dtype,
        modifier_func=modifier_func,
        density=density,
        shuffle_csr_indices=shuffle_csr_indices,
    )
