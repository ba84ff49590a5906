"""softmax(data, length, use_length=True) against MXNet 1.9.1's goldens
(``tests/fixtures/gen_softmax_length_goldens.py``), and its errors."""

import json
from pathlib import Path

import numpy as np
import pytest

import mxmod as mx

GOLDEN = Path(__file__).parent / "fixtures" / "softmax_length"
CASES = sorted(p.stem for p in GOLDEN.glob("*.npz"))


def _case(name):
    z = np.load(GOLDEN / f"{name}.npz")
    return json.loads(str(z["attrs"])), {k: z[k] for k in z.files if k != "attrs"}


def test_every_case_is_there():
    assert CASES == ["first_axis", "last_axis", "middle_axis", "temperature", "two_dims"]


@pytest.mark.parametrize("name", CASES)
def test_executor_forward_backward_matches_mxnet(name):
    attrs, z = _case(name)
    data, length = z["arg:data"], z["arg:length"]
    sym = mx.sym.softmax(mx.sym.var("data"), mx.sym.var("length"), use_length=True, **attrs)
    assert sym.list_arguments() == ["data", "length"]
    ex = sym.simple_bind(
        mx.cpu(),
        grad_req={"data": "write", "length": "null"},
        type_dict={"length": np.int32},
        data=data.shape,
        length=length.shape,
    )
    ex.arg_dict["data"][:] = data
    ex.arg_dict["length"][:] = length
    out = ex.forward(is_train=True)[0]
    assert out.dtype == z["out:0"].dtype
    np.testing.assert_allclose(out.asnumpy(), z["out:0"], rtol=1e-5, atol=1e-6)
    ex.backward([mx.nd.array(z["ograd:0"], dtype=out.dtype)])
    np.testing.assert_allclose(ex.grad_dict["data"].asnumpy(), z["grad:data"], rtol=1e-4, atol=1e-6)


def test_imperative_call_matches_mxnet():
    attrs, z = _case("last_axis")
    out = mx.nd.softmax(
        mx.nd.array(z["arg:data"]), mx.nd.array(z["arg:length"], dtype="int32"), use_length=True
    )
    np.testing.assert_allclose(out.asnumpy(), z["out:0"], rtol=1e-5, atol=1e-6)
    assert (out.asnumpy()[z["arg:length"] == 0] == 0).all()  # an empty row is all zeros


def test_length_shape_and_dtype_are_inferred():
    sym = mx.sym.softmax(mx.sym.var("data"), mx.sym.var("length"), axis=1, use_length=True)
    args, outs, _ = sym.infer_shape(data=(2, 3, 5))
    assert args == [(2, 3, 5), (2, 5)] and outs == [(2, 3, 5)]
    types, _, _ = sym.infer_type(data=np.float32)
    assert types == [np.float32, np.int32]


def test_length_past_the_axis_takes_the_whole_row():
    # MXNet reads past the row here; mxmod clips the length to the axis size
    x = np.random.RandomState(0).randn(2, 4).astype(np.float32)
    got = mx.nd.softmax(mx.nd.array(x), mx.nd.array([9, 4], dtype="int32"), use_length=True)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(got.asnumpy(), e / e.sum(1, keepdims=True), rtol=1e-6)


def test_float_length_names_the_dtype_and_the_fix():
    with pytest.raises(mx.base.MXNetError, match=r"integer dtype.*float32.*astype\('int32'\)"):
        mx.nd.softmax(mx.nd.ones((2, 3)), mx.nd.array([1, 2]), use_length=True)


def test_length_of_the_wrong_shape_names_both():
    sym = mx.sym.softmax(mx.sym.var("data"), mx.sym.var("length"), use_length=True)
    with pytest.raises(mx.base.MXNetError, match=r"length has shape \(3,\).*needs.*\(2,\)"):
        sym.infer_shape(data=(2, 4), length=(3,))


@pytest.mark.parametrize("op", ["log_softmax", "softmin"])
def test_only_softmax_takes_a_length(op):
    with pytest.raises(mx.base.MXNetError, match=f"{op}: use_length=True needs a length input"):
        getattr(mx.sym, op)(mx.sym.var("data"), use_length=True).infer_shape(data=(2, 3))
