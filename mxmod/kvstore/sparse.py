"""Row_sparse values in the KVStore (MXNet 1.9.1's ``kvstore_local.h`` / ``comm.h`` rules).

* **push**: a value is dense or row_sparse (csr is refused). The values of a key merge into
  the storage type of the first one; row_sparse values sum over the union of their stored
  rows (sorted), a single value is taken as it is (its stored zero rows stay stored).
* **pull**: ``out`` arrays that are not dense are skipped unless ``ignore_sparse=False``;
  then each ``out`` takes the stored value cast to its own storage (dense -> row_sparse
  stores the non-zero rows; nothing converts between row_sparse and csr).
* **row_sparse_pull**: the stored value must be row_sparse and every ``out`` row_sparse;
  ``out`` stores one row per distinct id of ``row_ids`` (flattened, truncated to integers,
  sorted), the stored row or zeros.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base import MXNetError
from ..ndarray import NDArray
from ..ndarray.sparse import RowSparseNDArray
from .base import _on

__all__ = [
    "check_push_value",
    "copy_into",
    "merge_row_sparse",
    "retained_rows",
    "unique_ids",
    "write_row_sparse",
]


def stype_of(arr: Any) -> str:
    return getattr(arr, "stype", "default")


def is_sparse(arr: Any) -> bool:
    return stype_of(arr) != "default"


def check_push_value(key: Any, value: Any) -> None:
    """Refuse what MXNet's push refuses: non-NDArrays and csr values."""
    if not isinstance(value, NDArray):
        raise TypeError(
            f"push: key {key!r} got a {type(value).__name__}; push an NDArray or a list of "
            f"NDArrays (one per device)"
        )
    if stype_of(value) not in ("default", "row_sparse"):
        raise MXNetError(
            f"Unexpected storage type detected during kvstore push: {value.stype} (key "
            f"{key!r}); push dense or row_sparse values (convert with .tostype('default'))"
        )


def host_rows(value: NDArray) -> tuple:
    """``(rows, data)`` on the host: a row_sparse value's parts, or a dense value's
    non-zero rows (MXNet's cast to row_sparse)."""
    if isinstance(value, RowSparseNDArray):
        return np.asarray(value._saux[0]).astype(np.int64), np.asarray(value._sdata)
    host = np.asarray(value._data)
    rows = np.flatnonzero(host.reshape(host.shape[0], -1).any(axis=1))
    return rows, host[rows]


def write_row_sparse(dst: RowSparseNDArray, rows: np.ndarray, data: np.ndarray) -> None:
    """``dst`` now stores ``data`` at ``rows`` (its own dtype and context kept); a dense
    ``dst`` (an extra out of ``row_sparse_pull``, which MXNet fills by ``copyto``) takes
    them with zeros elsewhere."""
    if stype_of(dst) == "default":
        dense = np.zeros(dst.shape, data.dtype)
        dense[rows] = data
        dst._set_data(_on(dense, dst))
        return
    if stype_of(dst) != "row_sparse":
        raise MXNetError(
            f"copying ndarray of stype row_sparse to stype {stype_of(dst)} is not supported; "
            f"pass row_sparse (or dense) outs"
        )
    new = RowSparseNDArray._from_parts(
        dst.shape, np.ascontiguousarray(data, dtype=dst.dtype), [rows], dst.context
    )
    dst._set_parts(new.shape, new._sdata, new._saux)


def merge_row_sparse(values: list, shape: tuple, dtype: Any, ctx: Any) -> RowSparseNDArray:
    """The sum of ``values`` (row_sparse, or dense cast to row_sparse) as a row_sparse
    array on ``ctx``: the union of the stored rows, ascending.

    Summed on the host (as MXNet's local store sums on the CPU): the number of rows
    changes every push, and device programs would compile for each new count."""
    parts = [host_rows(v) for v in values]
    if len(parts) == 1:
        rows, total = parts[0]
    else:
        rows = np.unique(np.concatenate([r for r, _ in parts]))
        total = np.zeros((len(rows),) + tuple(shape[1:]), dtype)
        for part_rows, data in parts:  # a row_sparse value's rows are unique
            total[np.searchsorted(rows, part_rows)] += data.astype(dtype)
    return RowSparseNDArray._from_parts(
        shape, np.ascontiguousarray(total, dtype=dtype), [rows], ctx
    )


def host_dense(value: NDArray) -> np.ndarray:
    """A row_sparse or dense value as a host array."""
    if not isinstance(value, RowSparseNDArray):
        return np.asarray(value._data)
    rows, data = host_rows(value)
    dense = np.zeros(value.shape, data.dtype)
    dense[rows] = data
    return dense


def copy_into(key: Any, stored: NDArray, dst: NDArray) -> None:
    """Write ``stored`` into ``dst`` in ``dst``'s storage type, dtype and context."""
    if tuple(dst.shape) != tuple(stored.shape):
        raise MXNetError(
            f"pull: key {key!r} holds shape {tuple(stored.shape)}, out has shape {tuple(dst.shape)}"
        )
    src_stype, dst_stype = stype_of(stored), stype_of(dst)
    if "default" not in (src_stype, dst_stype) and src_stype != dst_stype:
        raise MXNetError(
            f"pull: key {key!r} holds a {src_stype} value, which cannot be copied into a "
            f"{dst_stype} out (copying ndarray of stype {src_stype} to stype {dst_stype} is "
            f"not supported); pull into a dense or {src_stype} array"
        )
    if src_stype == "csr" or dst_stype == "csr":
        stored.copyto(dst)
    elif dst_stype == "row_sparse":
        write_row_sparse(dst, *host_rows(stored))
    elif src_stype == "row_sparse":  # into a dense out
        dst._set_data(_on(host_dense(stored), dst))
    else:
        stored.copyto(dst)


def unique_ids(key: Any, row_ids: NDArray, num_rows: int) -> np.ndarray:
    """The distinct rows of ``row_ids`` (any shape; floats truncated, as MXNet's int64
    cast), ascending.

    Raises:
        MXNetError: a row id outside ``[0, num_rows)``.
    """
    ids = np.unique(np.asarray(row_ids.asnumpy()).ravel().astype(np.int64))
    bad = ids[(ids < 0) | (ids >= num_rows)]
    if bad.size:
        raise MXNetError(
            f"row_sparse_pull: key {key!r} has {num_rows} rows but row_ids ask for rows "
            f"{bad.tolist()}; pass row ids in [0, {num_rows})"
        )
    return ids


def retained_rows(key: Any, stored: NDArray, shape: tuple, row_ids: NDArray) -> tuple:
    """``(rows, data)`` an out of ``shape`` stores after ``row_sparse_pull``: one row per
    distinct id, the row of the row_sparse ``stored`` value or zeros (nothing when
    ``stored`` stores nothing, as MXNet's retain)."""
    if not isinstance(stored, RowSparseNDArray):
        raise MXNetError(
            f"PullRowSparse expects row_sparse src NDArray: key {key!r} holds a "
            f"{stype_of(stored)} value; use pull(key, out=...) for it"
        )
    if tuple(shape) != tuple(stored.shape):
        raise MXNetError(
            f"row_sparse_pull: key {key!r} holds shape {tuple(stored.shape)}, out has shape "
            f"{tuple(shape)}"
        )
    ids = unique_ids(key, row_ids, stored.shape[0])
    have, data = host_rows(stored)
    if not len(have):
        return have, data
    pos = np.minimum(np.searchsorted(have, ids), len(have) - 1)
    found = have[pos] == ids
    out = np.zeros((len(ids),) + data.shape[1:], data.dtype)
    out[found] = data[pos[found]]
    return ids, out


def row_sparse_pairs(key: Any, out: Any, row_ids: Any) -> tuple:
    """``row_sparse_pull``'s arguments as checked ``(key, out, row_ids)`` triples, and the
    outs that take a copy of ``out[0]`` (one ``row_ids`` for a list of outs, as MXNet)."""
    if isinstance(row_ids, NDArray):
        row_ids = [row_ids]
    if not isinstance(row_ids, list):
        raise TypeError(
            f"row_ids should be NDArray or list of NDArray, got {type(row_ids).__name__}"
        )
    first_out, rest = out, []
    if len(row_ids) == 1 and isinstance(out, list):  # pull once, copy to the others
        first_out, rest = [out[0]], out[1:]
    outs = _flat(key, first_out, "row_sparse_pull")
    ids = _flat(key, row_ids, "row_sparse_pull row_ids")
    if len(outs) != len(ids):
        raise ValueError(
            f"row_sparse_pull: the number of row_ids ({len(ids)}) doesn't match the number "
            f"of values ({len(outs)}); pass one row_ids per out array, or one NDArray for all"
        )
    triples = [(k, dst, rid) for (k, dst), (_, rid) in zip(outs, ids)]
    for k, dst, rid in triples:
        check_row_sparse_pair(k, dst, rid)
    return triples, rest


def _flat(key: Any, values: Any, what: str) -> list:
    """``(key, array)`` for every array of ``values`` (MXNet's key-value flattening)."""
    if isinstance(key, (list, tuple)):
        if not isinstance(values, (list, tuple)) or len(values) != len(key):
            n = len(values) if isinstance(values, (list, tuple)) else 1
            raise ValueError(f"{what}: {len(key)} keys need {len(key)} entries, got {n}")
        return [p for k, v in zip(key, values) for p in _flat(k, v, what)]
    return [(key, v) for v in (values if isinstance(values, (list, tuple)) else [values])]


def check_row_sparse_pair(key: Any, dst: Any, row_ids: Any) -> None:
    """MXNet's checks of one (out, row_ids) pair of ``row_sparse_pull``."""
    if not isinstance(dst, NDArray) or stype_of(dst) != "row_sparse":
        raise MXNetError(
            f"Expected row_sparse storage type for row_sparse_pull values, but detected "
            f"storage type {stype_of(dst) if isinstance(dst, NDArray) else type(dst).__name__} "
            f"(key {key!r}); pull into a RowSparseNDArray (mx.nd.sparse.zeros('row_sparse', "
            f"shape)) or use pull() for dense outputs"
        )
    if not isinstance(row_ids, NDArray):
        raise TypeError(
            f"row_sparse_pull: row_ids of key {key!r} must be an NDArray or a list of "
            f"NDArrays, got {type(row_ids).__name__}; wrap them with mx.nd.array(...)"
        )
    if stype_of(row_ids) != "default":
        raise MXNetError(
            f"Expected default storage type for row_sparse_pull rowids, but detected storage "
            f"type {row_ids.stype} (key {key!r}); pass dense row ids"
        )


def rank0_copy(v: NDArray) -> NDArray:
    """Rank 0's ``v`` on every worker (a multi-worker store's ``init``)."""
    from jax.experimental import multihost_utils

    if stype_of(v) == "row_sparse":
        dense = multihost_utils.broadcast_one_to_all(v.asnumpy())
        mask = multihost_utils.broadcast_one_to_all(to_host_mask(v))
        return from_dense_rows(np.asarray(dense), np.asarray(mask), v.dtype, v.context)
    if stype_of(v) != "default":
        raise NotImplementedError(
            f"init of a {v.stype} value in a multi-worker store; init a dense or row_sparse value"
        )
    data = multihost_utils.broadcast_one_to_all(np.asarray(v._data))
    return NDArray(_on(data, v), v.context)


def to_host_mask(value: NDArray) -> np.ndarray:
    """Which rows a row_sparse value stores, as a boolean mask (for gathering workers)."""
    mask = np.zeros(value.shape[0], bool)
    mask[np.asarray(value._saux[0]).astype(np.int64)] = True
    return mask


def from_dense_rows(dense: np.ndarray, mask: np.ndarray, dtype: Any, ctx: Any) -> RowSparseNDArray:
    """A row_sparse array storing the rows ``mask`` of the host array ``dense``."""
    rows = np.flatnonzero(mask)
    return RowSparseNDArray._from_parts(dense.shape, dense[rows].astype(dtype), [rows], ctx)
