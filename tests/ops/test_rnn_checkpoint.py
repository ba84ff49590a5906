"""The fused RNN op reproduces MXNet 1.9.1 for 2-layer bidirectional LSTM and GRU with
parameters loaded from an MXNet-written checkpoint (fixtures/gen_rnn_params.py)."""

import os

import numpy as np
import pytest

import mxmod as mx

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "rnn")


@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_rnn_matches_mxnet_with_mxnet_params(mode):
    prefix = os.path.join(HERE, mode)
    sym, arg_params, aux_params = mx.model.load_checkpoint(prefix, 0)
    ref = np.load(prefix + ".npz")
    assert sorted(arg_params) == sorted(a for a in sym.list_arguments() if a != "data")
    # via the Executor
    args = dict(arg_params, data=mx.nd.array(ref["data"]))
    outs = sym.bind(mx.cpu(), args=args).forward(is_train=False)
    n_out = 3 if mode == "lstm" else 2
    assert len(outs) == n_out
    for i, o in enumerate(outs):
        np.testing.assert_allclose(
            o.asnumpy(), ref[f"out{i}"], rtol=1e-4, atol=1e-5, err_msg=f"{mode} output {i}"
        )
    # and via a Module, the way MXNet users run a loaded checkpoint
    mod = mx.mod.Module(sym, data_names=["data"], label_names=None)
    mod.bind([mx.io.DataDesc("data", ref["data"].shape, layout="TNC")], for_training=False)
    mod.set_params(arg_params, aux_params)
    mod.forward(mx.io.DataBatch([mx.nd.array(ref["data"])]), is_train=False)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), ref["out0"], rtol=1e-4, atol=1e-5)
