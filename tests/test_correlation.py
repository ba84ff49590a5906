"""``Correlation`` against MXNet 1.9.1 goldens (``fixtures/correlation/``, recorded by
``fixtures/gen_correlation_goldens.py``): output and both input gradients, multiplicative
and absolute-difference, with strides, padding and window sizes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

FIX = Path(__file__).resolve().parent / "fixtures" / "correlation"
CASES = sorted(p.stem for p in FIX.glob("*.npz"))


@pytest.mark.parametrize("case", CASES)
def test_matches_mxnet(case):
    with np.load(FIX / f"{case}.npz") as z:
        g = {k: z[k] for k in z.files}
    attrs = json.loads(str(g["attrs"]))
    sym = mx.sym.Correlation(mx.sym.var("data1"), mx.sym.var("data2"), name="corr", **attrs)
    shape = g["arg:data1"].shape
    ex = sym.simple_bind(mx.cpu(), data1=shape, data2=shape)
    ex.arg_dict["data1"][:] = g["arg:data1"]
    ex.arg_dict["data2"][:] = g["arg:data2"]
    out = ex.forward(is_train=True)[0].asnumpy()
    np.testing.assert_allclose(out, g["out:0"], rtol=1e-4, atol=1e-5)
    ex.backward([mx.nd.array(g["ograd:0"])])
    for name in ("data1", "data2"):
        np.testing.assert_allclose(
            ex.grad_dict[name].asnumpy(), g[f"grad:{name}"], rtol=1e-4, atol=1e-5, err_msg=name
        )


def test_outputs_and_json():
    sym = mx.sym.Correlation(
        mx.sym.var("a"), mx.sym.var("b"), kernel_size=3, max_displacement=2, pad_size=2, name="corr"
    )
    assert sym.list_outputs() == ["corr_output"]
    assert json.loads(sym.tojson())["node_row_ptr"] == [0, 1, 2, 5]  # MXNet 1.9.1's
    _, out, _ = sym.infer_shape(a=(1, 3, 7, 8), b=(1, 3, 7, 8))
    assert out == [(1, 25, 5, 6)]


@pytest.mark.parametrize(
    "attrs,shape,msg",
    [
        ({"kernel_size": 2}, (1, 1, 5, 5), "must be odd"),
        ({"max_displacement": 4}, (1, 1, 5, 5), "too small"),
        ({}, (1, 5, 5), "4-D"),
    ],
)
def test_bad_geometry_is_refused(attrs, shape, msg):
    sym = mx.sym.Correlation(mx.sym.var("a"), mx.sym.var("b"), **attrs)
    with pytest.raises(MXNetError, match=msg):
        sym.infer_shape(a=shape, b=shape)
