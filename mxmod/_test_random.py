"""MXNet's generator checks for ``mx.test_utils``: ``mean_check``, ``var_check``,
``chi_square_check``, ``verify_generator`` and ``gen_buckets_probs_with_ppf``.

``generator(n)`` returns ``n`` samples (anything ``np.asarray`` takes). The chi-square
p-value is ``Q(k / 2, x / 2)`` (the chi-square survival function, regularised upper
incomplete gamma) for ``k = len(buckets) - 1`` degrees of freedom: what
``scipy.stats.chisquare`` gives, without needing scipy.
"""

from __future__ import annotations

from typing import Callable

import jax.scipy.special as jsp
import numpy as np


def gen_buckets_probs_with_ppf(ppf: Callable, nbuckets: int):
    """``nbuckets`` equally likely buckets ``(ppf(i/n), ppf((i+1)/n))`` and their
    probabilities, from a distribution's quantile function."""
    if nbuckets <= 0:
        raise ValueError(f"nbuckets must be positive, got {nbuckets}")
    buckets = [(ppf(i / nbuckets), ppf((i + 1) / nbuckets)) for i in range(nbuckets)]
    return buckets, [1.0 / nbuckets] * nbuckets


def mean_check(generator: Callable, mu: float, sigma: float, nsamples: int = 1000000) -> bool:
    """Whether the sample mean lies within 3 standard errors of ``mu``."""
    mean = np.asarray(generator(nsamples)).mean()
    bound = 3 * sigma / np.sqrt(nsamples)
    return bool(mu - bound < mean < mu + bound)


def var_check(generator: Callable, sigma: float, nsamples: int = 1000000) -> bool:
    """Whether the sample variance lies within 3 standard errors of ``sigma ** 2``."""
    var = np.asarray(generator(nsamples)).var(ddof=1)
    bound = 3 * np.sqrt(2 * sigma**4 / (nsamples - 1))
    return bool(sigma**2 - bound < var < sigma**2 + bound)


def _observed(samples: np.ndarray, buckets: list) -> np.ndarray:
    if isinstance(buckets[0], (list, tuple)):  # continuous: (low, high) intervals
        edges = np.asarray([x for b in buckets for x in b], dtype=np.float64)
        if np.any(np.diff(edges) < 0):
            raise ValueError(f"buckets must be ordered, non-overlapping intervals: {buckets}")
        # MXNet's rule: a sample counts for the first bucket whose high edge is above it
        ids = np.searchsorted(edges, samples, side="right") // 2
        return np.bincount(ids, minlength=len(buckets) + 1)[: len(buckets)]
    return np.array([(samples == b).sum() for b in buckets])  # discrete values


def chi_square_check(generator: Callable, buckets: list, probs: list, nsamples: int = 1000000):
    """``(p_value, observed, expected)`` of a chi-square test of ``generator``'s samples
    against bucket probabilities ``probs`` (buckets: ``(low, high)`` intervals or values)."""
    if not isinstance(buckets, list) or len(buckets) != len(probs):
        raise ValueError("buckets must be a list with one probability per bucket")
    samples = np.asarray(generator(nsamples)).ravel()
    observed = _observed(samples, buckets)
    expected = (nsamples * np.asarray(probs, dtype=np.float32)).astype(np.int32)
    stat = float((((observed - expected) ** 2) / expected).sum())
    dof = len(buckets) - 1
    p = float(jsp.gammaincc(dof / 2.0, stat / 2.0)) if dof > 0 else 1.0
    return p, observed, expected


def verify_generator(
    generator: Callable,
    buckets: list,
    probs: list,
    nsamples: int = 1000000,
    nrepeat: int = 5,
    success_rate: float = 0.2,
    alpha: float = 0.05,
):
    """Run ``chi_square_check`` ``nrepeat`` times; fail unless at least ``success_rate`` of
    the p-values exceed ``alpha``. Returns the p-values."""
    results = [chi_square_check(generator, buckets, probs, nsamples) for _ in range(nrepeat)]
    pvalues = [r[0] for r in results]
    if sum(p > alpha for p in pvalues) < nrepeat * success_rate:
        raise AssertionError(
            f"Generator test fails, Chi-square p={pvalues}, obs_freq={[r[1] for r in results]}, "
            f"expected_freq={[r[2] for r in results]}.\nbuckets={buckets}, probs={probs}"
        )
    return pvalues
