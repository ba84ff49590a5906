"""mx.random / mx.nd.random: seeding, key stream, samplers and their errors."""

import jax
import numpy as np
import pytest

from mxmod import ndarray as nd
from mxmod import random as mxr
from mxmod.base import MXNetError
from mxmod.context import cpu


def test_seed_makes_draws_reproducible():
    mxr.seed(42)
    a = mxr.uniform(shape=(5,)).asnumpy()
    b = mxr.normal(shape=(5,)).asnumpy()
    mxr.seed(42)
    np.testing.assert_array_equal(mxr.uniform(shape=(5,)).asnumpy(), a)
    np.testing.assert_array_equal(mxr.normal(shape=(5,)).asnumpy(), b)
    mxr.seed(43)
    assert not np.array_equal(mxr.uniform(shape=(5,)).asnumpy(), a)


def test_next_key_is_fresh_and_seeded():
    mxr.seed(7)
    k1, k2 = mxr.next_key(), mxr.next_key()
    assert k1.shape == (2,) and k1.dtype == np.uint32
    assert not np.array_equal(np.asarray(k1), np.asarray(k2))
    mxr.seed(7)
    np.testing.assert_array_equal(np.asarray(mxr.next_key()), np.asarray(k1))


def test_seed_per_context_only_affects_that_context():
    mxr.seed(1, ctx=cpu(1))
    a = mxr.uniform(shape=(4,), ctx=cpu(1)).asnumpy()
    mxr.uniform(shape=(4,))  # global stream moves, cpu(1)'s does not
    mxr.seed(1, ctx=cpu(1))
    np.testing.assert_array_equal(mxr.uniform(shape=(4,), ctx=cpu(1)).asnumpy(), a)
    mxr.seed(0)  # 'all' resets per-context streams too


def test_seed_requires_int():
    with pytest.raises(ValueError, match="seed_state must be int, got str"):
        mxr.seed("a")


def test_uniform():
    mxr.seed(0)
    u = mxr.uniform(2, 3, shape=(1000,))
    x = u.asnumpy()
    assert u.dtype is np.float32 and x.min() >= 2 and x.max() < 3 and abs(x.mean() - 2.5) < 0.05
    assert mxr.uniform().shape == (1,)  # MXNet's default shape
    assert mxr.uniform(0, 1, shape=3).shape == (3,)
    assert mxr.uniform(shape=(2,), dtype="float16").dtype is np.float16
    r = mxr.uniform(nd.array([0, 10]), nd.array([1, 11]), shape=(50,))
    assert r.shape == (2, 50)
    assert r.asnumpy()[0].max() < 1 and r.asnumpy()[1].min() >= 10
    on = mxr.uniform(shape=(3,), ctx=cpu(2))
    assert on.context == cpu(2) and on._data.devices() == {jax.devices()[2]}
    with pytest.raises(MXNetError, match=r"low must be less or equal to high.*low=2, high=1"):
        mxr.uniform(2, 1, shape=(2,))
    with pytest.raises(ValueError, match="uniform: dtype must be a float type, got int32"):
        mxr.uniform(shape=(2,), dtype="int32")


def test_normal():
    mxr.seed(0)
    x = mxr.normal(1.0, 2.0, shape=(4000,)).asnumpy()
    assert abs(x.mean() - 1.0) < 0.15 and abs(x.std() - 2.0) < 0.15
    assert mxr.normal(shape=(2, 2)).shape == (2, 2)
    with pytest.raises(MXNetError, match="scale parameter in gaussian has to be positive, got -1"):
        mxr.normal(0, -1, shape=(2,))


def test_randint():
    mxr.seed(0)
    r = mxr.randint(0, 5, shape=(500,))
    x = r.asnumpy()
    assert r.dtype is np.int32 and x.min() == 0 and x.max() == 4
    with pytest.raises(MXNetError, match=r"low must be less or equal to high.*low=5, high=3"):
        mxr.randint(5, 3, shape=(2,))
    with pytest.raises(ValueError, match="randint: dtype must be an integer type, got float32"):
        mxr.randint(0, 3, shape=(2,), dtype="float32")


def test_out_argument():
    o = nd.zeros((3,))
    assert mxr.uniform(shape=(3,), out=o) is o
    assert (o.asnumpy() > 0).any()
    o2 = nd.zeros((2, 2), dtype="float16")
    assert mxr.normal(out=o2) is o2 and o2.dtype is np.float16
    msg = r"Shape inconsistent, Provided = \[2\], inferred shape=\[5\]"
    with pytest.raises(MXNetError, match=msg):
        mxr.uniform(shape=(5,), out=nd.zeros((2,)))


def test_shuffle_permutes_rows():
    mxr.seed(3)
    data = nd.arange(12).reshape((6, 2))
    s = mxr.shuffle(data)
    rows = sorted(map(tuple, s.asnumpy().tolist()))
    assert rows == sorted(map(tuple, data.asnumpy().tolist()))
    assert not np.array_equal(s.asnumpy(), data.asnumpy())
    np.testing.assert_array_equal(data.asnumpy(), np.arange(12).reshape(6, 2))  # input untouched
    with pytest.raises(TypeError, match="shuffle: data must be an NDArray"):
        mxr.shuffle(np.arange(3))
    out = nd.zeros((6, 2))
    assert mxr.shuffle(data, out=out) is out and out.asnumpy().sum() == 66
    msg = r"shuffle: out shape \(2,\) differs from data shape \(6, 2\)"
    with pytest.raises(MXNetError, match=msg):
        mxr.shuffle(data, out=nd.zeros(2))


def test_unknown_keyword_is_rejected():
    msg = r"uniform\(\) got unsupported keyword arguments \['foo'\]"
    with pytest.raises(TypeError, match=msg):
        mxr.uniform(shape=(2,), foo=1)
    assert mxr.normal(shape=(2,), name="x").shape == (2,)


def test_nd_random_namespace_is_the_same():
    assert nd.random.uniform is mxr.uniform and nd.random.normal is mxr.normal
    assert nd.random.randint is mxr.randint and nd.random.shuffle is mxr.shuffle
