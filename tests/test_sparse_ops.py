"""mx.nd.sparse operators (dot, _square_sum, elementwise, unary) against MXNet 1.9.1.

Goldens: tests/fixtures/gen_sparse_ops.py runs every case with real MXNet and records the
output's storage type, shape, values and (row_sparse) stored rows, or MXNet's error.
"""

import json
import os

import math

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

HERE = os.path.dirname(os.path.abspath(__file__))
GOLD = os.path.join(HERE, "fixtures", "sparse_ops")
CASES = json.load(open(os.path.join(GOLD, "cases.json")))
INPUTS = dict(np.load(os.path.join(GOLD, "inputs.npz")))
OUTPUTS = dict(np.load(os.path.join(GOLD, "outputs.npz")))
SP = mx.nd.sparse


def _run(case):
    arrs = [mx.nd.array(INPUTS[name]).tostype(stype) for name, stype in case["args"]]
    if case["op"].startswith("__"):
        return getattr(arrs[0], case["op"])(*arrs[1:])
    if case["op"] == "_square_sum":
        return SP._square_sum(*arrs, **case["kwargs"])
    return getattr(SP, case["op"])(*arrs, **case["kwargs"])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["id"])
def test_matches_mxnet(case):
    if "error" in case:
        with pytest.raises(MXNetError) as err:
            _run(case)
        key = case["error"][0].split(": ")[-1].split(" for ")[0].split(" between ")[0]
        assert key.split("=")[-1].strip() in str(err.value)
        return
    out = _run(case)
    want = OUTPUTS[case["id"]]
    assert out.stype == case["stype"]
    assert list(out.shape) == case["shape"]
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.asnumpy(), want, rtol=2e-6, atol=1e-6, equal_nan=True)
    if out.stype == "row_sparse":
        np.testing.assert_array_equal(out.indices.asnumpy(), OUTPUTS[case["id"] + ":indices"])


def _csr():
    return mx.nd.array(INPUTS["A"]).tostype("csr")


def _rsp():
    return mx.nd.array(INPUTS["A"]).tostype("row_sparse")


def test_dot_keeps_operands_sparse_and_matches_numpy_on_larger_input():
    rng = np.random.RandomState(3)
    a = rng.randn(40, 30).astype(np.float32) * (rng.rand(40, 30) < 0.1)
    b = rng.randn(40, 7).astype(np.float32)
    out = SP.dot(mx.nd.array(a).tostype("csr"), mx.nd.array(b), transpose_a=True)
    assert out.stype == "row_sparse"
    np.testing.assert_allclose(out.asnumpy(), a.T @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out.indices.asnumpy(), np.flatnonzero(a.any(axis=0)))


def test_inplace_operators_keep_storage():
    c = _csr()
    c += _csr()
    assert c.stype == "csr"
    np.testing.assert_allclose(c.asnumpy(), 2 * INPUTS["A"])
    r = _rsp()
    r *= mx.nd.array(INPUTS["D54"])
    assert r.stype == "row_sparse"
    np.testing.assert_allclose(r.asnumpy(), INPUTS["A"] * INPUTS["D54"], rtol=1e-6)
    c += mx.nd.array(INPUTS["D54"])  # a dense result written back as csr (MXNet)
    assert c.stype == "csr"
    np.testing.assert_allclose(c.asnumpy(), 2 * INPUTS["A"] + INPUTS["D54"], rtol=1e-6)


def test_scalar_add_is_dense_and_neg_abs_keep_storage():
    out = _csr() + 1
    assert out.stype == "default"
    np.testing.assert_allclose(out.asnumpy(), INPUTS["A"] + 1)
    assert (-_rsp()).stype == "row_sparse" and abs(_csr()).stype == "csr"
    np.testing.assert_allclose(abs(_csr()).asnumpy(), np.abs(INPUTS["A"]))


def test_round_is_half_away_from_zero():
    x = mx.nd.array([[0.5, -2.5, 0.0], [1.5, 0.0, 0.0]]).tostype("csr")
    np.testing.assert_array_equal(SP.round(x).asnumpy(), [[1, -3, 0], [2, 0, 0]])


MISTAKES = [
    (lambda: SP.dot(_csr(), mx.nd.ones((5, 2))), MXNetError, r"dot: shape mismatch.*csr"),
    (lambda: SP.dot(_csr(), mx.nd.ones((4, 2)), forward_stype="csr"), NotImplementedError,
     "forward_stype"),
    (lambda: SP.dot(_csr(), [[1.0]]), TypeError, "sparse.dot needs NDArrays"),
    (lambda: SP.elemwise_add(_csr(), mx.nd.ones((1, 4))), NotImplementedError,
     r"elemwise_add of a csr array \(5, 4\) and a default array \(1, 4\)"),
    (lambda: SP.add(_csr(), 1), TypeError, "sparse.add needs two NDArrays"),
    (lambda: SP._square_sum(_csr(), axis=1), MXNetError,
     "_square_sum for input storage type 'csr'"),
    (lambda: SP._square_sum(_rsp(), axis=None), NotImplementedError, "axis=None"),
    (lambda: SP._square_sum(_rsp(), axis=0, exclude=True), NotImplementedError, "exclude"),
    (lambda: _csr() / mx.nd.ones((5, 4)), MXNetError, "Please use elemwise_div"),
    (lambda: _csr() + "a", NotImplementedError, "__add__ of a CSRNDArray with a str"),
    (lambda: SP.sqrt([1.0]), TypeError, "sparse.sqrt needs an NDArray"),
    (lambda: SP.clip(_csr(), 1, 2), MXNetError, "sparse clip needs a_min <= 0 <= a_max"),
]  # fmt: skip


@pytest.mark.parametrize("call,exc,msg", MISTAKES)
def test_mistakes_raise_clear_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_square_sum_is_also_mx_nd_internal():
    r = mx.nd.sparse.row_sparse_array(([[1.0, 2.0], [3.0, 4.0]], [0, 2]), shape=(3, 2))
    out = mx.nd._internal._square_sum(r, axis=1)
    assert out.asnumpy().tolist() == [5.0, 0.0, 25.0]


# storage of the results checked on MXNet 1.9.1: cbrt and stop_gradient keep csr and
# row_sparse storage, the others fall back to dense (0 maps to inf / -inf)
@pytest.mark.parametrize(
    "name,ref,keeps",
    [
        ("cbrt", np.cbrt, True),
        ("stop_gradient", lambda v: v, True),
        ("log2", np.log2, False),
        ("log10", np.log10, False),
        ("gamma", lambda v: np.vectorize(math.gamma)(np.where(v == 0, np.nan, v)), False),
        ("gammaln", lambda v: np.vectorize(math.lgamma)(np.where(v == 0, np.nan, v)), False),
    ],
)
@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_more_unary_sparse_functions(name, ref, keeps, stype):
    dense = np.array([[0, 1.5], [0, 0], [2, 0]], np.float32)
    x = mx.nd.array(dense).tostype(stype)
    with np.errstate(divide="ignore"):
        want = ref(dense.astype(np.float64))
    if name in ("gamma", "gammaln"):
        want = np.where(dense == 0, np.inf, want)
    got = getattr(mx.nd.sparse, name)(x)
    assert got.stype == (stype if keeps else "default")
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5)


def test_gs_retain_is_retain():
    x = mx.nd.array([[1, 2], [3, 4], [0, 0]]).tostype("row_sparse")
    kept = mx.nd.sparse.gs_retain(x, mx.nd.array([1]))
    assert kept.stype == "row_sparse" and kept.asnumpy().tolist() == [[0, 0], [3, 4], [0, 0]]


def test_getnnz_counts_stored_values():
    # values checked on MXNet 1.9.1 (explicit zeros count; axis=0 is refused there too)
    csr = SP.csr_matrix(([1.5, 0.0, 2.0], [1, 2, 0], [0, 2, 2, 3]), shape=(3, 3))
    assert mx.nd.contrib.getnnz(csr).asnumpy().tolist() == [3]
    assert mx.nd.contrib.getnnz(csr, axis=1).asnumpy().tolist() == [2, 0, 1]
    with pytest.raises(NotImplementedError, match="axis=0"):
        mx.nd.contrib.getnnz(csr, axis=0)
    with pytest.raises(MXNetError, match="tostype"):
        mx.nd.contrib.getnnz(mx.nd.ones((2, 2)))
