"""NDArrayIter's inputs: naming them as MXNet does, host copies of them, and sending a
batch's host arrays to devices."""

from __future__ import annotations

from collections import OrderedDict

import jax
import numpy as np
from jax.sharding import SingleDeviceSharding

from ..context import current_context
from ..ndarray import NDArray
from ._host_csr import DenseRows, HostCsr, is_csr_source, remember_csr


def to_host(name, value):
    """Host numpy copy of one input: NDArray/jax arrays keep their dtype, anything else
    becomes float32 (as MXNet's ``mx.nd.array``)."""
    if is_csr_source(value):
        return HostCsr.from_source(value)
    sparse = getattr(value, "stype", "default") != "default"
    if isinstance(value, NDArray) and not sparse:
        return value.asnumpy()
    if isinstance(value, jax.Array):
        return np.asarray(value)
    if sparse or type(value).__module__.startswith("scipy.sparse"):
        kind = getattr(value, "stype", None) or f"scipy {getattr(value, 'format', '?')}"
        raise NotImplementedError(
            f"NDArrayIter: input {name!r} has {kind} storage; NDArrayIter takes dense arrays "
            "and csr (CSRNDArray or scipy.sparse.csr_matrix): convert it with "
            ".tostype('csr') / .tocsr() or to a dense array"
        )
    try:
        out = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError):
        raise TypeError(
            f"Invalid type '{type(value)}' for {name}, should be NDArray, numpy.ndarray "
            "or a list/dict of them"
        ) from None
    if out.ndim == 0:
        raise TypeError(f"NDArrayIter input {name!r} is a scalar; it needs a batch axis")
    return out


def to_nd(arrays):
    """NDArrays on the current context from host arrays: one batched ``device_put``
    (``(HostCsr, positions)`` pairs become CSRNDArrays)."""
    ctx = current_context()
    arrays = list(arrays)
    dense = [a for a in arrays if not isinstance(a, tuple)]
    placed = iter(jax.device_put(dense, ctx.jax_device))
    return [
        a[0].to_ndarray(a[1], ctx) if isinstance(a, tuple) else NDArray(next(placed), ctx)
        for a in arrays
    ]


def send(arrays, targets):
    """NDArrays of host batch arrays on ``targets`` (shardings; None: the current context).

    One batched ``jax.device_put``: it compiles nothing (``jnp.asarray`` compiles a copy
    program per new shape) and commits the arrays to their device, so a compiled step
    reading them is the one its later batches find again.
    """
    if targets is None:
        targets = [SingleDeviceSharding(current_context().jax_device)] * len(arrays)
    out = [NDArray(x) for x in jax.device_put(list(arrays), list(targets))]
    for host, arr in zip(arrays, out):
        if isinstance(host, DenseRows):  # rows of a csr source: a Module may want them
            remember_csr(arr, host.csr)
    return out


def named_inputs(data, allow_empty, default_name):
    """``{name: input}`` as MXNet's ``io.utils._init_data`` names them."""
    if data is None:
        if not allow_empty:
            raise ValueError("NDArrayIter needs data: got None")
        data = []
    if isinstance(data, (np.ndarray, NDArray, jax.Array)) or (
        hasattr(data, "shape") and not isinstance(data, (list, tuple, dict))
    ):
        data = [data]
    if isinstance(data, (list, tuple)):
        if not data and not allow_empty:
            raise ValueError("NDArrayIter needs at least one data array: got an empty list")
        if len(data) == 1:
            data = OrderedDict([(default_name, data[0])])
        else:
            data = OrderedDict(("_%d_%s" % (i, default_name), d) for i, d in enumerate(data))
    if not isinstance(data, dict):
        raise TypeError(
            "Input must be NDArray, numpy.ndarray, a list of them or dict with them as "
            f"values: got {type(data).__name__}"
        )
    return dict(data)
