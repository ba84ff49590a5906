"""MXNet's deprecated ``Convolution_v1``, ``Pooling_v1`` and ``BatchNorm_v1`` against MXNet
1.9.1 goldens (``fixtures/deprecated_ops/``, recorded by
``fixtures/gen_deprecated_ops_goldens.py``): outputs, argument gradients and moving
statistics."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

FIX = Path(__file__).resolve().parent / "fixtures" / "deprecated_ops"
CASES = sorted(p.stem for p in FIX.glob("*.npz"))


def load(case: str) -> dict:
    with np.load(FIX / f"{case}.npz") as z:
        return {k: z[k] for k in z.files}


def group(g: dict, prefix: str) -> dict:
    return {k[len(prefix) :]: v for k, v in g.items() if k.startswith(prefix)}


def run(g: dict):
    args, aux = group(g, "arg:"), group(g, "aux:")
    train = "ograd:0" in g
    op = getattr(mx.sym, str(g["op"]))
    sym = op(*[mx.sym.var(n) for n in args], name="op", **json.loads(str(g["attrs"])))
    ex = sym.simple_bind(
        mx.cpu(), grad_req="write" if train else "null", **{k: v.shape for k, v in args.items()}
    )
    for k, v in args.items():
        ex.arg_dict[k][:] = v
    for k, v in aux.items():
        ex.aux_dict[k][:] = v
    outs = [o.asnumpy() for o in ex.forward(is_train=train)]
    grads = {}
    if train:
        heads = [g[f"ograd:{i}"] for i in range(len(outs))]
        ex.backward([mx.nd.array(h) for h in heads])
        grads = {k: v.asnumpy() for k, v in ex.grad_dict.items() if v is not None}
    return outs, grads, {k: v.asnumpy() for k, v in ex.aux_dict.items()}


@pytest.mark.parametrize("case", CASES)
def test_v1_operator_matches_mxnet(case):
    g = load(case)
    outs, grads, aux = run(g)
    assert len(outs) == len(group(g, "out:"))
    for i, o in enumerate(outs):
        np.testing.assert_allclose(o, g[f"out:{i}"], rtol=1e-4, atol=1e-5, err_msg=f"out:{i}")
    for k, v in group(g, "grad:").items():
        np.testing.assert_allclose(grads[k], v, rtol=1e-4, atol=1e-4, err_msg=f"grad:{k}")
    for k, v in group(g, "auxout:").items():
        np.testing.assert_allclose(aux[k], v, rtol=1e-5, atol=1e-6, err_msg=f"auxout:{k}")


def test_goldens_cover_every_v1_operator():
    assert {str(load(c)["op"]) for c in CASES} == {"Convolution_v1", "Pooling_v1", "BatchNorm_v1"}


def test_v1_nodes_load_from_json_and_take_attributes_positionally():
    data = mx.sym.var("data")
    conv = mx.sym.Convolution_v1(data, kernel=(3, 3), num_filter=2, name="c")
    net = mx.sym.Pooling_v1(conv, (2, 2), "avg", name="p")
    net = mx.sym.BatchNorm_v1(net, name="bn")
    again = mx.sym.load_json(net.tojson())
    assert [n["op"] for n in json.loads(again.tojson())["nodes"] if n["op"] != "null"] == [
        "Convolution_v1",
        "Pooling_v1",
        "BatchNorm_v1",
    ]
    assert again.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    _, out, _ = again.infer_shape(data=(1, 3, 8, 8))
    assert out == [(1, 2, 5, 5)]  # MXNet 1.9.1: stride 1 by default
    assert again.list_outputs() == ["bn_output"]


def test_pooling_v1_refuses_lp_pooling():
    with pytest.raises(MXNetError, match="pool_type"):
        mx.sym.Pooling_v1(mx.sym.var("data"), kernel=(2, 2), pool_type="lp")
