"""``mx.test_utils``' generator checks (MXNet's random-operator test helpers): chi-square
p-values as ``scipy.stats.chisquare`` gives them, and the verdicts on right and wrong
generators."""

import math

import numpy as np
import pytest
from jax.scipy.special import ndtri

import mxmod as mx
from mxmod.test_utils import (
    chi_square_check,
    gen_buckets_probs_with_ppf,
    mean_check,
    var_check,
    verify_generator,
)


def normal_ppf(q):
    return -np.inf if q == 0 else np.inf if q == 1 else float(ndtri(q))


def fixed(values):
    return lambda n: np.asarray(values)


def test_chi_square_p_value():
    # observed [10, 20, 30, 40] against 25 each: statistic 20 on 3 degrees of freedom;
    # scipy.stats.chisquare gives p = 1.6974e-04
    samples = np.repeat([0, 1, 2, 3], [10, 20, 30, 40])
    p, observed, expected = chi_square_check(fixed(samples), [0, 1, 2, 3], [0.25] * 4, 100)
    np.testing.assert_array_equal(observed, [10, 20, 30, 40])
    np.testing.assert_array_equal(expected, [25] * 4)
    assert p == pytest.approx(1.6974e-04, rel=1e-3)
    # continuous buckets: a sample counts for the first bucket whose high edge is above it
    p, observed, _ = chi_square_check(
        fixed([0.1, 0.6, 0.7, 1.5]), [(0, 0.5), (0.5, 1.0)], [0.5, 0.5], 4
    )
    np.testing.assert_array_equal(observed, [1, 2])


def test_buckets_from_a_quantile_function():
    buckets, probs = gen_buckets_probs_with_ppf(normal_ppf, 4)
    assert probs == [0.25] * 4
    assert buckets[0][0] == -np.inf and buckets[1][1] == pytest.approx(0.0, abs=1e-6)
    with pytest.raises(ValueError, match="nbuckets"):
        gen_buckets_probs_with_ppf(normal_ppf, 0)


def test_verdicts_on_mxmod_samplers():
    buckets, probs = gen_buckets_probs_with_ppf(normal_ppf, 5)
    right = lambda n: mx.nd.random.normal(0, 1, shape=(n,)).asnumpy()  # noqa: E731
    wrong = lambda n: mx.nd.random.normal(0.2, 1, shape=(n,)).asnumpy()  # noqa: E731
    assert len(verify_generator(right, buckets, probs, nsamples=50000, nrepeat=3)) == 3
    with pytest.raises(AssertionError, match="Generator test fails"):
        verify_generator(wrong, buckets, probs, nsamples=50000, nrepeat=3)
    assert mean_check(right, 0, 1, 50000) and not mean_check(wrong, 0, 1, 50000)
    assert var_check(right, 1, 50000) and not var_check(right, 1.2, 50000)
    poisson = lambda n: mx.nd.random.poisson(2.0, shape=(n,)).asnumpy()  # noqa: E731
    probs = [math.exp(-2) * 2**k / math.factorial(k) for k in range(6)]
    verify_generator(poisson, list(range(6)), probs, nsamples=50000, nrepeat=3)
