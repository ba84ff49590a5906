"""mx.io.LibSVMIter with csr batches: MXNet 1.9.1's values and batch stream (round-robin
last batch, next epoch continuing after the wrap, as checked side by side with MXNet on
this file), labels from the data file or a label file, parts and errors (MXNet goldens:
tests/test_io_sparse.py)."""

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

DATA = "1.0 0:0.5 2:1.2\n-2.0\n-3.0 0:0.6 1:2.4 2:1.2\n4 2:-1.2\n"
LABEL = "1.0\n-2.0 0:0.125\n-3.0 2:1.2\n4 1:1.0 2:-1.2\n"
ROWS = np.array([[0.5, 0, 1.2], [0, 0, 0], [0.6, 2.4, 1.2], [0, 0, -1.2]], np.float32)
LABEL_ROWS = np.array([[0, 0, 0], [0.125, 0, 0], [0, 0, 1.2], [0, 1, -1.2]], np.float32)
HEADS = np.array([1, -2, -3, 4], np.float32)


@pytest.fixture()
def files(tmp_path):
    (tmp_path / "data.t").write_text(DATA)
    (tmp_path / "label.t").write_text(LABEL)
    return str(tmp_path / "data.t"), str(tmp_path / "label.t")


def _stream(it, epochs=2):
    out = []
    for _ in range(epochs):
        out += [(b.data[0].asnumpy(), b.label[0].asnumpy(), b.pad, list(b.index)) for b in it]
        it.reset()
    return out


def test_rows_labels_and_round_batch_stream(files):
    data, label = files
    it = mx.io.LibSVMIter(
        data_libsvm=data, label_libsvm=label, data_shape=(3,), label_shape=(3,), batch_size=3
    )
    assert it.provide_data[0].shape == (3, 3) and it.provide_label[0].shape == (3, 3)
    got = _stream(it)
    # epoch 1: rows 0-2, then 3 wrapped with 0, 1; epoch 2 continues after the wrap
    assert [(pad, idx) for _, _, pad, idx in got] == [
        (0, [0, 1, 2]),
        (2, [3, 0, 1]),
        (1, [2, 3, 0]),
    ]
    for d, lab, _, idx in got:
        np.testing.assert_allclose(d, ROWS[idx])
        np.testing.assert_allclose(lab, LABEL_ROWS[idx])
        assert it.getdata().stype == "csr" and it.getlabel().stype == "csr"


def test_label_from_data_file_parts_and_dtype(files):
    data, _ = files
    it = mx.io.LibSVMIter(data_libsvm=data, data_shape=(3,), batch_size=2)
    assert it.provide_label[0].shape == (2,)
    batches = _stream(it, 1)
    np.testing.assert_allclose(np.concatenate([b[1] for b in batches]), HEADS)
    # parts split the file by bytes (dmlc): part 1 of 2 starts after byte 27, in row 2
    it = mx.io.LibSVMIter(
        data_libsvm=data, data_shape=(3,), batch_size=1, num_parts=2, part_index=1
    )
    (d, lab, pad, idx), *rest = _stream(it, 1)
    assert not rest and pad == 0
    np.testing.assert_allclose(d, ROWS[3:])
    np.testing.assert_allclose(lab, HEADS[3:])
    it = mx.io.LibSVMIter(
        data_libsvm=data, data_shape=(3,), batch_size=3, num_parts=2, part_index=0
    )
    assert [b[3] for b in _stream(it, 1)] == [[0, 1, 2]]
    it = mx.io.LibSVMIter(data_libsvm=data, data_shape=(3,), batch_size=4)
    batch = it.next()
    assert batch.data[0].shape == (4, 3) and batch.data[0].dtype == np.float32
    assert batch.data[0].stype == "csr" and batch.label[0].stype == "default"


def test_errors(files, tmp_path):
    data, label = files
    bad = tmp_path / "bad.t"
    bad.write_text("1 0:1\n2 -1:0.6\n")
    with pytest.raises(MXNetError, match=r"bad.t:2: index -1 is outside \[0, 3\)"):
        mx.io.LibSVMIter(data_libsvm=str(bad), data_shape=(3,), batch_size=1)
    with pytest.raises(MXNetError, match=r"data.t:1: index 2 is outside \[0, 2\)"):
        mx.io.LibSVMIter(data_libsvm=data, data_shape=(2,), batch_size=1)
    bad.write_text("1 0=1\n")
    with pytest.raises(MXNetError, match="malformed LibSVM line"):
        mx.io.LibSVMIter(data_libsvm=str(bad), data_shape=(3,), batch_size=1)
    with pytest.raises(MXNetError, match="label_shape \\(3,\\) needs label_libsvm"):
        mx.io.LibSVMIter(data_libsvm=data, data_shape=(3,), label_shape=(3,), batch_size=1)
    with pytest.raises(MXNetError, match="not expected to be \\(1,\\) when label_libsvm"):
        mx.io.LibSVMIter(data_libsvm=data, label_libsvm=label, data_shape=(3,), batch_size=1)
    with pytest.raises(MXNetError, match=r"data_shape is expected to be 1.*data_shape=\(3,\)"):
        mx.io.LibSVMIter(data_libsvm=data, data_shape=(1, 3), batch_size=1)
    with pytest.raises(MXNetError, match="round_batch == false.*leave round_batch=True"):
        mx.io.LibSVMIter(data_libsvm=data, data_shape=(3,), batch_size=1, round_batch=False)
    bad.write_text("1 2:1 0:2\n2 1:1 1:3\n")
    with pytest.raises(MXNetError, match="bad.t:2: an index appears twice"):
        mx.io.LibSVMIter(data_libsvm=str(bad), data_shape=(3,), batch_size=1)
    with pytest.raises(MXNetError, match="cannot open 'nope.t'"):
        mx.io.LibSVMIter(data_libsvm="nope.t", data_shape=(3,), batch_size=1)
    with pytest.raises(TypeError, match="keyword arguments"):
        mx.io.LibSVMIter(data)


def test_trains_a_dense_linear_model(files):
    data, _ = files
    it = mx.io.LibSVMIter(data_libsvm=data, data_shape=(3,), batch_size=2)
    x = mx.sym.Variable("data")
    net = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(x, num_hidden=1), name="softmax")
    mod = mx.mod.Module(net, label_names=["softmax_label"])
    mod.fit(it, num_epoch=2, optimizer_params={"learning_rate": 0.01})
    assert mod.predict(it).shape == (4, 1)
