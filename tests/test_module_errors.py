"""Every Module user mistake gets an error that names what was wrong and the fix."""

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError


def mlp():
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, name="fc1", num_hidden=8)
    return mx.sym.SoftmaxOutput(net, name="softmax")


def batch(n=4, d=5, label=True):
    return mx.io.DataBatch([mx.nd.ones((n, d))], [mx.nd.zeros((n,))] if label else None)


def fresh():
    return mx.mod.Module(mlp())


def bound():
    mod = fresh()
    mod.bind([("data", (4, 5))], [("softmax_label", (4,))])
    return mod


def test_calls_out_of_order_name_the_missing_call():
    with pytest.raises(MXNetError, match=r"init_params\(\).*call bind\(data_shapes"):
        fresh().init_params()
    mod = bound()
    with pytest.raises(AssertionError, match=r"forward\(\).*call init_params\(\)"):
        mod.forward(batch())
    mod.init_params()
    mod.forward_backward(batch())
    with pytest.raises(MXNetError, match=r"update\(\).*call init_optimizer\(\)"):
        mod.update()
    with pytest.raises(MXNetError, match=r"init_optimizer\(\).*bind"):
        fresh().init_optimizer()


def test_data_names_not_in_symbol():
    with pytest.raises(ValueError, match=r"'image' is not found in symbol.list_arguments"):
        mx.mod.Module(mlp(), data_names=["image"])
    with pytest.warns(UserWarning, match="'lbl' is not found"):
        mx.mod.Module(mlp(), label_names=["lbl"])
    with pytest.raises(ValueError, match="fixed_param"):
        mx.mod.Module(mlp(), fixed_param_names=["nope_weight"])


def test_bind_with_wrong_data_names():
    with pytest.raises(ValueError, match="don't match names specified by data_names"):
        fresh().bind([("x", (4, 5))], [("softmax_label", (4,))])


def test_batch_not_matching_provide_data():
    mod = bound()
    mod.init_params()
    bad = mx.io.DataBatch([mx.nd.ones((4, 6))], [mx.nd.zeros((4,))])
    with pytest.raises(
        MXNetError,
        match=r"FullyConnected 'fc1': weight given \(8, 5\) but data "
        r"\(4, 6\) needs \(8, 6\)",
    ):
        mod.forward(bad)
    two = mx.io.DataBatch([mx.nd.ones((4, 5)), mx.nd.ones((4, 5))], [mx.nd.zeros((4,))])
    with pytest.raises(MXNetError, match="2 data arrays but the module is bound with 1"):
        mod.forward(two)


def test_labels_missing_when_training():
    mod = bound()
    mod.init_params()
    with pytest.raises(MXNetError, match="no labels but the module was bound for training"):
        mod.forward(batch(label=False), is_train=True)


def test_arg_params_missing_or_wrong_shape():
    mod = bound()
    with pytest.raises(RuntimeError, match="fc1_bias is not presented.*allow_missing=True"):
        mod.init_params(arg_params={"fc1_weight": mx.nd.zeros((8, 5))})
    with pytest.raises(
        MXNetError,
        match=r"'fc1_weight' has shape \(3, 5\) but the symbol needs "
        r"\(8, 5\)",
    ):
        mod.init_params(
            arg_params={"fc1_weight": mx.nd.zeros((3, 5)), "fc1_bias": mx.nd.zeros((8,))}
        )
    mod.init_params(arg_params={"fc1_weight": mx.nd.ones((8, 5))}, allow_missing=True)
    assert mod.get_params()[0]["fc1_weight"].asnumpy().sum() == 40


def test_work_load_list_wrong_length():
    with pytest.raises(MXNetError, match="work_load_list has 3 entries but there are 2 contexts"):
        mx.mod.Module(mlp(), context=[mx.cpu(0), mx.cpu(1)], work_load_list=[1, 1, 1])


def test_work_load_list_with_empty_slices():
    mod = mx.mod.Module(mlp(), context=[mx.cpu(0), mx.cpu(1), mx.cpu(2)])
    with pytest.raises(ValueError, match="Too many slices. Some splits are empty"):
        mod.bind([("data", (2, 5))], [("softmax_label", (2,))])


def test_unknown_optimizer_metric_initializer_names_list_known_ones():
    mod = bound()
    mod.init_params()
    with pytest.raises(
        ValueError, match="Cannot find optimizer sgdd; registered optimizers are: .*sgd"
    ):
        mod.init_optimizer(optimizer="sgdd")
    with pytest.raises(ValueError, match="acc"):
        mx.metric.create("accurracy")
    with pytest.raises(ValueError, match="uniform"):
        mx.init.create("unifrom")


def test_backward_needs_out_grads_for_non_loss_heads():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    mod = mx.mod.Module(net, label_names=None)
    mod.bind([("data", (2, 4))])
    mod.init_params()
    mod.forward(mx.io.DataBatch([mx.nd.ones((2, 4))]), is_train=True)
    with pytest.raises(MXNetError, match=r"not loss outputs.*out_grads"):
        mod.backward()
    mod.backward(out_grads=[mx.nd.ones((2, 3))])
    mod.init_optimizer()
    mod.update()


def test_backward_without_training_bind():
    mod = fresh()
    mod.bind([("data", (4, 5))], [("softmax_label", (4,))], for_training=False)
    mod.init_params()
    mod.forward(batch())
    with pytest.raises(MXNetError, match="for_training=True") as err:
        mod.backward()
    assert isinstance(err.value, AssertionError)  # MXNet asserts here


def test_fit_needs_num_epoch():
    it = mx.io.NDArrayIter(np.ones((4, 5), "float32"), np.zeros(4, "float32"), batch_size=2)
    with pytest.raises(ValueError, match="num_epoch"):
        fresh().fit(it)
