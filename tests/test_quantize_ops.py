"""quantize / quantize_v2 / dequantize / requantize against MXNet 1.9.1's outputs
(``tests/fixtures/gen_quantize_goldens.py``), in mx.nd and in a bound graph, and errors."""

import json
from pathlib import Path

import numpy as np
import pytest

import mxmod as mx

GOLDEN = Path(__file__).parent / "fixtures" / "quantize"
CASES = sorted(p.stem for p in GOLDEN.glob("*.npz"))


def _case(name):
    z = np.load(GOLDEN / f"{name}.npz")
    ins = [z[f"in:{i}"] for i in range(3) if f"in:{i}" in z.files]
    outs = [z[f"out:{i}"] for i in range(3) if f"out:{i}" in z.files]
    return str(z["op"]), json.loads(str(z["attrs"])), ins, outs


def test_every_case_is_there():
    assert len(CASES) == 13


@pytest.mark.parametrize("name", CASES)
def test_imperative_matches_mxnet(name):
    op, attrs, ins, want = _case(name)
    got = getattr(mx.nd.contrib, op)(*[mx.nd.array(v, dtype=v.dtype) for v in ins], **attrs)
    got = got if isinstance(got, list) else [got]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        if w.dtype == np.float32:
            np.testing.assert_allclose(g.asnumpy(), w, rtol=1e-6, atol=0)
        else:
            np.testing.assert_array_equal(g.asnumpy(), w)


@pytest.mark.parametrize("name", ["quantize_v2_int8_calib", "dequantize_int8", "requantize_calib"])
def test_bound_graph_matches_mxnet(name):
    op, attrs, ins, want = _case(name)
    names = ["data", "min_range", "max_range"][: len(ins)]
    sym = getattr(mx.sym.contrib, op)(*[mx.sym.var(n) for n in names], **attrs)
    types = {n: v.dtype for n, v in zip(names, ins)}
    shapes = {n: v.shape for n, v in zip(names, ins)}
    ex = sym.simple_bind(mx.cpu(), grad_req="null", type_dict=types, **shapes)
    for n, v in zip(names, ins):
        ex.arg_dict[n][:] = v
    outs = ex.forward()
    assert outs[0].dtype == want[0].dtype
    got, ref = outs[0].asnumpy().astype(np.float64), want[0].astype(np.float64)
    np.testing.assert_allclose(got, ref, rtol=1e-6)


def test_names_shapes_and_types_as_mxnet():
    d, lo, hi = mx.sym.var("data"), mx.sym.var("mn"), mx.sym.var("mx")
    q = mx.sym.contrib.quantize(d, lo, hi)
    assert q.list_outputs() == ["quantize0_output0", "quantize0_output1", "quantize0_output2"]
    assert q.infer_shape(data=(2, 3))[:2] == ([(2, 3), (1,), (1,)], [(2, 3), (1,), (1,)])
    assert q.infer_type(data=np.float32)[1] == [np.uint8, np.float32, np.float32]
    assert mx.sym.contrib.dequantize(d, lo, hi).list_outputs() == ["dequantize0_output"]
    v2 = mx.sym.contrib.quantize_v2(d, out_type="auto", min_calib_range=0.0, max_calib_range=1.0)
    assert v2.infer_type(data=np.float32)[1][0] == np.uint8
    assert (
        mx.sym.contrib.quantize_v2(d, out_type="auto").infer_type(data=np.float32)[1][0] == np.int8
    )
    r = mx.sym.contrib.requantize(d, lo, hi)
    assert r.infer_type(data=np.int32)[1] == [np.int8, np.float32, np.float32]


def test_requantize_without_calibration_uses_the_datas_range():
    # MXNet's oneDNN kernel returns a swapped, sign-flipped range here; mxmod quantizes
    # with the data's own range
    q = mx.nd.array([1000, -2000000, 30000000, 2147483647, -2147483647, 5], dtype="int32")
    out, lo, hi = mx.nd.contrib.requantize(q, mx.nd.array([-1.0]), mx.nd.array([1.0]))
    np.testing.assert_array_equal(out.asnumpy(), [0, 0, 2, 127, -127, 0])
    assert lo.asscalar() == -1.0 and hi.asscalar() == 1.0


def test_an_all_zero_input_quantizes_to_zero():
    out, lo, hi = mx.nd.contrib.quantize_v2(mx.nd.zeros((3,)))
    np.testing.assert_array_equal(out.asnumpy(), [0, 0, 0])
    assert lo.asscalar() == 0 and hi.asscalar() == 0


def test_bad_inputs_name_the_problem():
    with pytest.raises(mx.base.MXNetError, match="the data must be int8 or uint8, got int32"):
        mx.sym.contrib.dequantize(mx.sym.var("d"), mx.sym.var("a"), mx.sym.var("b")).infer_type(
            d=np.int32
        )
    with pytest.raises(mx.base.MXNetError, match="dequantize: the data must be int8 or uint8"):
        mx.nd.contrib.dequantize(mx.nd.ones((2,)), mx.nd.array([-1.0]), mx.nd.array([1.0]))
    with pytest.raises(mx.base.MXNetError, match="requantize: the data must be int32"):
        mx.nd.contrib.requantize(mx.nd.ones((2,)), mx.nd.array([-1.0]), mx.nd.array([1.0]))
    with pytest.raises(mx.base.MXNetError, match="both min_calib_range and max_calib_range"):
        mx.nd.contrib.quantize_v2(mx.nd.ones((2,)), min_calib_range=-1.0)
    with pytest.raises(mx.base.MXNetError, match="min_range must have shape \\(1,\\)"):
        mx.sym.contrib.quantize(
            mx.sym.var("d"), mx.sym.var("a"), mx.sym.var("b"), out_type="int8"
        ).infer_shape(d=(2,), a=(2,), b=(1,))
