"""Operator bugs found by running MXNet 1.9.1's own unit tests against mxmod (issue 23):
box_nms format conversion, MultiBoxPrior's first ratio, gradientmultiplier, and ``mx.nd``
functions given an attribute as None. Goldens: tests/fixtures/gen_issue23_ops.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import mxmod as mx

FIX = Path(__file__).parent / "fixtures" / "issue23_ops"


def _load(name):
    meta = json.loads((FIX / f"{name}.json").read_text())
    with np.load(FIX / f"{name}.npz") as z:
        return meta, dict(z)


NMS_META, NMS = _load("box_nms")
PRIOR_META, PRIOR = _load("multibox_prior")
ORDER_META, ORDER = _load("order")


def _tol(dtype):
    return {"rtol": 1e-3, "atol": 2e-3} if dtype == "float16" else {"rtol": 1e-5, "atol": 1e-5}


# ------------------------------------------------------------------ box_nms
@pytest.mark.parametrize("case", sorted(NMS_META))
def test_box_nms_imperative_matches_mxnet(case):
    m = NMS_META[case]
    data = mx.nd.array(NMS[f"in:{m['input']}"], dtype=m["dtype"])
    out = mx.nd.contrib.box_nms(data, **m["kwargs"]).asnumpy()
    np.testing.assert_allclose(out, NMS[f"out:{case}"], **_tol(m["dtype"]))


@pytest.mark.parametrize("case", ["center_corner_2d", "center_center_3d", "center_ids_force"])
def test_box_nms_bound_symbol_matches_mxnet(case):
    m = NMS_META[case]
    x = NMS[f"in:{m['input']}"]
    sym = mx.sym.contrib.box_nms(mx.sym.var("data"), **m["kwargs"])
    exe = sym.simple_bind(mx.cpu(), data=x.shape, type_dict={"data": m["dtype"]})
    exe.arg_dict["data"][:] = x
    out = exe.forward(is_train=False)[0].asnumpy()
    np.testing.assert_allclose(out, NMS[f"out:{case}"], **_tol(m["dtype"]))


def test_box_nms_center_input_gives_both_corners_for_several_boxes():
    # the MXNet unit test's case: x2/y2 must be centre + half size, not the centre
    rows = np.array([[2, 0.6, 0.6, 0.65, 0.2, 0.3], [0, 0.5, 0.15, 0.15, 0.1, 0.1]], np.float32)
    out = mx.nd.contrib.box_nms(mx.nd.array(rows), in_format="center").asnumpy()
    np.testing.assert_allclose(out[:, 2:], [[0.5, 0.5, 0.7, 0.8], [0.1, 0.1, 0.2, 0.2]], atol=1e-6)


# ------------------------------------------------------------------ MultiBoxPrior
@pytest.mark.parametrize("case", sorted(PRIOR_META))
def test_multibox_prior_matches_mxnet(case):
    m = PRIOR_META[case]
    out = mx.nd.contrib.MultiBoxPrior(mx.nd.zeros(tuple(m["shape"])), **m["kwargs"])
    np.testing.assert_allclose(out.asnumpy(), PRIOR[f"out:{case}"], rtol=1e-6, atol=1e-6)


# ------------------------------------------------------------------ gradientmultiplier
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_gradientmultiplier_is_identity_forward_and_scales_the_gradient(dtype):
    x = np.arange(-3, 3, dtype=dtype).reshape(2, 3) / 2
    head = np.array([[1, -2, 3], [0.5, 4, -1]], dtype)
    sym = mx.sym.contrib.gradientmultiplier(mx.sym.var("x"), scalar=-0.25)
    assert json.loads(sym.tojson())["nodes"][1]["op"] == "_contrib_gradientmultiplier"
    exe = sym.simple_bind(mx.cpu(), x=x.shape, type_dict={"x": dtype})
    exe.arg_dict["x"][:] = x
    out = exe.forward(is_train=True)[0]
    exe.backward(mx.nd.array(head, dtype=dtype))
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.asnumpy(), x)
    np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), head * np.asarray(-0.25, dtype))
    nd_out = mx.nd.contrib.gradientmultiplier(mx.nd.array(x, dtype=dtype), scalar=3)
    np.testing.assert_array_equal(nd_out.asnumpy(), x)


def test_gradientmultiplier_rejects_a_bad_scalar():
    with pytest.raises(mx.base.MXNetError, match="scalar"):
        mx.sym.contrib.gradientmultiplier(mx.sym.var("x"), scalar="half")


# ------------------------------------------------------------------ None attributes in mx.nd
@pytest.mark.parametrize("case", sorted(ORDER_META["cases"]))
def test_ordering_ops_match_mxnet(case):
    m = ORDER_META["cases"][case]
    res = getattr(mx.nd, m["op"])(mx.nd.array(ORDER[f"in:{m['input']}"]), **m["kwargs"])
    outs = res if isinstance(res, list) else [res]
    assert len(outs) == m["n_out"]
    for i, o in enumerate(outs):
        want = ORDER[f"out:{case}:{i}"]
        assert o.shape == want.shape and o.dtype == want.dtype
        np.testing.assert_array_equal(o.asnumpy(), want)


@pytest.mark.parametrize("case", sorted(ORDER_META["cases"]))
def test_ordering_symbols_agree_with_mx_nd(case):
    m = ORDER_META["cases"][case]
    x = ORDER[f"in:{m['input']}"]
    sym = getattr(mx.sym, m["op"])(mx.sym.var("x"), **m["kwargs"])
    exe = sym.simple_bind(mx.cpu(), x=x.shape, grad_req="null")
    exe.arg_dict["x"][:] = x
    for i, o in enumerate(exe.forward(is_train=False)):
        np.testing.assert_array_equal(o.asnumpy(), ORDER[f"out:{case}:{i}"])


@pytest.mark.parametrize("case", sorted(ORDER_META["errors"]))
def test_a_none_the_attribute_cannot_take_is_refused(case):
    m = ORDER_META["errors"][case]
    (key,) = m["kwargs"]
    with pytest.raises(mx.base.MXNetError, match=f"{key}='None' is invalid"):
        getattr(mx.nd, m["op"])(mx.nd.array(ORDER[f"in:{m['input']}"]), **m["kwargs"])
    assert f"{key}=\"None\"" in m["message"]  # MXNet refuses the same string


def test_none_inputs_are_left_out_and_unknown_none_keywords_refused():
    x, w = mx.nd.ones((2, 3)), mx.nd.ones((4, 3))
    out = mx.nd.FullyConnected(data=x, weight=w, bias=None, no_bias=True, num_hidden=4)
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 4), 3, np.float32))
    with pytest.raises(mx.base.MXNetError, match="unknown attribute 'axs'"):
        mx.nd.topk(x, axs=None)
    # an op without attributes ignores extra keywords, None or not, as MXNet does
    np.testing.assert_array_equal(mx.nd.relu(x - 2, foo=None).asnumpy(), np.zeros((2, 3)))


def test_optional_attributes_given_none_keep_their_meaning():
    x = mx.nd.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    np.testing.assert_array_equal(mx.nd.sum(x, axis=None).asnumpy(), [66])
    np.testing.assert_array_equal(mx.nd.max(x, axis=None, keepdims=True).asnumpy(), [[11]])
    soft = mx.nd.softmax(x, temperature=None, length=None).asnumpy()
    np.testing.assert_allclose(soft, mx.nd.softmax(x).asnumpy())
    np.testing.assert_array_equal(mx.nd.squeeze(mx.nd.ones((1, 3, 1)), axis=None).shape, (3,))
