"""csr batches into the Module's compiled step (issue 28).

A data input whose variable is ``stype='csr'`` enters the program as ``CsrParts`` (nnz padded
to ``parts.padded_size`` buckets, so batches with different nnz share programs; split by rows
over the devices of a mesh). A batch for it may be a ``CSRNDArray`` or dense (MXNet casts a
dense batch to csr; ``NDArrayIter`` over a csr source yields dense batches). A csr batch for a
dense variable is densified (MXNet's storage fallback).
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np

from ..base import MXNetError
from ..executor.placement import MeshPlacement
from ..executor.sparse_io import device_csr_parts
from ..io._host_csr import remembered_csr
from ..ndarray import NDArray
from ..ndarray.sparse import CSRNDArray, zeros
from ..ndarray.sparse.parts import CsrParts, csr_parts, padded_size
from ..optimizer.lazy import supports_lazy
from ..symbol.stype import variable_stypes

__all__ = [
    "csr_input_names",
    "dense_batch_array",
    "lazy_rows",
    "place_csr",
    "prepare_rows",
    "same_csr_sizes",
]


def csr_input_names(group) -> frozenset:
    """The bound inputs whose variable is ``stype='csr'`` (computed once per group)."""
    known = group.__dict__.get("_csr_inputs")
    if known is None:
        stypes = variable_stypes(group.symbol)
        names = list(group.data_names) + list(group.label_names or [])
        known = group._csr_inputs = frozenset(n for n in names if stypes.get(n) == "csr")
    return known


def dense_batch_array(arr):
    """A batch array for a dense variable: a sparse one densified (MXNet's fallback)."""
    if getattr(arr, "stype", "default") != "default":
        return arr.tostype("default")
    return arr


def _as_csr(name, arr):
    """The batch as a CSRNDArray, or a dense batch as its 2-D host array."""
    if isinstance(arr, CSRNDArray):
        return arr
    if getattr(arr, "stype", "default") != "default":
        raise MXNetError(
            f"data {name!r} is a csr input but the batch holds a {arr.stype} array; give a "
            "CSRNDArray or a dense array"
        )
    host = arr.asnumpy() if isinstance(arr, NDArray) else np.asarray(arr)
    if host.ndim != 2:
        raise MXNetError(f"data {name!r} is a csr input: its batch must be 2-D, got {host.shape}")
    return host


def _host_csr_parts(host: np.ndarray) -> CsrParts:
    """``CsrParts`` of a dense host batch (MXNet's cast to csr), built on the host."""
    rows, cols = np.nonzero(host)
    nnz, size = rows.shape[0], padded_size(rows.shape[0])
    pad = size - nnz
    n_rows, n_cols = host.shape
    return CsrParts(
        data=np.concatenate([host[rows, cols], np.zeros(pad, host.dtype)]),
        rows=np.concatenate([rows.astype(np.int32), np.full(pad, n_rows, np.int32)]),
        cols=np.concatenate([cols.astype(np.int32), np.full(pad, n_cols, np.int32)]),
        shape=(n_rows, n_cols),
    )


def place_csr(progs, name, desc, arr, target):
    """``CsrParts`` of the batch array ``arr`` for the csr input ``name``, on ``target``
    (the input's sharding)."""
    rows = remembered_csr(arr)  # a dense batch NDArrayIter made from csr rows
    mesh = isinstance(progs.placement, MeshPlacement) and progs.placement.n > 1
    if rows is not None and not mesh and tuple(rows.shape) == tuple(desc.shape):
        if np.dtype(rows.dtype) == np.dtype(desc.dtype):
            return jax.tree_util.tree_map(lambda x: jax.device_put(x, target), rows.parts())
    csr = _as_csr(name, arr)
    if tuple(csr.shape) != tuple(desc.shape):
        raise MXNetError(
            f"data {name!r} has shape {tuple(csr.shape)} but the module is bound with "
            f"{tuple(desc.shape)} (provide_data/provide_label)"
        )
    if np.dtype(csr.dtype) != np.dtype(desc.dtype):
        csr = csr.astype(desc.dtype)
    placement = progs.placement
    if placement.processes > 1:
        raise NotImplementedError(
            f"csr input {name!r} in a multi-process (dist) Module is not supported by mxmod; "
            "declare the data variable dense (no stype='csr')"
        )
    if isinstance(csr, np.ndarray):  # a dense batch: cast on the host
        if not mesh:
            parts = _host_csr_parts(csr)
            return jax.tree_util.tree_map(lambda x: jax.device_put(x, target), parts)
        csr = NDArray(csr).tostype("csr")
    parts = device_csr_parts(csr, placement.n) if mesh else csr_parts(csr)
    return jax.tree_util.tree_map(lambda x: jax.device_put(x, target), parts)


def lazy_rows(group, optimizer) -> tuple:
    """The parameters whose row_sparse gradients ``optimizer`` applies lazily in MXNet 1.9.1
    (``optimizer.lazy.supports_lazy``, given the weight's storage type); the others' are
    applied dense (MXNet's std update)."""
    names = getattr(group._progs, "row_sparse", ())
    if not names:
        return ()
    stypes = group.__dict__.get("_var_stypes")
    if stypes is None:
        stypes = group._var_stypes = variable_stypes(group.symbol)
    return tuple(n for n in names if supports_lazy(optimizer, stypes.get(n, "default")))


def prepare_rows(module, data_batch, sparse_row_id_fn) -> None:
    """``Module.prepare(data_batch, sparse_row_id_fn)`` as MXNet 1.9.1: without a kvstore
    that updates the weights a warning says the function is not needed; else its result,
    ``{parameter name: row ids}``, is checked and each row_sparse parameter's rows are
    pulled (``row_sparse_pull``) into a RowSparseNDArray of the parameter's shape.

    With a compiled (fused) optimizer the kvstore holds no weights: the devices hold every
    row of each weight, always current, so there is nothing to pull (the checks still run).
    Otherwise (an optimizer run through MXNet's kvstore updater) the rows are pulled.

    Raises:
        AssertionError: ``sparse_row_id_fn`` did not return a dict (MXNet's assert).
        ValueError: a name that is not a parameter of the module.
    """
    kv = module._kvstore if module.optimizer_initialized else None
    if kv is None or not module._update_on_kvstore:
        warnings.warn(
            UserWarning(
                "Parameters are not updated in the KVStore. No need to call sparse_row_id_fn."
            ),
            stacklevel=3,
        )
        return
    row_ids = sparse_row_id_fn(data_batch)
    if not isinstance(row_ids, dict):
        raise AssertionError(
            f"Expected dict output from sparse_row_id_fn, got {type(row_ids).__name__}: "
            "return {parameter name: row ids}"
        )
    group = module._exec_group
    stypes = group.__dict__.get("_var_stypes")
    if stypes is None:
        stypes = group._var_stypes = variable_stypes(group.symbol)
    for name, rows in row_ids.items():
        if name not in group.param_names:
            raise ValueError(
                f"sparse_row_id_fn named {name!r}, which is not a parameter of the module; "
                f"its parameters are {list(group.param_names)}"
            )
        if stypes.get(name) != "row_sparse":
            warnings.warn(
                UserWarning(
                    f"{name}.stype is not 'row_sparse'. No need to perform row_sparse_pull."
                ),
                stacklevel=3,
            )
            continue
        if group.state.opt.fused:
            continue  # the compiled step's weights are whole: no rows to fetch
        like = module._arg_params[name]
        out = zeros("row_sparse", like.shape, dtype=like.dtype)
        kv.row_sparse_pull(name, out=out, row_ids=rows, priority=-group.param_names.index(name))


def _repad(parts: CsrParts, size: int) -> CsrParts:
    """``parts`` with its entries padded to ``size`` (along the last axis: a mesh batch's
    parts carry a leading device axis)."""
    extra = size - parts.data.shape[-1]
    if extra == 0:
        return parts
    widths = [(0, 0)] * (parts.data.ndim - 1) + [(0, extra)]
    n_rows, n_cols = parts.shape
    return CsrParts(
        data=jnp.pad(parts.data, widths),
        rows=jnp.pad(parts.rows, widths, constant_values=n_rows),
        cols=jnp.pad(parts.cols, widths, constant_values=n_cols),
        shape=parts.shape,
    )


def same_csr_sizes(block: list) -> list:
    """The inputs of a block of steps (``fit(steps_per_dispatch=n)``) with each csr input
    padded to the block's largest entry count: the steps' inputs are stacked."""
    names = [n for n, v in block[0].items() if isinstance(v, CsrParts)]
    if not names:
        return block
    out = [dict(inputs) for inputs in block]
    for name in names:
        size = max(inputs[name].data.shape[-1] for inputs in block)
        for inputs in out:
            inputs[name] = _repad(inputs[name], size)
    return out
