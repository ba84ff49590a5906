"""``mx.sym.contrib.foreach`` and the ``_foreach`` operator against MXNet 1.9.1 goldens
(``fixtures/foreach/``, recorded by ``fixtures/gen_foreach_goldens.py`` from the builders of
``fixtures/foreach_cases.py``): the symbol JSON byte for byte, loading MXNet's JSON, outputs
and argument gradients.

MXNet's backward of the ``rnn`` case is wrong: only the last step's data gradient is right
(finite differences of its own forward disagree with the rest), so there mxmod's gradients
are checked against finite differences instead."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import mxmod as mx
from mxmod.symbol import control_flow

FIX = Path(__file__).resolve().parent / "fixtures"
sys.path.insert(0, str(FIX))
from foreach_cases import CASES  # noqa: E402


def _build(case):
    control_flow._COUNTS.clear()  # subgraph and node names count from 0 (as the goldens')
    with mx.name.NameManager():
        return CASES[case](mx)


def _gold(case):
    with np.load(FIX / "foreach" / f"{case}.npz") as z:
        return {k: z[k] for k in z.files}


def _run(sym, g):
    args = {k[4:]: v for k, v in g.items() if k.startswith("arg:")}
    ex = sym.simple_bind(mx.cpu(), grad_req="write", **{k: v.shape for k, v in args.items()})
    for k, v in args.items():
        ex.arg_dict[k][:] = v
    outs = [o.asnumpy() for o in ex.forward(is_train=True)]
    n = sum(1 for k in g if k.startswith("ograd:"))
    ex.backward([mx.nd.array(g[f"ograd:{i}"]) for i in range(n)])
    return outs, {k: v.asnumpy() for k, v in ex.grad_dict.items()}


@pytest.mark.parametrize("case", sorted(CASES))
def test_json_is_mxnets(case):
    sym, _ = _build(case)
    assert sym.tojson() == (FIX / "foreach" / f"{case}.json").read_text()


MXNET_BACKWARD_WRONG = {"rnn"}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("source", ["built", "loaded"])
def test_outputs_and_gradients_match_mxnet(case, source):
    if source == "built":
        sym = _build(case)[0]
    else:
        sym = mx.sym.load(str(FIX / "foreach" / f"{case}.json"))
    g = _gold(case)
    outs, grads = _run(sym, g)
    for i, o in enumerate(outs):
        np.testing.assert_allclose(o, g[f"out:{i}"], rtol=1e-5, atol=1e-6, err_msg=f"out {i}")
    if case in MXNET_BACKWARD_WRONG:
        return
    for k, v in grads.items():
        np.testing.assert_allclose(v, g[f"grad:{k}"], rtol=1e-4, atol=1e-5, err_msg=k)


def test_rnn_gradients_match_finite_differences():
    sym, _ = _build("rnn")
    g = _gold("rnn")
    heads = [mx.sym.var(f"head{i}") for i in range(len(sym.list_outputs()))]
    loss = mx.sym.add_n(*[mx.sym.sum(sym[i] * h) for i, h in enumerate(heads)])
    loc = {k[4:]: v for k, v in g.items() if k.startswith("arg:")}
    loc.update({f"head{i}": g[f"ograd:{i}"] for i in range(len(heads))})
    grad_nodes = ["data", "h0", "i2h_weight", "h2h_weight", "proj_weight"]
    mx.test_utils.check_numeric_gradient(
        loss, loc, grad_nodes=grad_nodes, numeric_eps=1e-2, rtol=2e-2, atol=2e-2
    )


def test_shapes_infer_through_the_body():
    sym, shapes = _build("rnn")
    args, outs, _ = sym.infer_shape(**shapes)
    inferred = dict(zip(sym.list_arguments(), args))
    assert inferred["i2h_weight"] == (5, 3) and inferred["h2h_weight"] == (5, 5)
    assert outs == [(6, 2, 5), (6, 2, 5), (2, 5), (2, 5)]


def test_module_trains_through_foreach():
    sym, shapes = _build("cumulative")
    loss = mx.sym.MakeLoss(mx.sym.sum(mx.sym.square(sym[0] - 1.0)))
    mod = mx.mod.Module(loss, data_names=["data"], label_names=None, fixed_param_names=["state"])
    mod.bind([("data", (4, 3))])
    mod.init_params(arg_params={"w": mx.nd.full((3,), 0.5), "state": mx.nd.zeros((3,))})
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.01})
    batch = mx.io.DataBatch([mx.nd.ones((4, 3))])
    losses = []
    for _ in range(5):
        mod.forward_backward(batch)
        losses.append(float(mod.get_outputs()[0].asnumpy().sum()))
        mod.update()
    assert losses[-1] < losses[0]


def test_misuse_is_explained():
    with pytest.raises(ValueError, match="does not use its data"):
        mx.sym.contrib.foreach(lambda x, s: (s[0] * 2, s), mx.sym.var("d"), [mx.sym.var("s")])
    with pytest.raises(ValueError, match="nested as"):
        mx.sym.contrib.foreach(lambda x, s: (x, [s, s]), mx.sym.var("d"), mx.sym.var("s"))
    with pytest.raises(TypeError, match="nested list of Symbols"):
        mx.sym.contrib.foreach(lambda x, s: (x, s), 3, [mx.sym.var("s")])
