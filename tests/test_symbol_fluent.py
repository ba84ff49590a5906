"""Symbol conveniences MXNet's test_symbol.py relies on: fluent methods, pickling, eval."""

import pickle

import numpy as np
import pytest

import mxmod as mx


def _run(sym, **arrays):
    return [o.asnumpy() for o in sym.eval(ctx=mx.cpu(), **arrays)]


def test_fluent_methods_match_the_operator_functions():
    x = mx.sym.Variable("x")
    data = mx.nd.array(np.arange(-3.0, 3.0).reshape(2, 3) / 2)
    for name, kwargs in [("floor", {}), ("abs", {}), ("sum", {"axis": 1}), ("flip", {"axis": 1})]:
        fluent = getattr(x, name)(**kwargs)
        regular = getattr(mx.sym, name)(x, **kwargs)
        np.testing.assert_array_equal(_run(fluent, x=data)[0], _run(regular, x=data)[0])
    assert _run(x.reshape((3, -1)), x=data)[0].shape == (3, 2)
    assert _run(x.reshape(shape=(6,)), x=data)[0].shape == (6,)
    assert _run(x.astype("int32"), x=data)[0].dtype == np.int32


def test_symbol_pickles_as_json():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=4, name="fc")
    back = pickle.loads(pickle.dumps(net))
    assert back.tojson() == net.tojson() and back.list_arguments() == net.list_arguments()


def test_children_of_a_multi_output_node_are_listed_once():
    sliced = mx.sym.SliceChannel(mx.sym.Variable("data"), num_outputs=3)
    assert sliced.get_children().list_outputs() == ["data"]


def test_infer_type_partial_keeps_unknowns():
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    arg, out, aux = fc.infer_type_partial()
    assert arg == [None, None, None] and out == [None] and aux == []
    assert fc.infer_type() == (None, None, None)
    assert fc.infer_type_partial(data=np.float32)[0] == [np.float32] * 3


def test_batch_take_picks_one_column_per_row():
    out = mx.sym.batch_take(mx.sym.Variable("a"), mx.sym.Variable("i"))
    a = mx.nd.array(np.arange(6).reshape(2, 3))
    got = _run(out, a=a, i=mx.nd.array([2, 0], dtype="int32"))[0]
    assert got.tolist() == [2, 3]
    with pytest.raises(mx.base.MXNetError, match="one index per row"):
        out.infer_shape(a=(2, 3), i=(3,))


def test_numpy_integers_in_tuple_attributes():
    t = mx.sym.transpose(mx.sym.Variable("a"), axes=tuple(np.array([1, 0])))
    assert t.list_attr()["axes"] == "(1, 0)"


def test_gen_atomic_symbol_rebuilds_the_operator():
    s = mx.sym.FullyConnected(mx.sym.Variable("d"), num_hidden=5, name="fc")
    atom = s._gen_atomic_symbol()
    assert atom.list_arguments() == ["fc_data", "fc_weight", "fc_bias"]
    assert atom.attr("num_hidden") == "5"
    with pytest.raises(ValueError, match="variable"):
        mx.sym.Variable("v")._gen_atomic_symbol()


def test_hidden_keys_given_to_an_operator_become_node_attributes():
    conv = mx.sym.Convolution(
        mx.sym.Variable("data"), name="conv", kernel=(1, 1), num_filter=1, lr_mult=0
    )
    attrs = conv.attr_dict()
    assert attrs["conv"]["__lr_mult__"] == "0"
    assert attrs["conv_weight"]["__lr_mult__"] == "0"  # auto-created inputs copy them, as MXNet
    with pytest.raises(mx.base.MXNetError, match="weight_lr_mult is deprecated"):
        mx.sym.FullyConnected(mx.sym.Variable("d"), num_hidden=2, weight_lr_mult=0.1)


def test_identity_with_attr_like_rhs_carries_shapes_backward():
    w = mx.sym.Variable("weight")
    shifted = mx.sym.broadcast_add(w, mx.sym.Variable("shift", shape=(1,)))
    tied = mx.sym._internal._identity_with_attr_like_rhs(shifted, w)
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), weight=tied, num_hidden=11, no_bias=True)
    args, _, _ = net.infer_shape(data=(7, 100))
    assert dict(zip(net.list_arguments(), args))["weight"] == (11, 100)
    out = tied.eval(ctx=mx.cpu(), weight=mx.nd.ones((2, 2)), shift=mx.nd.ones((1,)))[0]
    assert out.asnumpy().tolist() == [[2, 2], [2, 2]]


def test_maximum_minimum_power_hypot_take_symbols_or_numbers():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    x, y = mx.nd.array([1, -2]), mx.nd.array([0, 3])
    assert _run(mx.sym.maximum(a, b), a=x, b=y)[0].tolist() == [1, 3]
    assert _run(mx.sym.minimum(a, 0), a=x)[0].tolist() == [0, -2]
    assert _run(mx.sym.power(2, a), a=x)[0].tolist() == [2, 0.25]
    assert _run(mx.sym.hypot(b, 4), b=y)[0].tolist() == [4, 5]
    assert mx.sym.maximum(1, 2) == 2 and mx.sym.pow is mx.sym.power
    with pytest.raises(TypeError, match="Symbols or numbers"):
        mx.sym.maximum(a, "x")


def test_constant_ranges_as_symbols():
    got = mx.sym.arange(0, 6, 2, repeat=2).eval()[0].asnumpy()
    assert got.tolist() == [0, 0, 2, 2, 4, 4] and got.dtype == np.float32
    assert mx.sym.arange(4, dtype="int32").eval()[0].asnumpy().tolist() == [0, 1, 2, 3]
    assert (mx.sym.eye(3, 4, 1).eval()[0].asnumpy() == np.eye(3, 4, 1)).all()
    np.testing.assert_allclose(mx.sym.linspace(0, 1, 5).eval()[0].asnumpy(), np.linspace(0, 1, 5))
    x = mx.sym.Variable("x")
    assert mx.sym.broadcast_add(x, mx.sym.arange(3)).infer_shape(x=(2, 3))[1] == [(2, 3)]
    with pytest.raises(NotImplementedError, match="infer_range"):
        mx.sym.arange(0, infer_range=True).infer_shape()
