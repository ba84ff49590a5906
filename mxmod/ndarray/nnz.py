"""``mx.nd.contrib.getnnz``: the number of values a csr array stores (explicit zeros
included), in all (``axis=None``, shape ``(1,)``) or per row (``axis=1``), as int64 (int32
unless JAX's x64 mode is on). Column counts (``axis=0``) MXNet 1.9.1 does not compute."""

from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from ..base import MXNetError
from .ndarray import NDArray
from .sparse import CSRNDArray


def getnnz(data: NDArray, axis: Optional[int] = None, out: Optional[NDArray] = None) -> NDArray:
    """Stored values of the csr ``data``: all of them, or per row with ``axis=1``."""
    if not isinstance(data, CSRNDArray):
        raise MXNetError(
            f"getnnz counts the values of a csr array, got {type(data).__name__} "
            f"(convert with .tostype('csr'))"
        )
    indptr = data._saux[0]
    int_type = jax.dtypes.canonicalize_dtype(np.int64)
    if axis is None:
        res = jnp.reshape(indptr[-1], (1,)).astype(int_type)
    elif axis in (1, -1):
        res = jnp.diff(indptr).astype(int_type)
    elif axis in (0, -2):
        raise NotImplementedError("getnnz(axis=0): per-column counts (MXNet has none either)")
    else:
        raise MXNetError(f"getnnz: axis {axis} is out of range for a 2-D csr array")
    if out is None:
        return NDArray(res, data.context)
    out._set_data(res.astype(out._data.dtype))
    return out
