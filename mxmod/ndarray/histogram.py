"""``mx.nd.histogram``: NumPy's ``histogram`` on an NDArray (the ``_histogram`` operator)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .creation import array
from .ndarray import NDArray
from .op_table import nd_function

_histogram = nd_function("_histogram")


def histogram(a: NDArray, bins: Any = 10, range: Any = None, **kwargs: Any):  # noqa: A002
    """``(counts, edges)`` of ``a``'s values: ``bins`` equal bins over ``range`` (a pair),
    or the bins whose edges the NDArray ``bins`` holds. Without ``range`` NumPy picks it
    from the data on the host, as MXNet does (with its warning)."""
    if not isinstance(a, NDArray):
        raise TypeError(f"histogram: a must be an NDArray, got {type(a).__name__}")
    if isinstance(bins, NDArray):
        return _histogram(a, bins, **kwargs)
    if not isinstance(bins, (int, np.integer)):
        raise ValueError(f"histogram: bins must be an int or an NDArray of edges, got {bins!r}")
    if range is None:
        warnings.warn(
            "range is not specified, using numpy's result to ensure consistency with numpy"
        )
        counts, edges = np.histogram(a.asnumpy(), bins=int(bins))
        return array(counts, ctx=a.context, dtype="int32"), array(edges, ctx=a.context)
    return _histogram(a, bin_cnt=int(bins), range=tuple(range), **kwargs)
