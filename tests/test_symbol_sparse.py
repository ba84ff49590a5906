"""Sparse symbols and bound executors against MXNet 1.9.1 goldens (issue 28):
``tests/fixtures/gen_symbol_sparse.py`` runs the graphs of ``symbol_sparse_cases.py``."""

import json
import pathlib
import sys

import numpy as np
import pytest

import mxmod as mx

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
sys.path.insert(0, str(FIXTURES))
import symbol_sparse_cases as cases  # noqa: E402

GOLD = FIXTURES / "symbol_sparse"


def _run(case):
    sym, shapes, stype_dict, inputs, grad_req, head = case(mx)
    exe = sym.simple_bind(mx.cpu(), grad_req=grad_req, stype_dict=stype_dict, **shapes)
    for k, v in inputs.items():
        arr = exe.arg_dict[k]
        value = mx.nd.array(v)
        if arr.stype != "default":
            value = value.tostype(arr.stype)
        value.copyto(arr)
    exe.forward(is_train=True)
    exe.backward([mx.nd.array(h) for h in head(exe.outputs)])
    return exe


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_forward_backward_and_storage_types_match_mxnet(name):
    gold = np.load(GOLD / f"{name}.npz")
    exe = _run(cases.CASES[name])
    for i, o in enumerate(exe.outputs):
        np.testing.assert_allclose(o.asnumpy(), gold[f"out{i}"], rtol=1e-5, atol=1e-6)
        assert o.stype == str(gold[f"out{i}_stype"])
    for k, a in exe.arg_dict.items():
        assert a.stype == str(gold[f"arg_{k}_stype"]), k
    grads = {k: g for k, g in exe.grad_dict.items() if g is not None}
    gold_grads = [k[5:-6] for k in gold if k.startswith("grad_") and k.endswith("_stype")]
    assert sorted(grads) == sorted(gold_grads)
    for k, g in grads.items():
        assert g.stype == str(gold[f"grad_{k}_stype"]), k
        np.testing.assert_allclose(g.asnumpy(), gold[f"grad_{k}"], rtol=1e-5, atol=1e-6)
        if g.stype == "row_sparse":
            np.testing.assert_array_equal(g.indices.asnumpy(), gold[f"grad_{k}_indices"])


def test_sparse_symbols_write_mxnet_json():
    want = json.loads((GOLD / "symbols.json").read_text())
    for name, make in cases.SYMBOLS.items():
        with mx.name.NameManager():
            assert json.loads(make(mx).tojson()) == json.loads(want[name]), name
        assert json.loads(mx.sym.load_json(want[name]).tojson()) == json.loads(want[name]), name


def test_sparse_namespace_and_errors():
    x = mx.sym.var("x", stype="csr")
    w = mx.sym.var("w")
    assert mx.sym.sparse.dot(x, w, name="d").tojson() == mx.sym.dot(x, w, name="d").tojson()
    assert "dot" in dir(mx.sym.sparse)
    with pytest.raises(NotImplementedError, match="sgd_update"):
        mx.sym.sparse.sgd_update
    with pytest.raises(AttributeError):
        mx.sym.sparse.no_such_op
    with pytest.raises(ValueError, match="unknown stype"):
        mx.sym.var("x", stype="dense")
    with pytest.raises(ValueError, match="stype_dict names 'y'"):
        mx.sym.dot(x, mx.sym.var("w")).simple_bind(
            mx.cpu(), x=(2, 3), w=(3, 1), stype_dict={"y": "csr"}
        )
    with pytest.raises(ValueError, match="stype_dict\\['w'\\] = 'sparse'"):
        mx.sym.dot(x, mx.sym.var("w")).simple_bind(
            mx.cpu(), x=(2, 3), w=(3, 1), stype_dict={"w": "sparse"}
        )


def test_test_utils_checks_take_sparse_gradients():
    x, w = mx.sym.var("x", stype="csr"), mx.sym.var("w")
    xv = np.array([[0, 2, 0], [1, 0, 0]], np.float32)
    loc = {"x": mx.nd.array(xv).tostype("csr"), "w": np.ones((3, 2))}
    kw = dict(grad_stypes={"w": "row_sparse"}, grad_req={"x": "null", "w": "write"})
    want = xv.T @ np.ones((2, 2))
    g = mx.test_utils.check_symbolic_backward(mx.sym.dot(x, w), loc, [np.ones((2, 2))],
                                              {"w": want}, **kw)  # fmt: skip
    assert g["w"].stype == "row_sparse"
    with pytest.raises(AssertionError):
        mx.test_utils.check_symbolic_backward(mx.sym.dot(x, w), loc, [np.ones((2, 2))],
                                              {"w": want + 1}, **kw)  # fmt: skip
    emb = mx.sym.Embedding(mx.sym.var("d"), input_dim=5, output_dim=2, sparse_grad=True, name="e")
    mx.test_utils.check_numeric_gradient(
        emb, {"d": np.array([1.0, 3.0, 3.0]), "e_weight": np.random.rand(5, 2)},
        grad_nodes=["e_weight"], grad_stype_dict={"e_weight": "row_sparse"},
    )  # fmt: skip
