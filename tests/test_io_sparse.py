"""csr batches (issue 28) against MXNet 1.9.1 goldens (tests/fixtures/gen_io_sparse.py):
LibSVMIter's csr data/labels, batch stream and errors; NDArrayIter over csr sources
(dense batches, as MXNet's slice fallback gives)."""

import json
import os
import pathlib

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

FIX = pathlib.Path(__file__).parent / "fixtures" / "io_sparse"
LIBSVM = json.loads((FIX / "libsvm.json").read_text())
NDITER = json.loads((FIX / "ndarray_iter.json").read_text())


def _check(arr, want):
    assert arr.stype == want["stype"] and list(arr.shape) == want["shape"]
    assert np.dtype(arr.dtype).name == want["dtype"]
    if want["stype"] == "csr":
        arr.check_format(True)
        np.testing.assert_array_equal(arr.indptr.asnumpy(), want["indptr"])
        np.testing.assert_array_equal(arr.indices.asnumpy(), want["indices"])
        np.testing.assert_allclose(arr.data.asnumpy(), want["data"], rtol=1e-6)
    else:
        np.testing.assert_allclose(arr.asnumpy(), want["dense"], rtol=1e-6)


def _make(kwargs):
    args = dict(kwargs)
    for k in ("data_libsvm", "label_libsvm"):
        if k in args:
            args[k] = str(FIX / args[k])
    return mx.io.LibSVMIter(**args)


@pytest.mark.parametrize("name", sorted(LIBSVM))
def test_libsvm_iter_matches_mxnet(name):
    case = LIBSVM[name]
    want = case["result"]
    if "error" in want:
        with pytest.raises(MXNetError):
            it = _make(case["kwargs"])
            for _ in range(case["epochs"]):
                list(it)
                it.reset()
        return
    it = _make(case["kwargs"])
    assert [[d.name, list(d.shape)] for d in it.provide_data] == want["provide_data"]
    assert [[d.name, list(d.shape)] for d in it.provide_label] == want["provide_label"]
    for epoch in want["epochs"]:
        got = list(it)
        assert len(got) == len(epoch)
        for batch, exp in zip(got, epoch):
            _check(batch.data[0], exp["data"])
            _check(batch.label[0], exp["label"])
            assert batch.pad == exp["pad"] and list(batch.index) == exp["index"]
        it.reset()


def test_libsvm_error_messages_name_the_fix():
    kw = LIBSVM["label_file_scalar"]["kwargs"]
    with pytest.raises(MXNetError, match=r"give label_shape=\(number of label columns,\)"):
        _make(kw)
    with pytest.raises(MXNetError, match=r"neg.t:2: index -1 is outside \[0, 3\)"):
        _make(LIBSVM["neg_index"]["kwargs"])
    it = _make(LIBSVM["part1_of2_too_small"]["kwargs"])
    with pytest.raises(MXNetError, match="1 rows are fewer than the batch size 3"):
        it.next()


@pytest.mark.parametrize("kind", ["csrnd", "scipy"])
def test_ndarray_iter_over_csr_matches_mxnet(kind):
    dense = np.array(NDITER["dense"], np.float32)
    if kind == "scipy":
        src = pytest.importorskip("scipy.sparse").csr_matrix(dense)
    else:
        src = mx.nd.array(dense).tostype("csr")
    want = NDITER[kind]
    np.random.seed(11)
    it = mx.io.NDArrayIter(
        {"csr": src, "dns": dense},
        np.array(NDITER["label"], np.float32),
        2,
        shuffle=True,
        last_batch_handle="discard",
    )
    got_descs = [[d.name, list(d.shape), np.dtype(d.dtype).name] for d in it.provide_data]
    assert got_descs == want["provide_data"]
    for epoch in want["epochs"]:
        got = list(it)
        assert len(got) == len(epoch)
        for batch, exp in zip(got, epoch):
            for arr, w in zip(batch.data + batch.label, exp["data"] + exp["label"]):
                _check(arr, w)
        it.reset()
    assert it.data[0][1].stype == "csr"  # the source itself stays csr
    np.testing.assert_array_equal(it.data[0][1].asnumpy(), it.data[1][1].asnumpy())


def test_ndarray_iter_csr_needs_discard_and_refuses_other_storage():
    csr = mx.nd.array(np.eye(4, dtype=np.float32)).tostype("csr")
    with pytest.raises(NotImplementedError, match="`discard`.*pass last_batch_handle='discard'"):
        mx.io.NDArrayIter(csr, batch_size=2)
    with pytest.raises(NotImplementedError, match="`discard`"):
        mx.io.NDArrayIter(np.eye(4), csr, batch_size=2, last_batch_handle="roll_over")
    rsp = mx.nd.array(np.eye(4, dtype=np.float32)).tostype("row_sparse")
    with pytest.raises(NotImplementedError, match="'data' has row_sparse storage"):
        mx.io.NDArrayIter(rsp, batch_size=2, last_batch_handle="discard")
    with pytest.raises(ValueError, match="csr input needs the batch axis first"):
        mx.io.NDArrayIter(csr, batch_size=2, last_batch_handle="discard", layout="CN")
    sp = pytest.importorskip("scipy.sparse")
    with pytest.raises(NotImplementedError, match="scipy coo storage.*tocsr"):
        mx.io.NDArrayIter(sp.coo_matrix(np.eye(4)), batch_size=2, last_batch_handle="discard")


def test_ndarray_iter_csr_unshuffled_batches_are_the_rows():
    rng = np.random.RandomState(0)
    dense = (rng.rand(9, 5) < 0.3).astype(np.float32) * rng.rand(9, 5).astype(np.float32)
    csr = mx.nd.array(dense).tostype("csr")
    it = mx.io.NDArrayIter(csr, csr, 4, last_batch_handle="discard")
    got = [(b.data[0].asnumpy(), b.label[0].asnumpy()) for b in it]
    assert len(got) == 2
    for k, (d, lab) in enumerate(got):
        np.testing.assert_array_equal(d, dense[4 * k : 4 * k + 4])
        np.testing.assert_array_equal(lab, dense[4 * k : 4 * k + 4])
    assert os.path.exists(FIX / "data.t")
