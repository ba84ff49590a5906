"""``mx.nd/sym.histogram`` (the ``_histogram`` operator) and ``contrib.rand_zipfian``
(values checked on MXNet 1.9.1)."""

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

X = np.array([0.0, 1, 1.5, 2, 3.9, 4, 5, -1], dtype=np.float32)


def test_histogram_equal_bins_and_edges_like_numpy():
    counts, edges = mx.nd.histogram(mx.nd.array(X), bins=4, range=(0, 4))
    ref_counts, ref_edges = np.histogram(X, bins=4, range=(0, 4))
    np.testing.assert_array_equal(counts.asnumpy(), ref_counts)  # [1 2 1 2]: 4 in the last bin
    np.testing.assert_allclose(edges.asnumpy(), ref_edges)
    counts, edges = mx.nd.histogram(mx.nd.array(X), bins=mx.nd.array([0, 1, 2, 4]))
    np.testing.assert_array_equal(counts.asnumpy(), [1, 2, 3])
    np.testing.assert_array_equal(edges.asnumpy(), [0, 1, 2, 4])
    rng = np.random.RandomState(0).randn(1000).astype(np.float32)
    counts, _ = mx.nd.histogram(mx.nd.array(rng), bins=7, range=(-2, 2.5))
    np.testing.assert_array_equal(counts.asnumpy(), np.histogram(rng, 7, (-2, 2.5))[0])


def test_histogram_without_range_uses_numpy_on_the_host():
    with pytest.warns(UserWarning, match="range is not specified"):
        counts, edges = mx.nd.histogram(mx.nd.array(X), bins=3)
    np.testing.assert_array_equal(counts.asnumpy(), [2, 3, 3])
    np.testing.assert_array_equal(edges.asnumpy(), [-1, 1, 3, 5])


def test_histogram_symbol():
    sym = mx.sym.histogram(mx.sym.var("x"), bins=4, range=(0, 4))
    assert sym.list_outputs() == ["_histogram0_output0", "_histogram0_output1"]
    assert sym.infer_shape(x=(8,))[1] == [(4,), (5,)]
    counts, edges = mx.sym.load_json(sym.tojson()).bind(mx.cpu(), {"x": mx.nd.array(X)}).forward()
    np.testing.assert_array_equal(counts.asnumpy(), [1, 2, 1, 2])
    with pytest.raises(ValueError, match="give range"):
        mx.sym.histogram(mx.sym.var("x"), bins=4)
    with pytest.raises(MXNetError, match="low < high"):
        mx.nd.histogram(mx.nd.array(X), bins=4, range=(4, 0))


def test_rand_zipfian():
    true = mx.nd.array([3, 10])
    sampled, count_true, count_sampled = mx.nd.contrib.rand_zipfian(true, 5, 100)
    assert sampled.shape == count_sampled.shape == (5,) and sampled.dtype == np.int32
    # MXNet: log((c + 2) / (c + 1)) / log(range_max + 1) * num_sampled
    np.testing.assert_allclose(count_true.asnumpy(), [0.24175268, 0.09426772], rtol=1e-5)
    c = sampled.asnumpy()
    expect = np.log((c + 2.0) / (c + 1.0)) / np.log(101) * 5
    np.testing.assert_allclose(count_sampled.asnumpy(), expect, rtol=1e-5)
    draws = mx.nd.contrib.rand_zipfian(mx.nd.array([0]), 100000, 50)[0].asnumpy()
    assert draws.min() >= 0 and draws.max() < 50
    p = np.log((np.arange(50) + 2.0) / (np.arange(50) + 1.0)) / np.log(51)
    np.testing.assert_allclose(np.bincount(draws, minlength=50) / draws.size, p, atol=0.006)


def test_rand_zipfian_symbol():
    outs = mx.sym.contrib.rand_zipfian(mx.sym.var("t"), 4, 20)
    got = mx.sym.Group(list(outs)).bind(mx.cpu(), {"t": mx.nd.array([1, 2])}).forward()
    assert [o.shape for o in got] == [(4,), (2,), (4,)]
    assert 0 <= got[0].asnumpy().min() and got[0].asnumpy().max() < 20
    np.testing.assert_allclose(
        got[1].asnumpy(), np.log(np.array([3 / 2, 4 / 3])) / np.log(21) * 4, rtol=1e-5
    )


def test_sample_unique_zipfian_draws_distinct_zipfian_classes():
    mx.random.seed(7)
    samples, trials = mx.nd._internal._sample_unique_zipfian(range_max=50, shape=(400, 8))
    s, t = samples.asnumpy(), trials.asnumpy()
    assert s.shape == (400, 8) and t.shape == (400,)
    assert all(len(set(row)) == 8 for row in s) and ((s >= 0) & (s < 50)).all()
    assert (t >= 8).all()
    # small classes are the likeliest: class 0 (P = log 2 / log 51 = 0.18) is in most rows
    assert (s == 0).any(axis=1).mean() > 0.7
    assert (s == 0).any(axis=1).mean() > (s == 40).any(axis=1).mean()
    # the trials are what draws with replacement need: about sum over the row of 1 / P(new)
    assert 8 < t.mean() < 20
    with pytest.raises(ValueError, match="distinct classes"):
        mx.nd._internal._sample_unique_zipfian(range_max=3, shape=(1, 4))
