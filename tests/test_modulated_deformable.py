"""``_contrib_ModulatedDeformableConvolution``: outputs against MXNet 1.9.1 goldens
(``fixtures/modulated_deformable/``, recorded by
``fixtures/gen_modulated_deformable_goldens.py``; MXNet's CPU build has no backward for it)
and gradients against finite differences."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

FIX = Path(__file__).resolve().parent / "fixtures" / "modulated_deformable"
CASES = sorted(p.stem for p in FIX.glob("*.npz"))


def load(case: str):
    with np.load(FIX / f"{case}.npz") as z:
        g = {k: z[k] for k in z.files}
    args = {k[4:]: v for k, v in g.items() if k.startswith("arg:")}
    return args, json.loads(str(g["attrs"])), g["out:0"]


def symbol(args: dict, attrs: dict):
    ins = [mx.sym.var(k) for k in args]
    return mx.sym.contrib.ModulatedDeformableConvolution(*ins, name="op", **attrs)


@pytest.mark.parametrize("case", CASES)
def test_forward_matches_mxnet(case):
    args, attrs, want = load(case)
    got = mx.nd.contrib.ModulatedDeformableConvolution(
        *[mx.nd.array(v) for v in args.values()], **attrs
    )
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", CASES)
def test_gradients_match_finite_differences(case):
    args, attrs, _ = load(case)
    # away from the sampling grid's cell edges, where the bilinear weights have kinks
    args["offset"] = np.round(args["offset"] * 2) / 2 + 0.25
    mx.test_utils.check_numeric_gradient(
        symbol(args, attrs), args, numeric_eps=1e-2, rtol=2e-2, atol=2e-2, dtype=np.float32
    )


def test_shapes_and_inputs():
    sym = symbol(
        {"data": 0, "offset": 0, "mask": 0, "weight": 0, "bias": 0},
        {"kernel": (3, 3), "pad": (1, 1), "num_filter": 4, "num_deformable_group": 2},
    )
    args, outs, _ = sym.infer_shape(data=(2, 6, 5, 7))
    assert args == [(2, 6, 5, 7), (2, 36, 5, 7), (2, 18, 5, 7), (4, 6, 3, 3), (4,)]
    assert outs == [(2, 4, 5, 7)]
    no_bias = mx.sym.contrib.ModulatedDeformableConvolution(
        mx.sym.var("data"), kernel=(3, 3), num_filter=2, no_bias=True, name="m"
    )
    assert no_bias.list_arguments() == ["data", "m_offset", "m_mask", "m_weight"]


def test_bad_kernel_is_refused():
    sym = mx.sym.contrib.ModulatedDeformableConvolution(
        mx.sym.var("data"), kernel=(3, 3, 3), num_filter=2, name="m"
    )
    with pytest.raises(MXNetError, match="2-D"):
        sym.infer_shape(data=(1, 2, 5, 5, 5))
