"""mx.test_utils against MXNet 1.9.1 (tests/fixtures/surface/test_utils.json) and by use."""

import contextlib
import gzip
import io
import json
import os
import struct

import numpy as np
import pytest

import mxmod as mx
from mxmod import test_utils as tu

GOLD = os.path.join(os.path.dirname(__file__), "fixtures", "surface", "test_utils.json")


@pytest.fixture(scope="module")
def gold():
    with open(GOLD) as f:
        return json.load(f)


def test_default_tolerances_match_mxnet(gold):
    assert {k.name: v for k, v in tu.default_rtols().items()} == gold["rtols"]
    assert {k.name: v for k, v in tu.default_atols().items()} == gold["atols"]
    assert {k.name: v for k, v in tu.default_numeric_eps().items()} == gold["eps"]


PAIRS = {
    "close32": ([1.0, 2.0], [1.0, 2.00005], "float32"),
    "far32": ([1.0, 2.0, 3.0], [1.0, 2.5, 3.2], "float32"),
    "close16": ([1.0, 2.0], [1.0, 2.01], "float16"),
    "int_exact": ([1, 2], [1, 3], "int32"),
}


@pytest.mark.parametrize("case", sorted(PAIRS))
def test_almost_equal_and_messages_match_mxnet(case, gold):
    a, b, dt = PAIRS[case]
    a, b = np.array(a, dtype=dt), np.array(b, dtype=dt)
    assert tu.almost_equal(a, b) == gold["almost_equal"][case]
    expect = gold["messages"][case]
    printed = io.StringIO()
    if expect is None:
        tu.assert_almost_equal(mx.nd.array(a, dtype=dt), b, names=("x", "y"))
        return
    with pytest.raises(AssertionError) as info, contextlib.redirect_stdout(printed):
        tu.assert_almost_equal(mx.nd.array(a, dtype=dt), b, names=("x", "y"))
    lines = [ln for ln in str(info.value).splitlines() if ln.strip()]
    assert lines[:2] == expect["head"]
    assert printed.getvalue() == expect["printed"]


def test_same_and_same_array():
    a = mx.nd.array([[1, 2], [3, 4]])
    assert tu.same(a, a.asnumpy()) and not tu.same(a, a.asnumpy() + 1)
    assert tu.same_array(a, a[0:2]) and not tu.same_array(a, a.copy())


def test_assert_exception():
    tu.assert_exception(int, ValueError, "x")
    with pytest.raises(AssertionError, match="did not raise ValueError"):
        tu.assert_exception(int, ValueError, "3")


def test_contexts_and_random_helpers():
    with mx.cpu(1):
        assert tu.default_context() == mx.cpu(1)
    tu.set_default_context(mx.cpu(2))
    try:
        assert mx.current_context() == mx.cpu(2)
        arr = tu.rand_ndarray((3, 4), dtype="float32")
        assert arr.shape == (3, 4) and arr.context == mx.cpu(2)
    finally:
        tu.set_default_context(mx.cpu(0))
    assert tu.rand_ndarray((3, 4), stype="csr").stype == "csr"  # more: test_sparse_nd.py
    for _ in range(20):
        r, c = tu.rand_shape_2d(3, 4)
        assert 1 <= r <= 3 and 1 <= c <= 4
        assert all(1 <= d <= 5 for d in tu.rand_shape_3d(5, 5, 5) + tu.rand_shape_nd(4, 5))
    x, y = tu.random_arrays((2, 3), ())
    assert x.shape == (2, 3) and x.dtype == np.float32 and y.shape == ()


def _fc_tanh():
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    return mx.sym.Activation(net, act_type="tanh", name="act")


def test_symbolic_forward_backward_against_mxnet(gold):
    case = gold["fc_tanh"]
    loc = {k: np.array(v) for k, v in case["loc"].items()}
    tu.check_symbolic_forward(_fc_tanh(), loc, [np.array(case["out"])])
    grads = {k: np.array(v) for k, v in case["grads"].items()}
    tu.check_symbolic_backward(_fc_tanh(), loc, [np.array(case["ograd"])], grads)
    tu.check_symbolic_backward(
        _fc_tanh(), loc, [np.array(case["ograd"])], grads, grad_req="add", rtol=1e-4, atol=1e-5
    )  # float64 difference
    out = tu.simple_forward(_fc_tanh(), **loc)
    tu.assert_almost_equal(out, np.array(case["out"]), rtol=1e-5, atol=1e-6)
    with pytest.raises(AssertionError, match="EXPECTED_act_output"):
        tu.check_symbolic_forward(_fc_tanh(), loc, [np.array(case["out"]) + 0.1])
    with pytest.raises(ValueError, match="location do not match"):
        tu.check_symbolic_forward(_fc_tanh(), {"data": loc["data"]}, [np.zeros((2, 3))])


def test_check_numeric_gradient_passes_and_catches_wrong_gradients():
    rng = np.random.RandomState(0)
    loc = {"data": rng.randn(2, 4), "fc_weight": rng.randn(3, 4), "fc_bias": rng.randn(3)}
    tu.check_numeric_gradient(_fc_tanh(), loc, numeric_eps=1e-2, rtol=1e-2, atol=1e-3)
    blocked = mx.sym.BlockGrad(_fc_tanh())  # backward gives 0, finite differences do not
    with pytest.raises(AssertionError, match="NUMERICAL_"):
        tu.check_numeric_gradient(blocked, loc, numeric_eps=1e-2, rtol=1e-2, atol=1e-3)


def test_check_consistency_over_devices_and_dtypes():
    sym = mx.sym.Convolution(num_filter=3, kernel=(3, 3), name="conv")
    shape = (2, 2, 6, 6)
    ctx_list = [
        {"ctx": mx.cpu(0), "conv_data": shape, "type_dict": {"conv_data": np.float32}},
        {"ctx": mx.cpu(1), "conv_data": shape, "type_dict": {"conv_data": np.float32}},
        {"ctx": mx.cpu(0), "conv_data": shape, "type_dict": {"conv_data": np.float16}},
    ]
    gt = tu.check_consistency(sym, ctx_list, scale=0.5)
    assert set(gt) >= {"conv_output", "conv_weight", "conv_data"}
    bad = {"conv_output": gt["conv_output"] + 1}
    with (
        pytest.raises(AssertionError),
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
    ):
        tu.check_consistency(sym, ctx_list[:2], grad_req="null", ground_truth=bad)


def test_compare_optimizer_and_ndarray_tuple():
    tu.compare_optimizer(
        mx.optimizer.SGD(learning_rate=0.1, momentum=0.9),
        mx.optimizer.SGD(learning_rate=0.1, momentum=0.9),
        (4, 3),
        np.float32,
    )
    with pytest.raises(AssertionError):
        tu.compare_optimizer(
            mx.optimizer.SGD(learning_rate=0.1),
            mx.optimizer.SGD(learning_rate=0.5),
            (4, 3),
            np.float32,
        )
    a = mx.nd.ones((2,))
    tu.compare_ndarray_tuple((a, (a, None)), (a.copy(), (a.copy(), a)))
    with pytest.raises(AssertionError):
        tu.compare_ndarray_tuple((a,), (a * 2,))


def test_dummy_iter_repeats_the_first_batch():
    real = mx.io.NDArrayIter(np.arange(8.0).reshape(4, 2), np.arange(4.0), batch_size=2)
    dummy = tu.DummyIter(real)
    first, second = next(dummy), next(dummy)
    assert first is second and dummy.provide_data == real.provide_data
    np.testing.assert_array_equal(first.data[0].asnumpy(), [[0, 1], [2, 3]])


def test_environment_sets_and_restores(monkeypatch):
    monkeypatch.setenv("MXMOD_TU_A", "old")
    monkeypatch.delenv("MXMOD_TU_B", raising=False)
    with tu.environment({"MXMOD_TU_A": "new", "MXMOD_TU_B": "b"}):
        assert os.environ["MXMOD_TU_A"] == "new" and os.environ["MXMOD_TU_B"] == "b"
    assert os.environ["MXMOD_TU_A"] == "old" and "MXMOD_TU_B" not in os.environ
    with tu.environment("MXMOD_TU_A", None):
        assert "MXMOD_TU_A" not in os.environ
    assert os.environ["MXMOD_TU_A"] == "old"
    with pytest.raises(TypeError, match="one dict or a name and a value"):
        with tu.environment("MXMOD_TU_A"):
            pass


def _write_idx(path, images):
    with gzip.open(path, "wb") as f:
        if images is not None:
            f.write(struct.pack(">IIII", 2051, len(images), 28, 28) + images.tobytes())


def test_datasets_read_local_files_or_say_where_to_put_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="MNIST is not bundled .* never downloads"):
        tu.get_mnist()
    with pytest.raises(FileNotFoundError, match="data/cifar/"):
        tu.get_cifar10()
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte"):
        tu.get_mnist_ubyte()
    os.mkdir("data")
    images = np.full((3, 28, 28), 255, dtype=np.uint8)
    labels = np.array([1, 2, 3], dtype=np.int8)
    for split in ("train", "t10k"):
        _write_idx(f"data/{split}-images-idx3-ubyte.gz", images)
        with gzip.open(f"data/{split}-labels-idx1-ubyte.gz", "wb") as f:
            f.write(struct.pack(">II", 2049, 3) + labels.tobytes())
    mnist = tu.get_mnist()
    assert mnist["train_data"].shape == (3, 1, 28, 28) and mnist["train_data"].max() == 1.0
    assert mnist["test_label"].tolist() == [1, 2, 3]
    train, val = tu.get_mnist_iterator(1, (784,), num_parts=3, part_index=2)
    assert train.provide_data[0].shape == (1, 784) and val.provide_label[0].shape == (1,)
    assert next(val).label[0].asnumpy().tolist() == [3]
    with pytest.raises(ValueError, match="part_index"):
        tu.get_mnist_iterator(1, (1, 28, 28), num_parts=2, part_index=2)


def test_download_is_local_only(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    url = "http://data.mxnet.io/data/letter-recognition.data"
    with pytest.raises(FileNotFoundError, match="never downloads: fetch http://data.mxnet.io"):
        tu.download(url)
    (tmp_path / "letter-recognition.data").write_text("A,1\n")
    assert tu.download(url) == "letter-recognition.data"
    os.mkdir("d")
    (tmp_path / "d" / "x.csv").write_text("1")
    assert tu.download(url, fname="x.csv", dirname="d") == os.path.join("d", "x.csv")
    with pytest.raises(NotImplementedError, match="overwrite=True"):
        tu.download(url, overwrite=True)
