"""mx.io.MNISTIter and mx.io.CSVIter against MXNet 1.9.1 (tests/fixtures/data/
small_iters.npz, made by gen_data_fixtures.py) and errors (LibSVMIter: test_libsvm_iter.py)."""

import os
import struct

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

D = os.path.join(os.path.dirname(__file__), "fixtures", "data", "small")
Z = np.load(os.path.join(os.path.dirname(D), "small_iters.npz"))
IMG, LAB = os.path.join(D, "images-idx3-ubyte"), os.path.join(D, "labels-idx1-ubyte")

MNIST = {
    "mnist": dict(batch_size=5, shuffle=False),
    "mnist_flat": dict(batch_size=4, shuffle=False, flat=True),
    "mnist_parts": dict(batch_size=3, shuffle=False, num_parts=2, part_index=1),
}


@pytest.mark.parametrize("name", sorted(MNIST))
def test_mnist_matches_mxnet(name):
    it = mx.io.MNISTIter(image=IMG, label=LAB, silent=True, **MNIST[name])
    for epoch in range(2):
        n = 0
        for b, batch in enumerate(it):
            want = Z[f"{name}:{b}:data"].astype(np.float32) / 256  # stored as pixel bytes
            np.testing.assert_array_equal(batch.data[0].asnumpy(), want)
            np.testing.assert_array_equal(batch.label[0].asnumpy(), Z[f"{name}:{b}:label"])
            assert batch.pad == 0
            n += 1
        assert f"{name}:{n}:data" not in Z.files  # the partial batch is dropped
        it.reset()


def test_mnist_shuffle_is_one_fixed_permutation():
    it = mx.io.MNISTIter(image=IMG, label=LAB, silent=True, batch_size=23, seed=3)
    first = it.next().label[0].asnumpy()
    it.reset()
    again = it.next().label[0].asnumpy()
    plain = (
        mx.io.MNISTIter(image=IMG, label=LAB, silent=True, batch_size=23, shuffle=False)
        .next()
        .label[0]
        .asnumpy()
    )
    np.testing.assert_array_equal(first, again)  # shuffled once, as MXNet
    assert sorted(first) == sorted(plain) and not np.array_equal(first, plain)


def test_mnist_errors(tmp_path):
    with pytest.raises(MXNetError, match="cannot open image file .*nope"):
        mx.io.MNISTIter(image=str(tmp_path / "nope"), label=LAB)
    (tmp_path / "short").write_bytes(struct.pack(">IIII", 2051, 5, 28, 28) + b"\0" * 100)
    with pytest.raises(MXNetError, match="short is truncated"):
        mx.io.MNISTIter(image=str(tmp_path / "short"), label=LAB)
    with pytest.raises(MXNetError, match="is not an MNIST image file"):
        mx.io.MNISTIter(image=LAB, label=LAB)
    with pytest.raises(MXNetError, match="has 23 images but .* has 5 labels"):
        (tmp_path / "lab").write_bytes(struct.pack(">II", 2049, 5) + b"\1" * 5)
        mx.io.MNISTIter(image=IMG, label=str(tmp_path / "lab"))
    with pytest.raises(TypeError, match="can only accept keyword arguments"):
        mx.io.MNISTIter(IMG)
    with pytest.warns(
        UserWarning, match=r"unknown parameter\(s\) \['data_shape', 'flatten'\] ignored"
    ):
        mx.io.MNISTIter(image=IMG, label=LAB, flatten=True, data_shape=(784,))


CSV = {
    "csv_round": dict(data_shape=(2, 3), batch_size=3),
    "csv_noround": dict(
        data_shape=(6,),
        batch_size=3,
        round_batch=False,
        label_csv=os.path.join(D, "label.csv"),
        label_shape=(2,),
    ),
    "csv_label1": dict(
        data_shape=(6,), batch_size=4, label_csv=os.path.join(D, "data.csv"), label_shape=(6,)
    ),
}


@pytest.mark.parametrize("name", sorted(CSV))
def test_csv_matches_mxnet(name):
    it = mx.io.CSVIter(data_csv=os.path.join(D, "data.csv"), **CSV[name])
    for epoch in range(2):
        n = 0
        for b, batch in enumerate(it):
            pre = f"{name}:{epoch}:{b}:"
            np.testing.assert_array_equal(batch.data[0].asnumpy(), Z[pre + "data"])
            np.testing.assert_array_equal(batch.label[0].asnumpy(), Z[pre + "label"])
            assert batch.pad == int(Z[pre + "pad"])
            n += 1
        assert f"{name}:{epoch}:{n}:data" not in Z.files
        it.reset()


def test_csv_errors_and_libsvm(tmp_path):
    (tmp_path / "bad.csv").write_text("1,2,3\n4,5\n")
    with pytest.raises(MXNetError, match=r"bad.csv:2: 2 values but data_shape \(3,\) needs 3"):
        mx.io.CSVIter(data_csv=str(tmp_path / "bad.csv"), data_shape=(3,), batch_size=1)
    with pytest.raises(MXNetError, match="cannot open .*missing.csv"):
        mx.io.CSVIter(data_csv=str(tmp_path / "missing.csv"), data_shape=(3,), batch_size=1)
    with pytest.raises(MXNetError, match="required parameter data_shape is missing"):
        mx.io.CSVIter(data_csv=os.path.join(D, "data.csv"), batch_size=1)
    with pytest.raises(MXNetError, match="batch_size=0 must be at least 1"):
        mx.io.CSVIter(data_csv=os.path.join(D, "data.csv"), data_shape=(6,), batch_size=0)


def test_csv_integer_dtypes_and_native_accessors(tmp_path):
    (tmp_path / "d.csv").write_text("200000001,2\n3,2147483647\n5,6\n")
    (tmp_path / "l.csv").write_text("1\n2\n3\n")
    for dtype in ("int32", "float32"):
        it = mx.io.CSVIter(
            data_csv=str(tmp_path / "d.csv"),
            label_csv=str(tmp_path / "l.csv"),
            data_shape=(2,),
            batch_size=2,
            dtype=dtype,
        )
        it.next()
        # MXNet's native iterators: getdata/getlabel give one NDArray, getindex the rows
        data, label = it.getdata(), it.getlabel()
        assert isinstance(data, mx.nd.NDArray) and data.dtype == np.dtype(dtype)
        assert label.dtype == np.dtype(dtype) and it.getindex().tolist() == [0, 1]
        # DataDesc dtypes are numpy scalar types, as MXNet prints them (<class 'numpy.int32'>)
        assert it.provide_data[0].dtype is np.dtype(dtype).type
        assert it.provide_label[0].dtype is np.dtype(dtype).type
        want = np.array([[200000001, 2], [3, 2147483647]]).astype(dtype)
        np.testing.assert_array_equal(data.asnumpy(), want)


def test_native_iterators_share_mxdataiter():
    for cls in (mx.io.ImageRecordIter, mx.io.MNISTIter, mx.io.CSVIter, mx.io.LibSVMIter):
        assert issubclass(cls, mx.io.MXDataIter) and issubclass(cls, mx.io.DataIter)
    assert not issubclass(mx.io.NDArrayIter, mx.io.MXDataIter)
    assert mx.io.ImageRecordUInt8Iter_v1 is mx.io.ImageRecordUInt8Iter
    it = mx.io.MNISTIter(image=IMG, label=LAB, batch_size=5)
    with pytest.raises(NotImplementedError, match="debug_skip_load.*DummyIter"):
        it.debug_skip_load()
