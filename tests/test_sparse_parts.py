"""The in-program sparse pytrees (mxmod/ndarray/sparse/parts.py)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mxmod as mx
from mxmod.ndarray.sparse.parts import RowParts, csr_parts, padded_size, unique_rows


def _csr(rng, shape, density):
    a = rng.standard_normal(shape).astype(np.float32)
    a[rng.random(shape) > density] = 0
    return a, mx.nd.array(a).tostype("csr")


def test_csr_parts_dense_and_matmul_match_numpy():
    rng = np.random.default_rng(0)
    a, c = _csr(rng, (6, 9), 0.3)
    parts = csr_parts(c)
    assert parts.data.shape[0] == padded_size(int(np.count_nonzero(a)))
    np.testing.assert_array_equal(np.asarray(parts.dense()), a)
    w = rng.standard_normal((9, 4)).astype(np.float32)
    out = jax.jit(lambda p, w: p.matmul(w))(parts, w)
    np.testing.assert_allclose(np.asarray(out), a @ w, rtol=1e-5, atol=1e-6)


def test_batches_with_different_nnz_share_one_program():
    rng = np.random.default_rng(1)
    fn = jax.jit(lambda p: p.dense().sum())
    for density in (0.2, 0.25, 0.3):
        a, c = _csr(rng, (5, 6), density)
        assert float(fn(csr_parts(c, 32))) == pytest.approx(float(a.sum()), abs=1e-5)
    assert fn._cache_size() == 1


def test_csr_parts_refuses_a_size_below_nnz():
    _, c = _csr(np.random.default_rng(2), (4, 4), 1.0)
    with pytest.raises(ValueError, match="smaller than the array's nnz"):
        csr_parts(c, 3)


def test_row_parts_add_duplicates_and_drop_padding():
    parts = RowParts(jnp.array([2, 0, 2, 5]), jnp.ones((4, 3)), (5, 3))
    expect = np.zeros((5, 3), np.float32)
    expect[0], expect[2] = 1, 2
    np.testing.assert_array_equal(np.asarray(parts.dense()), expect)


def test_unique_rows_sorted_padded_and_out_of_range_dropped():
    rows = unique_rows(jnp.array([[3, 1], [3, 9]]), 4, 5)
    assert rows.tolist() == [1, 3, 5, 5]
    assert padded_size(0) == 16 and padded_size(16) == 16 and padded_size(17) == 32
