"""The ``mx.test_utils`` helpers MXNet's own test files use beyond the comparisons:
test-array builders, sparse generators, error-rate comparison, timing and environment
predicates (behaviour as MXNet 1.9.1's ``test_utils``)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import mxmod as mx
from mxmod import test_utils as tu


def test_star_import_has_mxnets_helpers():
    ns: dict = {}
    exec("from mxmod.test_utils import *", ns)
    for name in (
        "assert_almost_equal_with_err",
        "checkShapes",
        "create_sparse_array",
        "new_sym_matrix_with_real_eigvals_nd",
        "check_speed",
        "setenv",
        "Features",
    ):
        assert name in ns, name


def test_large_tensor_builders():
    t = tu.create_2d_tensor(3, 4, dtype=np.int32).asnumpy()
    assert t.shape == (3, 4) and (t == np.arange(3)[:, None]).all()
    assert tu.create_vector(5, dtype=np.int32).asnumpy().tolist() == [0, 1, 2, 3, 4]
    assert (tu.get_identity_mat(3).asnumpy() == np.eye(3)).all()
    batch = tu.get_identity_mat_batch(2).asnumpy()
    assert batch.shape == (2, 2, 2) and (batch == np.eye(2)).all()


def test_elementwise_maps_and_collapse_sum():
    x = np.arange(6.0).reshape(2, 3)
    assert (tu.assign_each(x, lambda v: v * v) == x * x).all()
    assert (tu.assign_each(x, None) == x).all()
    assert (tu.assign_each2(x, x + 1, lambda a, b: a * b) == x * (x + 1)).all()
    with pytest.raises(ValueError, match="differ"):
        tu.assign_each2(x, x.T, lambda a, b: a)
    a = np.arange(24.0).reshape(2, 3, 4)
    assert np.allclose(tu.collapse_sum_like(a, (3, 1)), a.sum(axis=(0, 2)).reshape(3, 1))
    assert tu.collapse_sum_like(a, (0, 4)).shape == (0, 4)
    with pytest.raises(ValueError, match="does not broadcast"):
        tu.collapse_sum_like(a, (2, 4))


def test_matrices_have_the_promised_eigenvalues():
    np.random.seed(3)
    q = tu.new_orthonormal_matrix_2d(4)
    assert np.allclose(q @ q.T, np.eye(4), atol=1e-10)
    s = tu.new_sym_matrix_with_real_eigvals_nd((2, 3, 3))
    assert s.shape == (2, 3, 3) and np.allclose(s, np.swapaxes(s, -1, -2))
    assert (np.abs(np.linalg.eigvalsh(s)) <= 10).all()
    m = tu.new_matrix_with_real_eigvals_nd((2, 4, 4))
    eig = np.linalg.eigvals(m)
    assert m.shape == (2, 4, 4) and np.allclose(eig.imag, 0, atol=1e-8)
    assert (np.abs(eig.real) <= 10 + 1e-8).all()
    x, y = tu.rand_coord_2d(0, 3, 5, 6)
    assert 0 <= x < 3 and y == 5


def test_powerlaw_csr_doubles_row_counts():
    np.random.seed(0)
    csr, (indptr, _, _) = tu.rand_sparse_ndarray(
        (5, 16), "csr", density=0.5, distribution="powerlaw"
    )
    counts = np.diff(indptr.asnumpy())
    assert counts[2] == 2 * counts[1] and counts[3] == 2 * counts[2]
    assert counts.sum() == int(5 * 16 * 0.5)
    assert (csr.asnumpy() != 0).sum() == counts.sum()


def test_shuffled_csr_is_a_valid_matrix_with_the_same_rows():
    np.random.seed(1)
    csr, (indptr, indices, data) = tu.rand_sparse_ndarray(
        (6, 8), "csr", density=0.6, shuffle_csr_indices=True
    )
    ip, ix, d = indptr.asnumpy(), indices.asnumpy(), data.asnumpy()
    dense = csr.asnumpy()
    for r in range(6):
        cols = ix[ip[r] : ip[r + 1]]
        assert sorted(cols.tolist()) == sorted(np.flatnonzero(dense[r]).tolist())
        assert np.allclose(dense[r, cols], d[ip[r] : ip[r + 1]])
    assert any((np.diff(ix[ip[r] : ip[r + 1]]) < 0).any() for r in range(6))


def test_create_sparse_arrays():
    rsp = tu.create_sparse_array((6, 2), "row_sparse", rsp_indices=[4, 1], data_init=3.0)
    assert rsp.indices.asnumpy().tolist() == [1, 4] and (rsp.data.asnumpy() == 3).all()
    empty = tu.create_sparse_array_zd((6, 2), "row_sparse", 0.9)
    assert empty.indices.asnumpy().size == 0
    csr = tu.create_sparse_array_zd((5, 5), "csr", 1.0)
    assert csr.stype == "csr" and (csr.asnumpy() != 0).all()
    with pytest.raises(ValueError, match="unknown storage type"):
        tu.create_sparse_array((2, 2), "dense")


def test_error_rate_comparison():
    a = np.zeros(100, np.float32)
    b = a.copy()
    b[:3] = 1
    tu.assert_almost_equal_with_err(a, b, etol=0.05)
    with pytest.raises(AssertionError, match="mismatch 3.0"):
        tu.assert_almost_equal_with_err(a, b, etol=0.01)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal_with_err(a, b)  # etol 0: every element must match
    with pytest.raises(AssertionError, match="are not equal"):
        tu.checkShapes(np.zeros(2), np.zeros(3))
    assert tu.locationError(a, b, (1,), ("x", "y"), maxError=True).startswith(
        "Location of maximum error: (1,), x=0.00000000, y=1.00000000"
    )


def test_check_speed_times_forward_and_backward():
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, name="fc")
    assert tu.check_speed(net, N=3, data=(2, 3)) > 0
    loc = {"data": np.ones((2, 3)), "fc_weight": np.ones((4, 3)), "fc_bias": np.zeros(4)}
    assert tu.check_speed(net, location=loc, N=2, typ="forward") > 0
    with pytest.raises(ValueError, match="typ"):
        tu.check_speed(net, location=loc, typ="backward")


def test_environment_helpers(monkeypatch):
    monkeypatch.setenv("CD_JOB", "1")
    assert tu.is_cd_run()
    monkeypatch.setenv("CD_JOB", "0")
    assert not tu.is_cd_run()
    assert tu.has_tvm_ops() is False
    assert tu.effective_dtype(mx.nd.ones(2)) == np.float32
    assert tu.effective_dtype(np.ones(2, np.float16)) == np.float16
    tu.setenv("MXMOD_TEST_HELPER_VAR", "7")
    assert tu.getenv("MXMOD_TEST_HELPER_VAR") == "7"
    tu.setenv("MXMOD_TEST_HELPER_VAR", None)
    assert tu.getenv("MXMOD_TEST_HELPER_VAR") is None
    with pytest.raises(NotImplementedError, match="Gluon"):
        tu.check_gluon_hybridize_consistency(lambda: None, [])


def test_data_helpers_never_download(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="mnist.pkl.gz"):
        tu.get_mnist_pkl()
    with pytest.raises(FileNotFoundError, match="never downloads"):
        tu.get_zip_data(str(tmp_path), "http://example.com/x.zip", "x.zip")
    assert tu.download_model("nope", meta_info={}) == (None, 0)
    with pytest.raises(FileNotFoundError, match="resnet-18-symbol.json"):
        tu.download_model("resnet-18", dst_dir=str(tmp_path))
    (tmp_path / "m-symbol.json").write_text("{}")
    (tmp_path / "m-0000.params").write_bytes(b"")
    assert tu.download_model("m", dst_dir=str(tmp_path)) == (os.path.join(str(tmp_path), "m"), 0)
    assert os.path.isfile(tu.get_im2rec_path())
