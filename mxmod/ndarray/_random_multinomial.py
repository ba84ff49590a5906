"""``mx.nd.random.multinomial`` (and ``mx.nd.sample_multinomial``): indices drawn from the
distributions along ``data``'s last axis, as MXNet's ``_sample_multinomial``; one compiled
program per (shapes, dtypes), the draw of the graph operator (``mxmod.ops.random``)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..base import MXNetError
from ..ops.random import multinomial_draw, multinomial_shape
from ._device import requested_dtype, shape_tuple
from ._programs import program
from ._random import next_key
from .ndarray import NDArray

__all__ = ["multinomial"]

_DTYPES = ("uint8", "int32", "float16", "float32", "float64")


def multinomial(
    data: NDArray,
    shape: Any = None,
    get_prob: bool = False,
    out: Any = None,
    dtype: Any = "int32",
    **kwargs: Any,
):
    """Draw ``shape`` outcomes (indices into the last axis) from each distribution in ``data``.

    Args:
        data: probabilities (floats) summing to 1 along the last axis, shape ``(..., k)``.
        shape: samples per distribution; the output is ``data.shape[:-1] + shape``
            (``(1,)`` for 1-d ``data`` and no shape).
        get_prob: also return the log-probabilities of the drawn outcomes (dtype of ``data``).
        out: an NDArray for the samples, or a list of two with ``get_prob``.
        dtype: of the samples: uint8, int32 (default), float16, float32 or float64.

    Returns:
        The samples, or ``[samples, log_probs]`` with ``get_prob``.

    Raises:
        MXNetError: for 0-d or non-float ``data``, an unknown ``dtype`` or an ``out`` of
            another shape.
    """
    extra = sorted(k for k in kwargs if k != "name")
    if extra:
        raise TypeError(f"multinomial() got unsupported keyword arguments {extra}")
    if not isinstance(data, NDArray):
        raise TypeError(f"multinomial: data must be an NDArray, got {type(data).__name__}")
    if data.ndim == 0 or not jnp.issubdtype(data.dtype, jnp.floating):
        raise MXNetError(
            f"multinomial: data must be float probabilities with the outcomes on its last axis, "
            f"got a {np.dtype(data.dtype).name} array of shape {data.shape}"
        )
    name = np.dtype(dtype).name
    if name not in _DTYPES:
        raise MXNetError(f"multinomial: dtype must be one of {', '.join(_DTYPES)}, got {name}")
    dt = requested_dtype(name, "mx.nd.random.multinomial")
    sshape = () if shape is None else shape_tuple(shape)
    ctx = data.context
    targets = [] if out is None else list(out) if isinstance(out, (list, tuple)) else [out]
    want = multinomial_shape(data.shape, sshape)
    for t in targets:
        if t.shape != want:
            raise MXNetError(
                f"multinomial: Shape inconsistent, Provided = {list(t.shape)}, inferred "
                f"shape={list(want)}; pass out arrays of shape {want}"
            )
    key = jax.device_put(next_key(ctx), ctx.jax_device)
    static = (("shape", sshape), ("get_prob", bool(get_prob)), ("dtype", dt.name))
    outs = program(multinomial_draw, static)(key, data._data)
    results = [NDArray(o, ctx) for o in outs]
    for t, r in zip(targets, results):
        t._set_data(r._data.astype(t.dtype))
    results = targets + results[len(targets) :]
    return results if get_prob else results[0]
