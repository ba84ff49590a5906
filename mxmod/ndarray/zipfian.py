"""``mx.nd.contrib.rand_zipfian`` and ``mx.nd._internal._sample_unique_zipfian``: candidate
sampling from the approximately log-uniform (Zipfian) distribution over ``[0, range_max)``,
as sampled softmax uses it.

A class ``c`` has probability ``log((c + 2) / (c + 1)) / log(range_max + 1)``; draws are made
with replacement. Returns the sampled classes and the expected counts of the true and the
sampled classes (``probability * num_sampled``). MXNet gives int64/float64; mxmod int32 and
float32 (no 64-bit types without JAX's x64 mode).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..context import Context, current_context
from .creation import array
from .ndarray import NDArray
from .random import uniform


def expected_count(classes: NDArray, range_max: int, num_sampled: int) -> NDArray:
    c = classes.astype("float32")
    return ((c + 2.0) / (c + 1.0)).log() / math.log(range_max + 1) * num_sampled


def rand_zipfian(true_classes: NDArray, num_sampled: int, range_max: int, ctx: Any = None):
    """``(sampled_classes, expected_count_true, expected_count_sampled)``."""
    if not isinstance(true_classes, NDArray):
        raise TypeError(f"rand_zipfian: true_classes must be an NDArray, got {type(true_classes)}")
    if int(num_sampled) < 1 or int(range_max) < 1:
        raise ValueError(
            f"rand_zipfian: num_sampled={num_sampled} and range_max={range_max} must be >= 1"
        )
    ctx = current_context() if ctx is None else Context(ctx)
    log_range = math.log(range_max + 1)
    draws = uniform(0, log_range, shape=(int(num_sampled),), ctx=ctx)
    sampled = (draws.exp() - 1).astype("int32") % int(range_max)
    true = true_classes.as_in_context(ctx)
    return (
        sampled,
        expected_count(true, range_max, num_sampled),
        expected_count(sampled, range_max, num_sampled),
    )


def sample_unique_zipfian(range_max: int, shape: Any = None, ctx: Any = None):
    """MXNet's ``_sample_unique_zipfian``: for each of ``shape[0]`` rows, ``shape[1]``
    distinct classes of ``[0, range_max)`` drawn from the Zipfian distribution (draws
    repeat until that many distinct ones came), and the number of draws each row took.
    Returns ``(samples (rows, n), trials (rows,))`` as int32 (MXNet: int64)."""
    if shape is None or len(tuple(shape)) != 2:
        raise ValueError(f"_sample_unique_zipfian: shape {shape} must be 2-D (batch, num_sampled)")
    rows, n = (int(v) for v in shape)
    if not 0 <= n <= int(range_max):
        raise ValueError(
            f"_sample_unique_zipfian: cannot draw {n} distinct classes of range_max={range_max}"
        )
    ctx = current_context() if ctx is None else Context(ctx)
    log_range = math.log(int(range_max) + 1)
    samples, trials = np.zeros((rows, n), np.int64), np.zeros(rows, np.int64)
    for r in range(rows):
        seen: dict = {}
        while len(seen) < n:
            batch = max(16, 2 * (n - len(seen)))
            draws = uniform(0, log_range, shape=(batch,), ctx=ctx).asnumpy().astype(np.float64)
            for value in (np.exp(draws) - 1).astype(np.int64) % int(range_max):
                trials[r] += 1
                seen.setdefault(int(value), None)
                if len(seen) == n:
                    break
        samples[r] = list(seen)
    return array(samples, ctx=ctx, dtype="int32"), array(trials, ctx=ctx, dtype="int32")
