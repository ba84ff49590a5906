"""``mx.nd.<Op>`` runs every single-operator golden case imperatively (inference mode)
and reproduces real MXNet's forward outputs."""

import json

import numpy as np
import pytest

import mxmod as mx

from ._harness import Golden
from .cases import CASES

# forward depends on is_train for these; the nd path runs in inference mode
TRAIN_DEPENDENT = {"BatchNorm", "Dropout", "RNN", "LeakyReLU", "_contrib_SyncBatchNorm"}


def _single_op_cases():
    out = []
    for case in CASES:
        golden = Golden(case.id)
        nodes = json.loads(golden.json)["nodes"]
        ops = [n for n in nodes if n["op"] != "null"]
        if len(ops) != 1 or case.random:
            continue
        if case.is_train and ops[0]["op"] in TRAIN_DEPENDENT:
            continue
        out.append(pytest.param(case, golden, ops[0], nodes, id=case.id))
    return out


@pytest.mark.parametrize("case,golden,node,nodes", _single_op_cases())
def test_nd_function_matches_mxnet_forward(case, golden, node, nodes):
    fn = getattr(mx.nd, node["op"])
    values = {**golden.args, **golden.aux}
    inputs = [
        mx.nd.array(values[nodes[i]["name"]], dtype=values[nodes[i]["name"]].dtype)
        for i, _, _ in node["inputs"]
    ]
    op = mx.ops.get_op(node["op"])
    # typed values, as a user passes them (hand-written nd functions take no strings)
    attrs = {k: op.params[k].parse(v) for k, v in node.get("attrs", {}).items() if k in op.params}
    res = fn(*inputs, **attrs)
    res = res if isinstance(res, list) else [res]
    assert len(res) >= 1
    for got, want in zip(res, golden.outs):
        scale = max(1.0, float(np.abs(want).max()) if want.size else 1.0)
        np.testing.assert_allclose(
            got.asnumpy().astype("float64"),
            want.astype("float64"),
            rtol=1e-4,
            atol=1e-4 * scale,
            err_msg=case.id,
        )


def test_nd_function_errors():
    with pytest.raises(mx.MXNetError, match="needs input 'weight'"):
        mx.nd.FullyConnected(mx.nd.ones((2, 3)), num_hidden=4)
    with pytest.raises(mx.MXNetError, match="required attribute 'num_hidden'"):
        mx.nd.FullyConnected(mx.nd.ones((2, 3)), mx.nd.ones((4, 3)), mx.nd.ones((4,)))
    with pytest.raises(AttributeError):
        mx.nd.NoSuchOperator
