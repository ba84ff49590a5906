"""MXNet 1.9.1's optimizer update operators given sparse inputs (``mx.nd.sgd_update`` ...).

MXNet picks a kernel from the storage types (``src/operator/optimizer_op.cc``):

* ``sgd_update``, ``sgd_mom_update``, ``adam_update`` with a row_sparse gradient and states
  of the weight's storage type (default or row_sparse): with ``lazy_update=True`` only the
  gradient's rows of the weight and states move (*lazy*); with ``lazy_update=False`` every
  row moves as with the densified gradient (*std*);
* ``ftrl_update`` with row_sparse weight, gradient and states: lazy;
* ``_sparse_adagrad_update`` (``mx.nd.sparse.adagrad_update``) and
  ``_contrib_group_adagrad_update``: lazy, only for a row_sparse gradient with a
  (default, default) or (row_sparse, row_sparse) weight and history, and (adagrad) ``wd=0``;
  anything else fails MXNet's storage inference;
* anything else (csr inputs, mixed weight/state storage, the other update operators):
  MXNet's storage fallback, the dense kernel on densified inputs.

A row_sparse weight given to a sparse kernel must store every row (MXNet's check). Results
go back in each array's own storage type: after a sparse kernel a row_sparse array stores
every row (MXNet fills missing state rows with zeros); after the fallback it stores its
non-zero rows (MXNet's cast from dense).
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ...base import MXNetError
from ..ndarray import NDArray
from ._base import BaseSparseNDArray
from ._row_sparse import RowSparseNDArray
from .parts import padded_size

DNS, RSP = "default", "row_sparse"
_LAZY_FLAG_OPS = {"sgd_update": "SGDUpdate", "sgd_mom_update": "SGDMomUpdate",
                  "adam_update": "AdamUpdate"}  # fmt: skip
_SPARSE_ONLY = {"_sparse_adagrad_update": "AdagradUpdate",
                "group_adagrad_update": "GroupAdagradUpdate"}  # fmt: skip


def any_sparse(arrays) -> bool:
    return any(isinstance(a, BaseSparseNDArray) for a in arrays)


def rows_kernel(kernel: Callable) -> Callable:
    """``kernel`` (elementwise per row) applied to rows ``rows`` only: jitted
    ``(w, rows, g_rows, *states, **hyper) -> (new_w, *new_states)``; rows equal to
    ``w.shape[0]`` are padding (read as zeros, never written)."""

    def run(w, rows, g_rows, *states, **hyper):
        def take(x):
            return x.at[rows].get(mode="fill", fill_value=0)

        res = kernel(take(w), g_rows, *(take(s) for s in states), **hyper)
        res = res if isinstance(res, tuple) else (res,)
        fulls = (w, *states)
        return tuple(f.at[rows].set(r.astype(f.dtype), mode="drop") for f, r in zip(fulls, res))

    return jax.jit(run)


def kernel_mode(name: str, w, g, states, out, hyper: dict, lazy_update: bool) -> str:
    """``'lazy'``, ``'std'`` or ``'fallback'``: which MXNet kernel runs (see the module doc).

    Raises:
        MXNetError: a sparse-only operator given storage types it has no kernel for.
    """
    ws, gs, os_ = w.stype, g.stype, out.stype
    ss = [s.stype for s in states]
    same = all(s == ws for s in ss) and os_ == ws and ws in (DNS, RSP)
    if name in _SPARSE_ONLY:
        ok = gs == RSP and same and float(hyper.get("wd", 0.0)) == 0.0
        if not ok:
            types = ", ".join([ws, gs, *ss])
            wd = hyper.get("wd", 0.0)
            raise MXNetError(
                f"Check failed: infer_stype_success: Operator not implemented: operator = "
                f"{name}, input storage types = [{types}], wd = {wd}: it needs a row_sparse "
                f"grad, weight and state(s) both default or both row_sparse, and wd=0 "
                f"(use the dense optimizer update for other cases)"
            )
        return "lazy"
    if name in _LAZY_FLAG_OPS and gs == RSP and same:
        return "lazy" if lazy_update else "std"
    if name == "ftrl_update" and gs == RSP and same and ws == RSP:
        return "lazy"
    return "fallback"


def check_all_rows(name: str, w) -> None:
    """MXNet's sparse kernels need a row_sparse weight that stores every row."""
    if isinstance(w, RowSparseNDArray) and w._saux[0].shape[0] != w.shape[0]:
        kname = _LAZY_FLAG_OPS.get(name) or _SPARSE_ONLY.get(name) or "FtrlUpdate"
        raise MXNetError(
            f"Check failed: arr.storage_shape()[0] == arr.shape()[0]: {kname} for RowSparse "
            f"weights is only implemented for RowSparse weights with all rows containing "
            f"non-zeros. Expects weights.data.shape[0] ({w._saux[0].shape[0]}) == "
            f"weights.shape[0] ({w.shape[0]}). Store every row (e.g. "
            f"weight.tostype('default').tostype('row_sparse') of a weight without zero rows)"
        )


def dense_of(x) -> jax.Array:
    return x._densify() if isinstance(x, BaseSparseNDArray) else x._data


def padded_rows(g: RowSparseNDArray) -> tuple:
    """The gradient's rows and values, padded (rows ``== shape[0]``) to a shared size."""
    rows, values = g._saux[0].astype(jnp.int32), g._sdata
    pad = padded_size(rows.shape[0]) - rows.shape[0]
    rows = jnp.concatenate([rows, jnp.full((pad,), g.shape[0], jnp.int32)])
    values = jnp.concatenate([values, jnp.zeros((pad,) + values.shape[1:], values.dtype)])
    return rows, values


def write_back(x, value: jax.Array, all_rows: bool) -> None:
    """Store dense ``value`` into ``x`` in ``x``'s storage type (``all_rows``: a row_sparse
    ``x`` stores every row, as after MXNet's sparse kernels)."""
    if not isinstance(x, BaseSparseNDArray):
        x._set_data(value.astype(x._data.dtype))
    elif all_rows and isinstance(x, RowSparseNDArray):
        rows = np.arange(x.shape[0], dtype=np.int64)
        x._set_parts(x.shape, value.astype(x._sdata.dtype), [rows])
    else:
        x._set_data(value)


def sparse_update(name: str, dense_kernel, lazy_kernel, values: list, target, hyper: dict,
                  lazy_update: bool):  # fmt: skip
    """Run update operator ``name`` on ``values = [weight, grad, *states]`` (some sparse),
    writing the new weight into ``target`` (None: a new dense array; MXNet's sparse kernels
    need ``out=weight``) and the states in place; returns the new weight.

    Raises:
        MXNetError: a sparse kernel without ``out=weight``, a row_sparse weight missing rows,
            storage types a sparse-only operator has no kernel for.
    """
    w, g, *states = values
    mode = kernel_mode(name, w, g, states, w if target is None else target, hyper, lazy_update)
    if mode != "fallback" and target is not w:
        raise MXNetError(
            f"Check failed: req == kWriteInplace: kWriteInplace is expected for sparse {name}; "
            f"pass out=weight (the sparse kernels update the weight in place)"
        )
    if mode != "fallback":
        check_all_rows(name, w)
    dense_states = [dense_of(s) for s in states]
    if mode == "lazy":
        rows, g_rows = padded_rows(g)
        res = lazy_kernel(dense_of(w), rows, g_rows, *dense_states, **hyper)
    else:
        res = dense_kernel(dense_of(w), dense_of(g), *dense_states, **hyper)
        res = res if isinstance(res, tuple) else (res,)
    new_w, *new_states = res
    all_rows = mode != "fallback"
    for arr, value in zip(states, new_states):
        write_back(arr, value, all_rows)
    if target is None:
        return NDArray(new_w.astype(dense_of(w).dtype), w.context)
    write_back(target, new_w, all_rows)
    return target
