"""Variable attributes reach the initializer: ``__init__`` (Variable(init=...), PReLU's gamma,
BatchNorm's moving stats), ``__shape__``/``__dtype__`` in inference, sparse ``stype`` refused.

Goldens: tests/fixtures/surface/init_attrs.json, Module.init_params(mx.init.Xavier()) in MXNet.
"""

import json
import os
import sys

import numpy as np
import pytest

import mxmod as mx
from mxmod.initializer import InitDesc
from mxmod.test_utils import assert_almost_equal

FIX = os.path.join(os.path.dirname(__file__), "fixtures")
sys.path.insert(0, FIX)
import surface_nets  # noqa: E402


def _gold():
    with open(os.path.join(FIX, "surface", "init_attrs.json")) as f:
        return json.load(f)


def _init_all(net, shapes):
    """What Module.init_params does: InitDesc(name, attrs) per parameter, one global init."""
    arg_shapes, _, aux_shapes = net.infer_shape(**shapes)
    attrs = net.attr_dict()
    init = mx.init.Xavier()
    out = {}
    names = net.list_arguments() + net.list_auxiliary_states()
    for name, shape in zip(names, arg_shapes + aux_shapes):
        if name in shapes:
            continue
        arr = mx.nd.zeros(shape)
        init(InitDesc(name, attrs.get(name, {})), arr)
        out[name] = arr.asnumpy()
    return out


@pytest.mark.parametrize("source", ["built", "mxnet_json"])
def test_init_attrs_match_mxnet(source):
    gold = _gold()
    net = surface_nets.init_attrs_net(mx) if source == "built" else mx.sym.load_json(gold["json"])
    got = _init_all(net, {"data": (2, 5), "softmax_label": (2,)})
    for name, value in {**gold["arg"], **gold["aux"]}.items():
        assert_almost_equal(got[name], np.array(value, np.float32), names=(name, "mxnet"))


def test_init_attr_strings_match_mxnet():
    gold = _gold()["attrs"]
    attrs = surface_nets.init_attrs_net(mx).attr_dict()
    for name, expect in gold.items():
        assert json.loads(attrs[name]["__init__"]) == json.loads(expect["__init__"]), name


def test_init_attr_wins_over_name_rule():
    arr = mx.nd.zeros((3,))
    mx.init.Zero()(InitDesc("fc_bias", {"__init__": mx.init.Constant(2.0).dumps()}), arr)
    np.testing.assert_array_equal(arr.asnumpy(), [2, 2, 2])


def test_variable_shape_and_dtype_attrs_drive_inference():
    x = mx.sym.Variable("x", shape=(2, 3), dtype="float16")
    net = mx.sym.FullyConnected(x, num_hidden=4, name="fc")
    assert net.infer_shape()[1] == [(2, 4)]
    assert net.infer_type()[1] == [np.float16]


def test_sparse_stype_is_recorded_and_unknown_refused():
    assert mx.sym.Variable("w", stype="row_sparse").attr("__storage_type__") == "1"
    with pytest.raises(ValueError, match="unknown stype"):
        mx.sym.Variable("w", stype="dense")


def test_op_input_init_does_not_override_variable_init():
    g = mx.sym.Variable("g", init=mx.init.One())
    h = mx.sym.Variable("h", attr={"foo": "1"})
    mm = mx.sym.Variable("mm", init=mx.init.Constant(3.0))
    net = mx.sym.LeakyReLU(mx.sym.Variable("d"), gamma=g, act_type="prelu", name="p")
    net = mx.sym.LeakyReLU(net, gamma=h, act_type="prelu", name="q")
    net = mx.sym.BatchNorm(net, moving_mean=mm, moving_var=mx.sym.Variable("mv"), name="bn")
    attrs = net.attr_dict()  # as MXNet 1.9.1 reports them
    assert attrs["g"] == {"__init__": '["one", {}]'}
    assert attrs["h"] == {"__init__": '["Constant", {"value": 0.25}]', "foo": "1"}
    assert json.loads(attrs["mm"]["__init__"]) == ["constant", {"value": 3.0}]
    assert attrs["mv"] == {"__init__": '["one", {}]'}


def test_module_init_params_matches_mxnet():
    gold = _gold()
    mod = mx.mod.Module(surface_nets.init_attrs_net(mx), context=mx.cpu())
    mod.bind(data_shapes=[("data", (2, 5))], label_shapes=[("softmax_label", (2,))])
    mod.init_params(mx.init.Xavier())
    args, auxs = mod.get_params()
    for name, value in gold["arg"].items():
        assert_almost_equal(args[name], np.array(value, np.float32), names=(name, "mxnet"))
    for name, value in gold["aux"].items():
        assert_almost_equal(auxs[name], np.array(value, np.float32), names=(name, "mxnet"))


def test_unknown_storage_flag_in_mxnet_json_is_refused():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc")
    doc = json.loads(net.tojson())
    doc["nodes"][1].setdefault("attrs", {})["__storage_type__"] = "5"
    with pytest.raises(NotImplementedError, match=r"\('fc_weight'\) has __storage_type__=5"):
        mx.sym.load_json(json.dumps(doc))
    doc["nodes"][1]["attrs"]["__storage_type__"] = "1"  # row_sparse (issue 28)
    assert mx.sym.load_json(json.dumps(doc)).attr_dict()["fc_weight"]["__storage_type__"] == "1"
    doc["nodes"][1]["attrs"]["__storage_type__"] = "0"
    assert mx.sym.load_json(json.dumps(doc)).list_arguments() == ["data", "fc_weight", "fc_bias"]


def test_default_stype_is_recorded_like_mxnet():
    v = mx.sym.Variable("w", stype="default")
    assert v.attr_dict() == {"w": {"__storage_type__": "0"}}
    assert '"attrs": {"__storage_type__": "0"}' in v.tojson()
