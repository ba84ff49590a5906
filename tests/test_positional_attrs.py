"""Attributes given positionally after the inputs, as MXNet's generated ``mx.nd``/``mx.sym``
functions take them (``mx.nd.swapaxes(x, 0, 2)`` is ``dim1=0, dim2=2``)."""

import json
import os

import numpy as np
import pytest

import mxmod as mx
from mxmod.ops import get_op

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "fixtures", "mxnet_ops", "signatures.json")) as f:
    SIGNATURES = json.load(f)["signatures"]  # MXNet 1.9.1's (gen_mxnet_signatures.py)


def implemented():
    for name, order in sorted(SIGNATURES.items()):
        try:
            op = get_op(name)
        except Exception:
            continue
        if order != "*" and not op.variadic:
            yield name, op, order


def test_positional_attribute_order_is_mxnets():
    checked = 0
    for name, op, order in implemented():
        ours = [p for p in (op.positional or op.params) if p in order]
        theirs = [p for p in order if p in op.params]
        assert ours == theirs, name
        checked += 1
    assert checked > 300


X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def test_nd_functions_take_attributes_positionally():
    x = mx.nd.array(X)
    assert mx.nd.swapaxes(x, 0, 2).shape == (4, 3, 2)
    assert x.swapaxes(0, 2).shape == (4, 3, 2)
    assert mx.nd.topk(x, -1, 2).shape == (2, 3, 2)
    np.testing.assert_array_equal(mx.nd.take(x, mx.nd.array([2]), 1).asnumpy(), X[:, [2]])
    assert mx.nd.tile(x, (1, 2, 1)).shape == (2, 6, 4)
    assert mx.nd.repeat(x, 2).shape == (48,)
    assert len(mx.nd.split(x, 3, 1)) == 3
    np.testing.assert_array_equal(mx.nd.flip(x, 0).asnumpy(), X[::-1])
    assert mx.nd.Cast(x, "int32").dtype == np.int32
    assert mx.nd.Activation(x - 5, "relu").asnumpy().min() == 0
    # scalar (sigma) = 2: |x| - 0.5 / sigma^2 for |x| >= 1 / sigma^2 (MXNet: 0.875 at x = 1)
    np.testing.assert_allclose(mx.nd.smooth_l1(x, 2.0).asnumpy()[0, 0, :2], [0.0, 0.875])
    w, b = mx.nd.ones((4, 3)), mx.nd.zeros((4,))
    assert mx.nd.FullyConnected(mx.nd.ones((2, 3)), w, b, 4).shape == (2, 4)
    assert mx.nd.Embedding(mx.nd.array([0, 2]), mx.nd.ones((3, 5)), 3, 5).shape == (2, 5)


def test_sym_functions_take_attributes_in_mxnets_order():
    data = mx.sym.var("data")
    assert mx.sym.swapaxes(data, 0, 2).infer_shape(data=(2, 3, 4))[1] == [(4, 3, 2)]
    # Convolution's positional order is MXNet's (kernel, stride, dilate, pad, num_filter)
    conv = mx.sym.Convolution(
        data, mx.sym.var("w"), mx.sym.var("b"), (3, 3), (2, 2), (1, 1), (1, 1), 8
    )
    _, out, _ = conv.infer_shape(data=(1, 2, 9, 9))
    assert out == [(1, 8, 5, 5)]
    masked = mx.sym.SequenceMask(data, mx.sym.var("len"), True, -1.0)
    ex = masked.bind(mx.cpu(), {"data": mx.nd.ones((3, 2, 1)), "len": mx.nd.array([1, 2])})
    np.testing.assert_array_equal(ex.forward()[0].asnumpy()[:, :, 0], [[1, 1], [-1, 1], [-1, -1]])


def test_too_many_or_repeated_positional_attributes():
    x = mx.nd.array(X)
    # past the attributes come MXNet's (out, name) for mx.nd, (name, attr, out) for mx.sym
    with pytest.raises(TypeError, match="out= must be an NDArray .* got int 1"):
        mx.nd.swapaxes(x, 0, 2, 1)
    with pytest.raises(TypeError, match="at most 4 positional arguments"):
        mx.nd.swapaxes(x, 0, 2, None, "n", 5)
    with pytest.raises(TypeError, match="multiple values for 'dim1'"):
        mx.nd.swapaxes(x, 0, dim1=1)
    with pytest.raises(TypeError, match="name must be a string, got int 1"):
        mx.sym.swapaxes(mx.sym.var("x"), 0, 2, 1)
    with pytest.raises(TypeError, match="at most 5 positional arguments"):
        mx.sym.swapaxes(mx.sym.var("x"), 0, 2, "n", None, None, 5)
