"""Symbol files saved after MXNet's oneDNN partitioning load as the graph they came from
(``tests/fixtures/gen_onednn_partitioned.py``: MXNet 1.9.1's ``get_backend_symbol('MKLDNN')``
output, its parameters and its inference output)."""

import json
from pathlib import Path

import numpy as np
import pytest

import mxmod as mx

FIX = Path(__file__).parent / "fixtures" / "onednn"


def test_partitioned_checkpoint_runs_as_mxnet():
    sym, args, aux = mx.model.load_checkpoint(str(FIX / "net"), 0)
    assert sym.list_arguments() == [
        "data", "c1_weight", "c1_bias", "bn1_gamma", "bn1_beta", "c2_weight", "c2_bias",
        "fc_weight", "fc_bias",
    ]  # fmt: skip
    assert sym.list_auxiliary_states() == ["bn1_moving_mean", "bn1_moving_var"]
    io = np.load(FIX / "io.npz")
    ex = sym.bind(mx.cpu(), {"data": mx.nd.array(io["data"]), **args}, aux_states=aux)
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), io["out"], rtol=1e-5, atol=1e-7)


def test_module_predicts_with_the_partitioned_checkpoint():
    io = np.load(FIX / "io.npz")
    mod = mx.mod.Module.load(str(FIX / "net"), 0, label_names=None)
    mod.bind([("data", io["data"].shape)], for_training=False)
    it = mx.io.NDArrayIter(io["data"], batch_size=2)
    np.testing.assert_allclose(mod.predict(it).asnumpy(), io["out"], rtol=1e-5, atol=1e-7)


def test_saved_again_it_is_the_unpartitioned_graph():
    sym = mx.sym.load(str(FIX / "net-symbol.json"))
    ops = [n["op"] for n in json.loads(sym.tojson())["nodes"] if n["op"] != "null"]
    assert ops == ["Convolution", "BatchNorm", "Activation", "Convolution", "elemwise_add",
                   "Flatten", "FullyConnected", "softmax"]  # fmt: skip
    again = mx.sym.load_json(sym.tojson())
    assert again.list_arguments() == sym.list_arguments()


def _graph():
    return json.loads((FIX / "net-symbol.json").read_text())


def test_a_quantized_fused_node_is_refused():
    g = _graph()
    fused = next(n for n in g["nodes"] if n["op"] == "_sg_mkldnn_conv")
    fused.setdefault("attrs", {})["quantized"] = "true"
    with pytest.raises(NotImplementedError, match="quantized oneDNN node"):
        mx.sym.load_json(json.dumps(g))


def test_a_fused_node_whose_inputs_do_not_match_its_subgraph_is_refused():
    g = _graph()
    fused = next(n for n in g["nodes"] if n["op"] == "_sg_mkldnn_fully_connected")
    fused["inputs"] = fused["inputs"][:2]
    with pytest.raises(mx.base.MXNetFileError, match="has 2 inputs but its subgraph 3"):
        mx.sym.load_json(json.dumps(g))


def test_a_subgraph_out_of_data_flow_order_is_refused():
    g = _graph()
    fused = next(n for n in g["nodes"] if n["op"] == "_sg_mkldnn_fully_connected")
    fused["subgraphs"][0]["nodes"][3]["inputs"][0] = [3, 0, 0]  # reads itself
    with pytest.raises(mx.base.MXNetFileError, match="reads node 3 before it is computed"):
        mx.sym.load_json(json.dumps(g))


def test_a_fused_operator_without_a_subgraph_is_named():
    g = _graph()
    fused = next(n for n in g["nodes"] if n["op"] == "_sg_mkldnn_fully_connected")
    fused["op"] = "_sg_mkldnn_selfatt_qk"
    del fused["subgraphs"]
    with pytest.raises(NotImplementedError, match="_sg_mkldnn_selfatt_qk .* without a subgraph"):
        mx.sym.load_json(json.dumps(g))
