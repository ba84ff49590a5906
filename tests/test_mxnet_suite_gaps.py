"""Behaviours MXNet 1.9.1's own test files (test_module.py and friends) rely on."""

from collections import namedtuple

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError


def test_test_utils_star_import_brings_the_modules_mxnet_tests_use():
    names = {}
    exec("from mxmod.test_utils import *", names)
    for name in ("sys", "os", "np", "mx", "time", "logging", "assert_almost_equal"):
        assert name in names, name
    assert names["mx"] is mx


def test_nd_binary_functions_broadcast_and_take_scalars():
    a = mx.nd.array([[1, 2, 3], [4, 5, 6]])
    b = mx.nd.array([2, 2, 2])
    np.testing.assert_allclose(mx.nd.divide(a, b).asnumpy(), a.asnumpy() / 2)
    np.testing.assert_allclose(mx.nd.subtract(3, a).asnumpy(), 3 - a.asnumpy())
    np.testing.assert_allclose(mx.nd.power(a, 2).asnumpy(), a.asnumpy() ** 2)
    eq = mx.nd.equal(a, b)
    assert eq.dtype == np.float32 and eq.asnumpy().tolist() == [[0, 1, 0], [0, 0, 0]]
    assert mx.nd.logical_xor(a, b).asnumpy().sum() == 0
    assert mx.nd.add(1, 2) == 3
    with pytest.raises(TypeError, match="mx.nd.array"):
        mx.nd.add(np.ones(2), np.ones(2))


def _monitored_net():
    x = mx.sym.FullyConnected(mx.sym.Variable("data"), name="fc", num_hidden=2)
    x = mx.sym.Activation(x, name="act", act_type="sigmoid")
    return mx.sym.LinearRegressionOutput(x, name="out")


def test_monitor_reports_each_nodes_backward_outputs():
    mon = mx.mon.Monitor(1, stat_func=lambda x: mx.nd.sum(x), pattern=".*", sort=True)
    mod = mx.mod.Module(_monitored_net(), label_names=["out_label"])
    mod.bind([("data", (3, 4))], [("out_label", (3, 2))])
    mod.install_monitor(mon)
    mod.init_params(mx.init.Uniform(0.5))
    rng = np.random.RandomState(0)
    batch = mx.io.DataBatch([mx.nd.array(rng.rand(3, 4))], [mx.nd.array(rng.rand(3, 2))])
    mon.tic()
    mod.forward_backward(batch)
    res = {name: float(v) for _, name, v in mon.toc()}
    backward = sorted(n for n in res if "_backward_" in n)
    assert backward == [
        "act_backward_output",
        "fc_backward_output0",
        "fc_backward_output1",
        "fc_backward_output2",
        "out_backward_output0",
        "out_backward_output1",
    ]
    grads = mod._exec_group.execs[0].grad_dict
    assert res["fc_backward_output1"] == pytest.approx(grads["fc_weight"].asnumpy().sum(), 1e-5)
    assert res["fc_backward_output2"] == pytest.approx(grads["fc_bias"].asnumpy().sum(), 1e-5)
    assert res["out_backward_output1"] == 0.0  # loss heads give labels no gradient
    mon.tic()
    mod.forward(batch, is_train=False)
    assert not any("_backward_" in name for _, name, _ in mon.toc())


def test_forward_takes_a_namedtuple_batch_with_only_data():
    mod = mx.mod.Module(mx.sym.Variable("data") * 2, label_names=None)
    mod.bind([("data", (1, 4))])
    mod.init_params()
    Batch = namedtuple("Batch", ["data"])
    mod.forward(Batch([mx.nd.ones((3, 2))]))
    assert mod.get_outputs()[0].asnumpy().tolist() == [[2, 2]] * 3


def test_positional_values_after_the_inputs_are_attributes():
    data = mx.sym.Variable("data")
    assert mx.sym.Dropout(data, 0.25).attr_dict()["dropout0"]["p"] == "0.25"
    fc = mx.sym.FullyConnected(data, mx.sym.Variable("w"), mx.sym.Variable("b"), 7)
    assert fc.infer_shape(data=(2, 3))[1] == [(2, 7)]
    with pytest.raises(TypeError, match="multiple values for 'p'"):
        mx.sym.Dropout(data, 0.5, p=0.1)
    # past the attributes: MXNet's name, attr, out
    assert mx.sym.Activation(data, "relu", "extra").list_outputs() == ["extra_output"]
    with pytest.raises(TypeError, match="at most"):
        mx.sym.Activation(data, "relu", "extra", None, None, 1)


def test_backward_with_nothing_to_differentiate_needs_no_head_gradient():
    mod = mx.mod.Module(mx.sym.Dropout(mx.sym.Variable("data"), p=0.5), label_names=None)
    mod.bind([("data", (4, 4))])
    mod.init_params()
    mod.init_optimizer()
    mod.forward_backward(mx.io.DataBatch([mx.nd.ones((4, 4))]))
    mod.update()
    assert mod.get_outputs()[0].shape == (4, 4)
    mod = mx.mod.Module(mx.sym.Dropout(mx.sym.Variable("data"), p=0.5), label_names=None)
    mod.bind([("data", (4, 4))], inputs_need_grad=True)
    mod.init_params()
    mod.forward(mx.io.DataBatch([mx.nd.ones((4, 4))]), is_train=True)
    with pytest.raises(MXNetError, match="out_grads"):
        mod.backward()


def test_merged_outputs_of_several_devices_keep_their_batch():
    # MXNet concatenates the devices' outputs into new arrays; per-device ones are live
    mod = mx.mod.Module(
        mx.sym.Variable("data") * 2, label_names=None, context=[mx.cpu(0), mx.cpu(1)]
    )
    mod.bind([("data", (4, 3))], for_training=False)
    mod.init_params()
    mod.forward(mx.io.DataBatch([mx.nd.ones((4, 3))]))
    merged = mod.get_outputs()[0]
    live = mod.get_outputs(merge_multi_context=False)[0][0]
    mod.forward(mx.io.DataBatch([mx.nd.ones((4, 3)) * 5]))
    assert merged.asnumpy().max() == 2
    assert live.asnumpy().max() == 10


def test_grad_req_add_accumulates_across_buckets():
    def sym_gen(_):
        weight = mx.sym.Variable("a", shape=(1,), init=mx.init.One())
        net = mx.sym.make_loss(mx.sym.broadcast_mul(mx.sym.Variable("data"), weight))
        return net, ("data",), None

    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=10)
    mod.bind([("data", (2,))], grad_req="add")
    mod.init_params()
    for key in (10, 5, 10):
        desc = [mx.io.DataDesc("data", (2,))]
        mod.forward_backward(mx.io.DataBatch([mx.nd.ones((2,))], provide_data=desc, bucket_key=key))
    assert mod._curr_module._exec_group.execs[0].grad_dict["a"].asscalar() == 6


def _grouped_sum():
    with mx.AttrScope(ctx_group="dev1"):
        a = mx.sym.Variable("a") * 2
    with mx.AttrScope(ctx_group="dev2"):
        return a + mx.sym.Variable("b")


def test_module_group2ctxs_places_grouped_arrays_on_their_context():
    mod = mx.mod.Module(
        _grouped_sum(),
        data_names=["a", "b"],
        label_names=None,
        group2ctxs={"dev1": mx.cpu(1), "dev2": mx.cpu(2)},
    )
    mod.bind([("a", (2, 3)), ("b", (2, 3))], inputs_need_grad=True)
    mod.init_params()
    mod.forward(mx.io.DataBatch([mx.nd.ones((2, 3)), mx.nd.ones((2, 3))]), is_train=True)
    mod.backward([mx.nd.ones((2, 3))])
    ga, gb = mod.get_input_grads()
    assert (ga.context, gb.context) == (mx.cpu(1), mx.cpu(2))
    assert ga.asnumpy().tolist() == [[2] * 3] * 2 and gb.asnumpy().tolist() == [[1] * 3] * 2
    with pytest.raises(MXNetError, match="1 or 2"):
        mx.mod.Module(
            _grouped_sum(), context=[mx.cpu(0), mx.cpu(1)], group2ctxs={"dev1": [mx.cpu(2)] * 3}
        )
    with pytest.raises(MXNetError, match="dict per context"):
        mx.mod.Module(_grouped_sum(), group2ctxs=[{}, {}])


def test_bind_group2ctx_keeps_gradient_arrays_on_their_context():
    net = _grouped_sum()
    args = [mx.nd.ones((2, 3), ctx=mx.cpu(0)), mx.nd.ones((2, 3), ctx=mx.cpu(1))]
    grads = [mx.nd.zeros((2, 3), ctx=mx.cpu(0)), mx.nd.zeros((2, 3), ctx=mx.cpu(1))]
    exe = net.bind(
        mx.cpu(0), args=args, args_grad=grads, group2ctx={"dev1": mx.cpu(0), "dev2": mx.cpu(1)}
    )
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((2, 3))])
    assert exe.outputs[0].asnumpy().tolist() == [[3] * 3] * 2
    assert grads[1].context == mx.cpu(1) and grads[1].asnumpy().tolist() == [[1] * 3] * 2
    exe = net.simple_bind(mx.cpu(0), a=(2, 3), b=(2, 3), group2ctx={"dev2": mx.cpu(3)})
    assert exe.arg_dict["b"].context == mx.cpu(3)
    with pytest.raises(TypeError, match="group2ctx"):
        net.simple_bind(mx.cpu(0), a=(2, 3), b=(2, 3), group2ctx={"dev2": "cpu"})


def test_operators_without_parameters_keep_extra_attributes_as_mxnet():
    a, b = mx.nd.ones((1, 2)), mx.nd.ones((1, 2))
    assert mx.nd.broadcast_add(a, b, axis=0).asnumpy().tolist() == [[2, 2]]
    net = mx.sym.broadcast_add(mx.sym.var("a"), mx.sym.var("b"), axis=0)
    assert '"axis": "0"' in net.tojson()
    with pytest.raises(MXNetError, match="unknown attribute 'foo'"):
        mx.sym.FullyConnected(mx.sym.var("a"), num_hidden=2, foo=1)


def test_cpu_pinned_context_at_top_level():
    assert mx.cpu_pinned(0) == mx.Context("cpu_pinned", 0)
    assert mx.cpu_pinned(0).jax_device.platform == "cpu"


def test_bucket_sentence_iter_subclass_reset_feeds_its_own_arrays():
    class Echo(mx.rnn.BucketSentenceIter):
        def reset(self):
            self.curr_idx = 0
            self.nddata = [mx.nd.array(b) for b in self.data]
            self.ndlabel = [mx.nd.array(b) for b in self.data]  # label = data

    sents = [[1, 2, 3], [4, 5, 6], [7, 8], [9, 1]]
    it = Echo(sents, batch_size=2, buckets=[3])
    for batch in it:
        np.testing.assert_array_equal(batch.data[0].asnumpy(), batch.label[0].asnumpy())


def test_executor_monitor_sees_backward_nodes():
    seen = []
    exe = _monitored_net().simple_bind(mx.cpu(), data=(3, 4), out_label=(3, 2))
    exe.set_monitor_callback(lambda name, arr: seen.append(name))
    exe.forward(is_train=True)
    exe.backward()
    assert "fc_backward_output1" in seen and "act_backward_output" in seen


def test_monitor_values_are_those_the_batch_ran_with_before_update():
    mon = mx.mon.Monitor(1, stat_func=lambda x: mx.nd.sum(x), pattern="fc_output", sort=True)
    mod = mx.mod.Module(_monitored_net(), label_names=["out_label"])
    mod.bind([("data", (3, 4))], [("out_label", (3, 2))])
    mod.install_monitor(mon)
    mod.init_params(mx.init.Uniform(0.5))
    mod.init_optimizer(optimizer_params={"learning_rate": 1.0})
    x = mx.nd.ones((3, 4))
    w, b = (mod.get_params()[0][n].asnumpy() for n in ("fc_weight", "fc_bias"))
    mon.tic()
    mod.forward_backward(mx.io.DataBatch([x], [mx.nd.zeros((3, 2))]))
    mod.update()
    ((_, _, value),) = mon.toc()
    assert float(value) == pytest.approx(float((x.asnumpy() @ w.T + b).sum()), rel=1e-5)


def test_reshaped_executor_shares_the_base_memory_when_not_larger():
    y = mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden=4)
    exe = y.simple_bind(mx.cpu(), x=(5, 4), grad_req="null")
    exe.arg_arrays[0][:] = 1
    exe.arg_arrays[1][:] = mx.nd.ones((4, 4))
    exe.arg_arrays[2][:] = 0
    small = exe.reshape(x=(3, 4))  # its x is the start of exe's x
    small.forward(is_train=False)
    assert small.outputs[0].asnumpy().tolist() == [[4] * 4] * 3
    assert exe.outputs[0].asnumpy()[:3].tolist() == [[4] * 4] * 3  # written through
    big = exe.reshape(allow_up_sizing=True, x=(6, 4))  # new memory
    big.arg_arrays[0][:] = 0
    assert exe.arg_arrays[0].asnumpy().min() == 1
    assert big.arg_arrays[1] is exe.arg_arrays[1]
