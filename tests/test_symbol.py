"""Symbol construction, naming, attributes, inference and JSON (issue #2)."""

import copy
import json
import pathlib

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError
from mxmod.test_utils import check_numeric_gradient, check_symbolic_forward

GOLD = json.loads(
    (pathlib.Path(__file__).parent / "fixtures" / "symbol_executor" / "goldens.json").read_text()
)


def net():
    data = mx.sym.Variable("data")
    x = mx.sym.FullyConnected(data, name="fc1", num_hidden=64)
    x = mx.sym.Activation(x, name="relu1", act_type="relu")
    x = mx.sym.FullyConnected(x, name="fc2", num_hidden=26)
    return mx.sym.SoftmaxOutput(x, name="softmax")


def test_lists_and_shapes():
    s = net()
    assert s.list_arguments() == [
        "data",
        "fc1_weight",
        "fc1_bias",
        "fc2_weight",
        "fc2_bias",
        "softmax_label",
    ]
    assert s.list_outputs() == ["softmax_output"]
    assert s.list_auxiliary_states() == []
    args, outs, aux = s.infer_shape(data=(32, 100))
    assert args == [(32, 100), (64, 100), (64,), (26, 64), (26,), (32,)]
    assert outs == [(32, 26)] and aux == []
    types = s.infer_type(data="float32")
    assert types[1] == [np.float32]


def test_batchnorm_aux_and_internals():
    x = mx.sym.BatchNorm(mx.sym.Variable("data"), name="bn")
    assert x.list_arguments() == ["data", "bn_gamma", "bn_beta"]
    assert x.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert x.list_inputs() == ["data", "bn_gamma", "bn_beta", "bn_moving_mean", "bn_moving_var"]
    internals = net().get_internals()
    assert "relu1_output" in internals.list_outputs()
    fc1 = internals["fc1_output"]
    assert fc1.list_outputs() == ["fc1_output"]
    assert fc1.infer_shape(data=(2, 3))[1] == [(2, 64)]
    children = net().get_children()
    assert children.list_outputs() == ["fc2_output", "softmax_label"]
    assert mx.sym.Variable("v").get_children() is None


def test_automatic_names_prefix_and_attr_scope():
    with mx.name.NameManager():
        a = mx.sym.FullyConnected(mx.sym.Variable("d"), num_hidden=2)
        b = mx.sym.FullyConnected(a, num_hidden=2)
        assert (a.name, b.name) == ("fullyconnected0", "fullyconnected1")
        c = mx.sym.Variable("d") + 1
        assert c.name == "_plusscalar0"
    with mx.name.Prefix("net_"):
        p = mx.sym.Activation(mx.sym.Variable("x"), act_type="relu")
    assert p.name == "net_activation0"
    with mx.AttrScope(ctx_group="dev1", lr_mult="0.5"):
        v = mx.sym.Variable("w")
    assert v.attr("__ctx_group__") == "dev1" and v.attr("lr_mult") == "0.5"
    assert v.attr_dict()["w"]["__lr_mult__"] == "0.5"


def test_variable_attributes_and_set_attr():
    v = mx.sym.Variable(
        "w",
        shape=(3, 4),
        lr_mult=2.0,
        wd_mult=0.0,
        dtype="float16",
        init=mx.init.Constant(1.0),
        __foo__="bar",
    )
    d = v.attr_dict()["w"]
    assert d["__shape__"] == "(3, 4)" and d["__lr_mult__"] == "2.0" and d["lr_mult"] == "2.0"
    assert d["__dtype__"] == "2" and d["__foo__"] == "bar"
    assert json.loads(d["__init__"])[0] == "constant"
    v._set_attr(mood="happy")
    assert v.attr("mood") == "happy"
    with pytest.raises(ValueError, match="__dunder__"):
        mx.sym.Variable("w", foo=1)
    fc = mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden=2, name="fc")
    assert fc.attr_dict()["fc_weight"] == {"num_hidden": "2"}


def test_operator_overloading_and_scalars():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    for expr, op in [
        (a + b, "elemwise_add"),
        (a - b, "elemwise_sub"),
        (a * b, "elemwise_mul"),
        (a / b, "elemwise_div"),
        (a + 1, "_plus_scalar"),
        (1 - a, "_rminus_scalar"),
        (a**2, "_power_scalar"),
        (2 / a, "_rdiv_scalar"),
        (-a, "_mul_scalar"),
    ]:
        assert json.loads(expr.tojson())["nodes"][-1]["op"] == op
    expr = (a + b) * 2 - a / 2 + a**2 / (1 + b)
    location = {"a": np.array([2.0, -1.0]), "b": np.array([3.0, 0.5])}
    check_symbolic_forward(
        expr, location, [np.array([10.0, -1.0 + 0.5 + 1.0 / 1.5])], rtol=1e-6, atol=1e-6
    )
    check_numeric_gradient(expr, location, numeric_eps=1e-3, rtol=1e-2, atol=1e-3)


def test_compose_group_and_indexing():
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(name="fc", num_hidden=3)
    assert fc.list_arguments() == ["fc_data", "fc_weight", "fc_bias"]
    composed = fc(fc_data=mx.sym.Activation(data, act_type="tanh", name="t"))
    assert composed.list_arguments() == ["data", "fc_weight", "fc_bias"]
    g = mx.sym.Group([composed, data])
    assert g.list_outputs() == ["fc_output", "data"]
    assert g[1].name == "data" and g["fc_output"].name == "fc"
    with pytest.raises(ValueError, match="no output named"):
        g["nope"]
    with pytest.raises(MXNetError, match="no argument named 'zzz'"):
        fc(zzz=data)


def test_json_round_trip_and_file(tmp_path):
    s = net()
    text = s.tojson()
    again = mx.sym.load_json(text)
    assert again.tojson() == text
    f = tmp_path / "m-symbol.json"
    s.save(str(f))
    assert mx.sym.load(str(f)).list_arguments() == s.list_arguments()
    assert not f.read_text().endswith("\n")


def test_legacy_json_loads_and_upgrades():
    legacy = {
        "nodes": [
            {"op": "null", "name": "data", "inputs": []},
            {"op": "null", "name": "bn1_gamma", "param": {}, "inputs": []},
            {"op": "null", "name": "bn1_beta", "inputs": []},
            {
                "op": "BatchNorm",
                "name": "bn1",
                "param": {"eps": "0.001"},
                "attr": {"ctx_group": "g1", "lr_mult": "0.1"},
                "inputs": [[0, 0], [1, 0], [2, 0]],
            },
        ],
        "arg_nodes": [0, 1, 2],
        "heads": [[3, 0]],
    }
    s = mx.sym.load_json(json.dumps(legacy))
    assert s.list_auxiliary_states() == ["bn1_moving_mean", "bn1_moving_var"]
    attrs = s.attr_dict()
    assert attrs["bn1"]["__ctx_group__"] == "g1" and attrs["bn1"]["__lr_mult__"] == "0.1"
    assert "__init__" in attrs["bn1_moving_var"]
    assert json.loads(s.tojson())["attrs"] == {"mxnet_version": ["int", 10901]}


def test_bad_input_errors():
    d = mx.sym.Variable("data")
    with pytest.raises(MXNetError, match="unknown operator 'NoSuchOp'"):
        mx.sym.load_json(
            json.dumps(
                {"nodes": [{"op": "NoSuchOp", "name": "x", "inputs": []}], "heads": [[0, 0, 0]]}
            )
        )
    with pytest.raises(AttributeError):
        mx.sym.NoSuchOp
    with pytest.raises(MXNetError, match="unknown attribute 'num_hiden'.*num_hidden"):
        mx.sym.FullyConnected(d, num_hiden=3)
    with pytest.raises(MXNetError, match="required attribute 'num_hidden' is missing"):
        mx.sym.FullyConnected(d, name="fc")
    with pytest.raises(MXNetError, match="num_hidden='abc' is invalid: expected an integer"):
        mx.sym.FullyConnected(d, num_hidden="abc")
    fc2 = mx.sym.FullyConnected(mx.sym.Variable("x"), name="fc2", num_hidden=10)
    with pytest.raises(
        MXNetError,
        match=r"FullyConnected 'fc2': weight given \(10, 256\) but "
        r"data \(128, 512\) needs \(10, 512\)",
    ):
        fc2.infer_shape(x=(128, 512), fc2_weight=(10, 256))
    with pytest.raises(MXNetError, match="'label' is not an input of the symbol"):
        fc2.infer_shape(label=(3,))
    with pytest.warns(UserWarning, match=r"cannot decide the shapes of \['x'"):
        assert fc2.infer_shape() == (None, None, None)
    with pytest.raises(MXNetError, match="not valid JSON"):
        mx.sym.load_json("{nodes: oops")
    with pytest.raises(MXNetError, match="not an MXNet symbol"):
        mx.sym.load_json('{"a": 1}')


@pytest.mark.parametrize("op", sorted(GOLD["regression_infer"]))
def test_regression_label_shape_matches_mxnet(op):
    # MXNet's RegressionOpShape: (N, 1) data -> (N,) label; a given label needs the data's
    # batch size and element count; anything else is refused
    net = getattr(mx.sym, op)(mx.sym.Variable("data"), name="o")
    for row in GOLD["regression_infer"][op]:
        given = {"data": tuple(row["data"])}
        if row["label"] is not None:
            given["o_label"] = tuple(row["label"])
        if "error" in row:
            with pytest.raises(MXNetError, match=r"label shape .* does not fit data .*batch size"):
                net.infer_shape(**given)
            continue
        got = [[list(t) for t in part] for part in net.infer_shape(**given)]
        assert got == row["result"], (op, given)


def test_regression_label_error_names_the_fix():
    net = mx.sym.LinearRegressionOutput(mx.sym.Variable("data"), name="o")
    with pytest.raises(
        MXNetError,
        match=r"label shape \(3,\) does not fit data \(4, 1\): "
        r"the label needs the data's batch size 4 and 4 "
        r"elements, e.g. \(4,\) or \(4, 1\)",
    ):
        net.infer_shape(data=(4, 1), o_label=(3,))


@pytest.mark.parametrize("call", sorted(GOLD["not_for_symbol"]))
def test_ndarray_only_calls_raise_not_implemented_for_symbol(call):
    a = mx.sym.Variable("a")
    calls = {
        "bool": lambda: bool(a),
        "not": lambda: not a,
        "iadd": lambda: a.__iadd__(1),
        "isub": lambda: a.__isub__(a),
        "imul": lambda: a.__imul__(2.0),
        "itruediv": lambda: a.__itruediv__(2),
        "idiv": lambda: a.__idiv__(2),
        "wait_to_read": lambda: a.wait_to_read(),
        "asnumpy": lambda: a.asnumpy(),
        "asscalar": lambda: a.asscalar(),
        "copy": lambda: a.copy(),
        "as_in_context": lambda: a.as_in_context(),
        "detach": lambda: a.detach(),
        "backward": lambda: a.backward(),
    }
    kind, message = GOLD["not_for_symbol"][call]
    with pytest.raises(mx.base.NotImplementedForSymbol) as info:
        calls[call]()
    assert type(info.value).__name__ == kind
    assert isinstance(info.value, MXNetError)
    assert str(info.value) == message.replace("mxnet.symbol", "mxmod.symbol")


def test_in_place_statements_and_truth_tests_raise():
    a = mx.sym.Variable("a")
    b = a
    for stmt in ("b += 1", "b -= a", "b *= 2", "b /= 2", "x = 1 if a else 0"):
        with pytest.raises(mx.base.NotImplementedForSymbol, match="only available in NDArray"):
            exec(stmt, {"a": a, "b": b})
    assert b is a  # nothing rebound
    with pytest.raises(mx.base.NotImplementedForSymbol, match="Function as_in_context is not"):
        a.as_in_context(mx.cpu())  # MXNet: a TypeError (its version takes no argument)
    c = a
    c %= 3  # no __imod__ in MXNet either: falls back to a new _mod_scalar symbol
    assert json.loads(c.tojson())["nodes"][-1]["op"] == "_mod_scalar" and a.name == "a"


def test_copy_abs_and_composition_still_work():
    s = net()
    for dup in (copy.copy(s), copy.deepcopy(s)):
        assert dup is not s and dup.tojson() == s.tojson()
    check_symbolic_forward(
        abs(mx.sym.Variable("a")), [np.array([-2.0, 3.0])], [np.array([2.0, 3.0])], rtol=0, atol=0
    )
