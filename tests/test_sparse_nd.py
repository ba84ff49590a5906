"""mx.nd.sparse (csr / row_sparse NDArrays) against MXNet 1.9.1 goldens.

Goldens: tests/fixtures/gen_sparse_nd.py runs tests/fixtures/sparse_nd_cases.py with real
MXNet; here the same builders run with mxmod.
"""

import json
import os
import pickle
import sys
import warnings

import jax
import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError
from mxmod.ndarray import io as nd_io
from mxmod.test_utils import assert_almost_equal, rand_ndarray, rand_sparse_ndarray

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "fixtures"))
from sparse_nd_cases import BUILDS, CHECKS, CSR_DENSE  # noqa: E402

GOLD = os.path.join(HERE, "fixtures", "sparse_nd")
META = json.load(open(os.path.join(GOLD, "expected.json")))
EXPECTED = dict(np.load(os.path.join(GOLD, "expected.npz")))
SP = mx.nd.sparse


def _check_against_golden(name, arr):
    info = META["cases"][name]
    assert arr.stype == info["stype"] and list(arr.shape) == info["shape"], name
    assert np.dtype(arr.dtype).name == info["dtype"], name
    dense = arr.asnumpy()
    assert dense.dtype == EXPECTED[f"{name}/dense"].dtype
    np.testing.assert_array_equal(dense, EXPECTED[f"{name}/dense"])
    if arr.stype == "default":
        return
    assert [np.dtype(t).name for t in arr._aux_types] == info["aux_types"]
    np.testing.assert_array_equal(arr.data.asnumpy(), EXPECTED[f"{name}/data"])
    np.testing.assert_array_equal(arr.indices.asnumpy(), EXPECTED[f"{name}/indices"])
    if arr.stype == "csr":
        np.testing.assert_array_equal(arr.indptr.asnumpy(), EXPECTED[f"{name}/indptr"])


# ------------------------------------------------------------------ files
def test_load_mxnet_file_matches_goldens():
    loaded = mx.nd.load(os.path.join(GOLD, "cases.nd"))
    assert list(loaded) == list(BUILDS)
    for name, arr in loaded.items():
        want = mx.nd.CSRNDArray if META["cases"][name]["stype"] == "csr" else None
        if want:
            assert isinstance(arr, want)
        _check_against_golden(name, arr)


@pytest.mark.parametrize("fname", ["cases.nd", "list.nd"])
def test_save_of_loaded_file_is_byte_identical(fname, tmp_path):
    src = os.path.join(GOLD, fname)
    mx.nd.save(str(tmp_path / fname), mx.nd.load(src))
    assert (tmp_path / fname).read_bytes() == open(src, "rb").read()


def test_list_file_keeps_types_and_order():
    csr, rsp, dense = mx.nd.load(os.path.join(GOLD, "list.nd"))
    assert (csr.stype, rsp.stype, dense.stype) == ("csr", "row_sparse", "default")
    assert isinstance(rsp, mx.nd.RowSparseNDArray) and rsp.shape == (4, 2, 2)


# --------------------------------------------------------------- creation
@pytest.mark.parametrize("name", list(BUILDS))
def test_builders_match_mxnet_values_and_bytes(name):
    arr = BUILDS[name](mx, np)
    _check_against_golden(name, arr)
    mxnet_arr = mx.nd.load(os.path.join(GOLD, "cases.nd"))[name]
    assert nd_io.to_bytes({name: arr}) == nd_io.to_bytes({name: mxnet_arr})


@pytest.mark.parametrize("name", list(CHECKS))
def test_check_format_as_mxnet(name):
    arr, full = CHECKS[name](mx, np)
    want = META["checks"][name]
    if want == "ok":
        arr.check_format(full_check=full)
        return
    with pytest.raises(MXNetError) as info:
        arr.check_format(full_check=full)
    assert want.removeprefix("MXNetError: ") in str(info.value)


def test_coo_form_sums_duplicates_and_sorts():
    # MXNet builds this through scipy (absent from its venv here): compare with scipy
    spsp = pytest.importorskip("scipy.sparse")
    data, row, col = [1.0, 2, 5, 7], [1, 0, 1, 0], [2, 1, 2, 0]
    got = SP.csr_matrix((data, (row, col)), shape=(3, 4), dtype="float32")
    ref = spsp.coo_matrix((data, (row, col)), shape=(3, 4)).tocsr()
    ref.sort_indices()
    np.testing.assert_array_equal(got.asnumpy(), ref.toarray())
    np.testing.assert_array_equal(got.indptr.asnumpy(), ref.indptr)
    np.testing.assert_array_equal(got.indices.asnumpy(), ref.indices)
    inferred = SP.csr_matrix((mx.nd.array([3]), (mx.nd.array([2]), mx.nd.array([1]))))
    assert inferred.shape == (3, 2) and inferred.asnumpy()[2, 1] == 3


def test_scipy_input_and_asscipy_round_trip():
    spsp = pytest.importorskip("scipy.sparse")
    m = spsp.csr_matrix(np.array(CSR_DENSE, "float32"))
    for arr in (SP.csr_matrix(m), SP.array(m), mx.nd.array(m)):
        assert arr.stype == "csr" and arr.dtype == np.float32
        np.testing.assert_array_equal(arr.asnumpy(), np.array(CSR_DENSE, "float32"))
    back = SP.csr_matrix(m).asscipy()
    assert isinstance(back, spsp.csr_matrix) and (back != m).nnz == 0


def test_tostype_round_trips_and_cast_storage():
    dense = rand_ndarray((6, 5), "default")
    dense[:] = mx.nd.array(np.where(np.random.rand(6, 5) < 0.5, 0, dense.asnumpy()))
    for stype in ("csr", "row_sparse"):
        sp = dense.tostype(stype)
        assert sp.stype == stype and sp.tostype(stype) is not sp
        np.testing.assert_array_equal(sp.tostype("default").asnumpy(), dense.asnumpy())
        np.testing.assert_array_equal(mx.nd.cast_storage(sp, "default").asnumpy(), dense.asnumpy())
    with pytest.raises(ValueError, match="cast_storage from csr to row_sparse is not supported"):
        dense.tostype("csr").tostype("row_sparse")
    with pytest.raises(ValueError, match="cast_storage from row_sparse to csr is not supported"):
        dense.tostype("row_sparse").tostype("csr")
    with pytest.raises(MXNetError, match="Invalid Input: 'foo'.*'csr', 'default', 'row_sparse'"):
        dense.tostype("foo")


def test_copy_copyto_astype_context():
    c = BUILDS["csr_def"](mx, np)
    d = c.copy()
    assert d is not c and d.stype == "csr" and (d.asnumpy() == c.asnumpy()).all()
    on2 = c.copyto(mx.cpu(2))
    assert on2.context == mx.cpu(2) and on2.stype == "csr" and c.as_in_context(c.context) is c
    dense = mx.nd.zeros(c.shape)
    assert c.copyto(dense) is dense and (dense.asnumpy() == c.asnumpy()).all()
    target = SP.zeros("csr", c.shape, dtype="float16")
    c.copyto(target)
    assert target.dtype == np.float16 and (target.asnumpy() == c.asnumpy()).all()
    with pytest.raises(TypeError, match="destination NDArray stype row_sparse"):
        c.copyto(SP.zeros("row_sparse", c.shape))
    with pytest.raises(MXNetError, match=r"source shape \(4, 3\) does not match"):
        c.copyto(mx.nd.zeros((3, 3)))
    with pytest.raises(TypeError, match="copyto does not support type"):
        c.copyto("cpu")
    rsp = SP.zeros("row_sparse", (6, 2))
    rsp[:] = BUILDS["rsp_def"](mx, np)
    assert (rsp.asnumpy() == BUILDS["rsp_def"](mx, np).asnumpy()).all()
    rsp[:] = np.ones((6, 2), "float32")
    assert rsp.indices.asnumpy().tolist() == list(range(6))
    rsp[:] = 2.5  # MXNet stores every row
    assert rsp.indices.asnumpy().tolist() == list(range(6)) and (rsp.asnumpy() == 2.5).all()
    with pytest.raises(ValueError, match="Assigning numeric types to CSRNDArray"):
        c[:] = 1


def test_pickle_round_trip():
    for arr in (BUILDS["csr_def"](mx, np), BUILDS["rsp_def_3d"](mx, np)):
        back = pickle.loads(pickle.dumps(arr))
        assert type(back) is type(arr) and back.shape == arr.shape
        np.testing.assert_array_equal(back.asnumpy(), arr.asnumpy())


def test_int64_indices_reported_and_saved_as_int64():
    rsp = BUILDS["rsp_def"](mx, np)
    assert rsp._aux_types == [np.int64]
    raw = nd_io.to_bytes([rsp])
    assert np.frombuffer(raw[-24:-8], "<i8").tolist() == [1, 4]  # the indices, as int64


# ------------------------------------------------------------ test_utils
@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_rand_sparse_ndarray(stype):
    arr, parts = rand_sparse_ndarray((20, 8), stype, density=0.3)
    assert arr.stype == stype and arr.shape == (20, 8)
    arr.check_format()
    data, indices = (parts[0], parts[1]) if stype == "row_sparse" else (parts[2], parts[1])
    np.testing.assert_array_equal(arr.data.asnumpy(), np.asarray(data))
    np.testing.assert_array_equal(arr.indices.asnumpy(), np.asarray(indices))
    assert 0 < np.count_nonzero(arr.asnumpy()) < 160
    empty, _ = rand_sparse_ndarray((5, 4), stype, density=0)
    assert not empty.asnumpy().any()
    assert rand_ndarray((5, 4), stype, density=1).stype == stype
    assert_almost_equal(arr, arr.asnumpy())
    with pytest.raises(AssertionError):
        assert_almost_equal(arr, arr.asnumpy() + 1)


def test_rand_sparse_ndarray_options():
    rsp, (data, idx) = rand_sparse_ndarray((10, 3), "row_sparse", rsp_indices=[1, 7], data_init=2)
    assert idx.tolist() == [1, 7] and (data == 2).all() and rsp.indices.asnumpy().tolist() == [1, 7]
    with pytest.raises(ValueError, match="powerlaw distribution needs"):
        rand_sparse_ndarray((4, 4), "csr", density=0.1, distribution="powerlaw")
    with pytest.raises(ValueError, match="csr arrays only"):
        rand_sparse_ndarray((4, 4), "row_sparse", distribution="powerlaw")
    with pytest.raises(ValueError, match="unknown storage type 'foo'"):
        rand_sparse_ndarray((4, 4), "foo")


# ------------------------------------------------------- user mistakes
MISTAKES = [
    (lambda: SP.csr_matrix((1, 2, 3, 4)), ValueError, "Unexpected length of input tuple: 4"),
    (lambda: SP.row_sparse_array((1,)), ValueError, "Unexpected length of input tuple: 1"),
    (lambda: SP.csr_matrix(np.eye(2), shape=(3, 3)), ValueError, r"Shape mismatch detected"),
    (lambda: SP.csr_matrix(SP.zeros("row_sparse", (2, 2))), ValueError, "RowSparseNDArray"),
    (lambda: SP.row_sparse_array(SP.zeros("csr", (2, 2))), ValueError, "CSRNDArray"),
    (lambda: SP.csr_matrix(([], [], [0, 0, 0])), ValueError, "invalid shape: give shape="),
    (lambda: SP.csr_matrix(([1.0], [0], [0, 1]), shape=(1, 2, 3)), ValueError, "csr array is 2-D"),
    (lambda: SP.csr_matrix(([1.0, 2], [0], [0, 1])), ValueError, "2 values but indices has 1"),
    (lambda: SP.csr_matrix(([1.0], [0], [])), ValueError, "indptr non-empty"),
    (lambda: SP.csr_matrix(([1.0], ["a"], [0, 1])), TypeError, "indices must be an array like"),
    (lambda: SP.row_sparse_array(([[1.0, 2]], [])), ValueError, "invalid shape: give shape="),
    (lambda: SP.row_sparse_array(([[1.0]], [0]), shape=(2, 0)), ValueError, "invalid shape"),
    (lambda: SP.row_sparse_array(([[1.0, 2]], [0, 1]), shape=(3, 2)), ValueError, "fit 2 rows"),
    (lambda: SP.csr_matrix(([1.0], ([0], [0, 1]))), ValueError, "one length"),
    (lambda: SP.csr_matrix(([1.0], ([5], [0])), shape=(2, 2)), ValueError, "exceeds matrix"),
    (lambda: SP.zeros("foo", (2, 2)), ValueError, "unknown storage type 'foo'"),
    (lambda: SP.zeros("csr", (2, 2, 2)), MXNetError, "csr array is 2-D"),
    (lambda: mx.nd.zeros((2, 2), stype="bogus"), NotImplementedError, "stype='bogus'"),
    (lambda: SP.array(np.eye(2)), ValueError, "Please use mx.nd.array"),
    (lambda: SP.array(mx.nd.ones((2, 2))), ValueError, "Please use `tostype`"),
    (lambda: mx.nd.ones((2, 2, 2)).tostype("csr"), ValueError, "should be 2 Dimensional"),
    (lambda: SP.retain(mx.nd.ones((2, 2)), [0]), MXNetError, "retain needs a RowSparseNDArray"),
    (lambda: SP.retain(mx.nd.ones((2, 2)), invalid_arg=1), MXNetError, "unknown arguments"),
    (lambda: SP.retain(SP.zeros("row_sparse", (2, 2))), MXNetError, "retain needs indices"),
    (lambda: SP.retain(SP.zeros("row_sparse", (2, 2)), [5]), ValueError, r"lie in \[0, 2\)"),
    (lambda: SP.retain(SP.zeros("row_sparse", (2, 2)), [[0]]), ValueError, "must be 1-D"),
    (lambda: mx.nd.cast_storage([1, 2], "csr"), TypeError, "cast_storage needs an NDArray"),
    (lambda: SP.square_sum, AttributeError, r"no attribute 'square_sum'.*mx.nd.square_sum"),
    (lambda: SP.no_such_thing, AttributeError, "no attribute 'no_such_thing'"),
]


@pytest.mark.parametrize("call,exc,msg", MISTAKES)
def test_user_mistakes_raise_clear_errors(call, exc, msg):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc, match=msg):
            call()


def test_indexing_rules():
    c = BUILDS["csr_def"](mx, np)
    with pytest.raises(ValueError, match="continuous slicing on axis 0"):
        c[::2]
    with pytest.raises(ValueError, match="Multi-dimension indexing is not supported"):
        c[1, 2]
    with pytest.raises(IndexError, match="row index 4 is out of bounds"):
        c[4]
    r = BUILDS["rsp_def"](mx, np)
    assert r[:] is r and c[:] is c
    with pytest.raises(ValueError, match=r"only supports \[:\] for __getitem__"):
        r[1:2]
    with pytest.raises(ValueError, match=r"only supports \[:\] for assignment"):
        r[1:2] = 0


def test_unsupported_operations_name_themselves():
    c, r = BUILDS["csr_def"](mx, np), BUILDS["rsp_def"](mx, np)
    with pytest.raises(NotImplementedError, match="__mul__ of a CSRNDArray with a list"):
        c * [1.0]
    with pytest.raises(NotImplementedError, match="reshape is not supported"):
        c.reshape((3, 4))
    with pytest.raises(NotImplementedError, match="size of a CSRNDArray is ambiguous"):
        c.size
    # other operators: MXNet's storage fallback (dense result), see test_sparse_fallback.py
    assert (c < c).stype == "default" and (r**2).stype == "default"
    assert float(mx.nd.sum(c).asscalar()) == float(c.asnumpy().sum())
    with pytest.raises(MXNetError, match="pickled NDArray"):  # MXNet's raw-record pickle
        nd_io.record_from_bytes(nd_io.to_bytes([c])[24:])
    c *= 2
    assert c.stype == "csr" and c.asnumpy().max() == 6


def test_truncated_sparse_files_raise_mxnet_error_at_every_cut():
    raw = open(os.path.join(GOLD, "list.nd"), "rb").read()
    for cut in range(len(raw)):
        with pytest.raises(MXNetError, match="Invalid NDArray file format: buffer: "):
            mx.nd.load_frombuffer(raw[:cut])


def test_indices_beyond_int32_need_x64():
    if jax.config.jax_enable_x64:
        pytest.skip("x64 mode keeps int64 indices")
    with pytest.raises(ValueError, match="do not fit the int32.*jax_enable_x64"):
        SP.row_sparse_array(([[1.0]], [2**31]), shape=(2**31 + 1, 1))


def test_sparse_and_0d_arrays_cannot_share_a_file():
    with pytest.raises(ValueError, match="0-d arrays"):
        mx.nd.save("/nonexistent/x.nd", [BUILDS["csr_def"](mx, np), mx.nd.array(np.float32(1))])


def test_ndarray_iter_refuses_csr_input_until_it_yields_csr_batches():
    c = mx.nd.sparse.csr_matrix(([1.0, 2.0], [0, 1], [0, 1, 2]), shape=(2, 2))
    with pytest.raises(NotImplementedError, match="only supports ``CSRNDArray`` with"):
        mx.io.NDArrayIter(c, batch_size=1)  # MXNet 1.9.1: csr needs last_batch_handle='discard'
    assert mx.io.NDArrayIter(c, batch_size=1, last_batch_handle="discard").next().data[0].shape


@pytest.mark.parametrize("rows", [2**40, 1])  # an absurd axis; fewer rows than stored
def test_a_sparse_record_whose_parts_do_not_fit_its_shape_is_refused(rows):
    rsp = mx.nd.sparse.row_sparse_array(([[1.0, 2.0], [3.0, 4.0]], [1, 3]), shape=(5, 2))
    buf = nd_io.to_bytes([rsp])
    ndim = np.array([2], "<i4").tobytes()  # the logical shape: int32 ndim, int64 axes
    shape = ndim + np.array([5, 2], "<i8").tobytes()
    assert buf.count(shape) == 1
    bad = buf.replace(shape, ndim + np.array([rows, 2], "<i8").tobytes())
    with pytest.raises(MXNetError, match="parts .* do not fit its shape|axis over"):
        nd_io.load_frombuffer(bad)
