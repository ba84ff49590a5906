"""Gluon RNN layers exported by MXNet 1.9.1 (``HybridBlock.export``: the flat weights
joined by ``_rnn_param_concat``) load and run in mxmod with MXNet's outputs
(``tests/fixtures/gluon_rnn``, from ``gen_gluon_rnn_export.py``)."""

import os

import numpy as np
import pytest

import mxmod as mx

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "gluon_rnn")
IO = np.load(os.path.join(HERE, "io.npz"))


@pytest.mark.parametrize("name,layers,hidden", [("lstm", 2, 8), ("gru", 2, 6)])
def test_exported_rnn_layer_runs_with_mxnets_outputs(name, layers, hidden):
    sym = mx.sym.load(os.path.join(HERE, f"{name}-symbol.json"))
    params = mx.nd.load(os.path.join(HERE, f"{name}-0000.params"))
    args = {k.split(":", 1)[1]: v for k, v in params.items()}
    states = [a for a in sym.list_arguments() if a.startswith("data") and a != "data0"]
    for s in states:  # the begin states Gluon's export leaves as inputs
        args[s] = mx.nd.zeros((layers, 2, hidden))
    args["data0"] = mx.nd.array(IO["data"])
    out = sym.bind(mx.cpu(), args).forward()[0].asnumpy()
    np.testing.assert_allclose(out, IO[name], rtol=1e-5, atol=1e-6)


def test_rnn_param_concat_joins_like_concat():
    a, b = mx.nd.array([1.0, 2.0]), mx.nd.array([3.0])
    joined = mx.nd._internal._rnn_param_concat(a, b, dim=0, num_args=2)
    np.testing.assert_array_equal(joined.asnumpy(), [1, 2, 3])
