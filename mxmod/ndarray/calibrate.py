"""``mx.nd.contrib.calibrate_entropy``: the KL-divergence calibration threshold of a
histogram (TensorRT's entropy calibration, as MXNet 1.9.1's CPU kernel computes it).

For each candidate half-width ``i`` (from ``num_quantized_bins // 2`` to the middle bin),
the histogram clipped to the ``2i + 1`` central bins (the outer mass folded into the end
bins: everything up to and including the start bin into the first, as MXNet does) is
``p``; ``q`` is that slice merged into ``num_quantized_bins`` bins and spread back over the
slice's nonzero bins. Both are smoothed (zeros become 1e-4, taken from the nonzeros) and
the threshold is the right edge of the candidate with the least ``KL(p || q)``. Host numpy
in float32, like MXNet's CPU-only kernel; returns ``[threshold, divergence]`` (each of
shape (1,))."""

from __future__ import annotations

import numpy as np

from ..base import MXNetError
from .creation import array as _array


def _smooth(p: np.ndarray, eps: float = 1e-4):
    zeros = p == 0
    n_zeros = int(zeros.sum())
    n_nonzeros = p.size - n_zeros
    if not n_nonzeros:
        return None
    eps1 = np.float32(eps) * np.float32(n_zeros) / np.float32(n_nonzeros)
    if eps1 >= 1.0:
        return None
    return (p + np.where(zeros, np.float32(eps), -eps1)).astype(np.float32)


def _kl(p: np.ndarray, q: np.ndarray) -> np.float32:
    p = p / np.float32(p.sum(dtype=np.float32))
    q = q / np.float32(q.sum(dtype=np.float32))
    return np.float32(np.sum(p * np.log(p / q), dtype=np.float32))


def calibrate_entropy(hist, hist_edges, num_quantized_bins: int = 255, out=None):
    counts = hist.asnumpy().astype(np.float32).ravel()
    edges = hist_edges.asnumpy().astype(np.float32).ravel()
    n = counts.size
    if edges.size != n + 1:
        raise MXNetError(
            f"calibrate_entropy: hist_edges must have len(hist) + 1 = {n + 1} entries, "
            f"got {edges.size}"
        )
    half_q = int(num_quantized_bins) // 2
    middle = n // 2
    if half_q > middle:
        raise MXNetError(
            f"calibrate_entropy: num_quantized_bins={num_quantized_bins} needs a histogram of "
            f"at least {2 * half_q + 1} bins, got {n}"
        )
    integral = counts.astype(np.uint64)  # MXNet merges the slice's counts as integers
    best, best_threshold = np.float32(np.finfo(np.float32).max), np.float32(0)
    for i in range(half_q, middle + 1):
        start, stop = middle - i, middle + i + 1
        sliced = integral[start:stop].copy()
        sliced[0] = 0
        p = counts[start:stop].copy()
        p[0] = counts[: start + 1].sum(dtype=np.float32)
        p[-1] = counts[stop - 1] + counts[stop:].sum(dtype=np.float32)
        merged = sliced.size // num_quantized_bins
        bins = sliced[: num_quantized_bins * merged].reshape(num_quantized_bins, merged).sum(1)
        bins[-1] += sliced[num_quantized_bins * merged :].sum()
        starts = np.arange(num_quantized_bins) * merged  # the last bin runs to the end
        norms = np.add.reduceat((sliced != 0).astype(np.int64), starts)
        lengths = np.diff(np.append(starts, sliced.size))
        share = np.where(norms > 0, bins.astype(np.float32) / np.maximum(norms, 1), 0)
        q = np.where(p != 0, np.repeat(share.astype(np.float32), lengths), 0).astype(np.float32)
        p, q = _smooth(p), _smooth(q)
        divergence = np.float32(np.inf) if q is None or p is None else _kl(p, q)
        if divergence < best:
            best, best_threshold = divergence, edges[stop]
    result = [_array([best_threshold], dtype="float32"), _array([best], dtype="float32")]
    if out is not None:
        for target, value in zip(out, result):
            target[:] = value
        return out
    return result
