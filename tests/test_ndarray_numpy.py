"""NDArray with numpy functions and operators, against MXNet 1.9.1's result types.

Goldens: tests/fixtures/surface/numpy_interop.json (gen_surface_goldens.py).
"""

import json
import os

import numpy as np
import pytest

import mxmod as mx

GOLD = os.path.join(os.path.dirname(__file__), "fixtures", "surface", "numpy_interop.json")


def _describe(value):
    if isinstance(value, mx.nd.NDArray):
        return {
            "type": "NDArray",
            "dtype": np.dtype(value.dtype).name,
            "value": value.asnumpy().tolist(),
            "shape": list(value.shape),
        }
    if isinstance(value, np.ndarray):
        return {"type": "ndarray", "dtype": value.dtype.name, "value": value.tolist()}
    if isinstance(value, np.generic):
        return {"type": "numpy_scalar", "dtype": value.dtype.name, "value": value.item()}
    return {"type": type(value).__name__, "value": value}


A = [[1, 2, 3], [4, 1, 0]]


def _cases():
    a = mx.nd.array(A)
    label = mx.nd.array([2, 1])
    return {
        "argmax_axis1": lambda: np.argmax(a, axis=1),
        "argmax_flat": lambda: np.argmax(a),
        "argmin_axis1": lambda: np.argmin(a, axis=1),
        "argmax_eq_ndlabel": lambda: np.argmax(a, axis=1) == label,
        "sum": lambda: np.sum(a),
        "sum_axis0": lambda: np.sum(a, axis=0),
        "max": lambda: np.max(a),
        "min_axis1": lambda: np.min(a, axis=1),
        "prod": lambda: np.prod(a),
        "clip": lambda: np.clip(a, 1, 2),
        "nd_eq_nd": lambda: a == a,
        "nd_lt_nd": lambda: a < mx.nd.ones((2, 3)) * 2,
        "nd_ne_scalar": lambda: a != 1,
        "nd_ge_scalar": lambda: a >= 2,
        "scalar_times_nd": lambda: np.float32(2) * a,
        "asscalar": lambda: a[0, 0].asscalar(),
        "len": lambda: len(a),
        "iter_rows": lambda: [r.asnumpy().tolist() for r in a],
        "astype_int32": lambda: a.astype("int32"),
        "shape": lambda: list(np.shape(a)),
        "acc_count": lambda: (np.argmax(a, axis=1) == label).sum().asscalar(),
    }


@pytest.mark.parametrize("case", sorted(_cases()))
def test_matches_mxnet(case):
    with open(GOLD) as f:
        gold = json.load(f)[case]
    assert _describe(_cases()[case]()) == gold


def test_inplace_chain_matches_mxnet():
    with open(GOLD) as f:
        gold = json.load(f)["inplace_chain"]
    b = mx.nd.array(A)
    handle = b
    b += 1
    b *= mx.nd.array(A)
    b -= 2
    b /= 2
    assert b is handle and _describe(b) == gold


def test_arithmetic_with_numpy_raises_as_mxnet():
    with open(GOLD) as f:
        assert json.load(f)["nd_plus_numpy"]["type"] == "TypeError"
    with pytest.raises(TypeError, match="convert it with mx.nd.array"):
        mx.nd.array(A) + np.ones((2, 3), np.float32)


def test_comparison_with_numpy_is_elementwise():
    # MXNet raises TypeError here; mxmod compares elementwise in the NDArray's dtype.
    a = mx.nd.array(A)
    other = np.array([[1, 0, 3], [4, 4, 4]])
    for got in (a == other, other == a):
        assert isinstance(got, mx.nd.NDArray) and got.dtype == np.float32
        np.testing.assert_array_equal(got.asnumpy(), [[1, 0, 1], [1, 0, 0]])
    np.testing.assert_array_equal((a < other).asnumpy(), [[0, 0, 0], [0, 1, 1]])


def test_array_protocol_gives_real_numpy():
    a = mx.nd.array(A, dtype="int32")
    out = np.asarray(a)
    assert out.dtype == np.int32 and out.tolist() == A
    assert np.array(a, dtype=np.float64).dtype == np.float64


def test_numpy_mean_and_dtype_keyword():
    a = mx.nd.array(A)
    got = np.mean(a, axis=1)
    assert isinstance(got, mx.nd.NDArray)
    np.testing.assert_allclose(got.asnumpy(), [2.0, 5 / 3], rtol=1e-6)
    assert np.sum(a, dtype="int32").dtype == np.int32


def test_numpy_out_and_unsupported_keywords_raise():
    a = mx.nd.array(A)
    with pytest.raises(TypeError, match="out= is not supported"):
        np.sum(a, out=np.zeros(1))
    with pytest.raises(NotImplementedError, match="initial= argument"):
        np.sum(a, initial=1.0)


def test_truth_value_and_scalar_errors():
    a = mx.nd.array(A)
    with pytest.raises(ValueError, match="ambiguous"):
        bool(a)
    with pytest.raises(ValueError, match="not a scalar"):
        a.asscalar()
    with pytest.raises(IndexError, match="0-d"):
        len(mx.nd.array(3.0).reshape(()))
