"""Sparse arrays at the executor's edge: bound CSRNDArray/RowSparseNDArray arguments as the
values a program takes, and ``RowParts`` gradients written into RowSparseNDArray
gradient arrays (a host step: the imperative ``backward``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..ndarray.sparse import BaseSparseNDArray, CSRNDArray, RowSparseNDArray
from ..ndarray.sparse.parts import CsrParts, RowParts, csr_parts, padded_size


def _on(arr, device):
    return arr if device is None else jax.device_put(arr, device)


def program_value(arr, device, dense: bool = False):
    """What a program reads for argument ``arr``: a csr array as ``CsrParts`` (its nnz
    padded, ``parts.padded_size``) unless ``dense``; a row_sparse one as its dense values
    (programs keep weights dense); a dense array as itself."""
    if isinstance(arr, CSRNDArray) and not dense:
        return jax.tree_util.tree_map(lambda x: _on(jnp.asarray(x), device), csr_parts(arr))
    if isinstance(arr, BaseSparseNDArray):
        return _on(arr.tostype("default")._data, device)
    return _on(arr._data, device)


def store_sparse_grad(target, grad, add: bool) -> None:
    """Write a gradient (``RowParts`` or dense) into the sparse gradient array ``target``
    (``add``: MXNet's ``grad_req='add'``, stored rows united)."""
    if not isinstance(target, RowSparseNDArray):
        dense = grad.dense() if isinstance(grad, RowParts) else grad
        if add:
            dense = dense + target.tostype("default")._data
        target._set_data(np.asarray(dense))
        return
    n = target.shape[0]
    if isinstance(grad, RowParts):
        rows, values = np.asarray(grad.rows), np.asarray(grad.values)
        keep = rows < n
        rows, values = rows[keep].astype(np.int64), values[keep]
    else:
        values = np.asarray(grad)
        rows = np.arange(n, dtype=np.int64)
    if add:
        rows = np.concatenate([np.asarray(target._saux[0]).astype(np.int64), rows])
        values = np.concatenate([np.asarray(target._sdata).astype(values.dtype), values])
    uniq, inv = np.unique(rows, return_inverse=True)
    if len(uniq) != len(rows) or (len(rows) > 1 and np.any(np.diff(rows) < 0)):
        summed = np.zeros((len(uniq),) + values.shape[1:], values.dtype)
        np.add.at(summed, inv.reshape(-1), values)
        rows, values = uniq, summed
    target._set_parts(target.shape, values.astype(target.dtype), [rows])


def device_csr_parts(arr, n_devices: int) -> CsrParts:
    """A csr batch split by rows over ``n_devices`` for a mesh program: each part's arrays
    gain a leading device axis (split by the batch's ``P(axis)``; ``local_inputs`` drops it
    inside the program), rows numbered within each device's slice, one padded size."""
    n_rows = arr.shape[0]
    if n_rows % n_devices:
        raise ValueError(f"a csr batch of {n_rows} rows does not split over {n_devices} devices")
    step = n_rows // n_devices
    indptr = np.asarray(arr._saux[0])
    nnz = [int(indptr[(k + 1) * step] - indptr[k * step]) for k in range(n_devices)]
    size = padded_size(max(nnz))
    parts = [csr_parts(arr[k * step : (k + 1) * step], size) for k in range(n_devices)]
    return CsrParts(
        *(np.stack([getattr(p, f) for p in parts]) for f in ("data", "rows", "cols")),
        shape=(step, arr.shape[1]),
    )


def local_inputs(inputs: dict) -> dict:
    """Inside a per-device program: a ``device_csr_parts`` input without its device axis."""
    return {
        n: CsrParts(v.data[0], v.rows[0], v.cols[0], v.shape)
        if isinstance(v, CsrParts) and v.data.ndim == 2
        else v
        for n, v in inputs.items()
    }
