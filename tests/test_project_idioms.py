"""Idioms of real MXNet projects (CRNN, InsightFace, a conditional GAN, densenet, memonger,
SSD's callbacks...) that mxmod must run as MXNet 1.9.1 does."""

import copy
import json
import warnings

import numpy as np
import pytest

import mxmod as mx
from mxmod import registry
from mxmod.base import MXNetError

T, N, C = 3, 4, 5


def _seq_module(contexts, work_load_list=None):
    """A CRNN-style head: per-sample sequences flattened to (T*N, C) rows, plus a
    per-device statistic of shape (1, C) (InsightFace's BlockGrad'ed loss value)."""
    data = mx.sym.Variable("data")  # (N, T, 2)
    x = mx.sym.Reshape(mx.sym.transpose(data, axes=(1, 0, 2)), shape=(-3, 0))
    fc = mx.sym.FullyConnected(x, num_hidden=C, name="fc")
    label = mx.sym.Reshape(mx.sym.transpose(mx.sym.Variable("softmax_label")), shape=(-1,))
    out = mx.sym.SoftmaxOutput(fc, label, name="softmax")
    stat = mx.sym.BlockGrad(mx.sym.sum(fc, axis=0, keepdims=True), name="stat")
    mod = mx.mod.Module(mx.sym.Group([out, stat]), context=contexts, work_load_list=work_load_list)
    mod.bind([("data", (N, T, 2))], [("softmax_label", (N, T))])
    mod.init_params(mx.init.Xavier(magnitude=2.0))
    rng = np.random.RandomState(0)
    batch = mx.io.DataBatch(
        [mx.nd.array(rng.rand(N, T, 2))], [mx.nd.array(rng.randint(0, C, (N, T)))]
    )
    mod.forward(batch, is_train=False)
    return mod, batch


@pytest.mark.parametrize("work_load_list", [None, [1, 3]])
def test_unmerged_outputs_are_each_devices_own_when_axis0_is_not_the_batch(work_load_list):
    """MXNet hands each device its whole output (get_outputs(merge_multi_context=False),
    update_metric); the merged output concatenates them."""
    mod, batch = _seq_module([mx.cpu(0), mx.cpu(1)], work_load_list)
    sizes = [2, 2] if work_load_list is None else [1, 3]
    merged = [o.asnumpy() for o in mod.get_outputs()]
    assert merged[0].shape == (T * N, C) and merged[1].shape == (2, C)
    per_dev = mod.get_outputs(merge_multi_context=False)
    assert [o.shape for o in per_dev[0]] == [(T * b, C) for b in sizes]
    assert [o.shape for o in per_dev[1]] == [(1, C), (1, C)]
    np.testing.assert_array_equal(np.concatenate([o.asnumpy() for o in per_dev[0]]), merged[0])
    np.testing.assert_array_equal(np.concatenate([o.asnumpy() for o in per_dev[1]]), merged[1])

    seen = []

    class Recorder(mx.metric.EvalMetric):
        def __init__(self):
            super().__init__("recorder")

        def update(self, labels, preds):
            seen.append(([lab.shape for lab in labels], [p.asnumpy() for p in preds]))

    mod.update_metric(Recorder(), batch.label)
    assert [s[0] for s in seen] == [[(b, T)] for b in sizes]
    for (_, preds), rows, stat in zip(seen, per_dev[0], per_dev[1]):
        np.testing.assert_array_equal(preds[0], rows.asnumpy())
        np.testing.assert_array_equal(preds[1], stat.asnumpy())

    acc = mx.metric.Accuracy(output_names=["softmax_output"])
    mod.update_metric(acc, batch.label)
    # MXNet's Accuracy flattens each device's labels (sample-major) against its rows
    labels = batch.label[0].asnumpy()
    bounds = np.cumsum([0] + sizes)
    want = np.concatenate([labels[a:b].ravel() for a, b in zip(bounds[:-1], bounds[1:])])
    assert acc.get()[1] == pytest.approx(np.mean(merged[0].argmax(1) == want))


def test_backward_reads_out_grads_by_position():
    """InsightFace's model-parallel head passes one out_grad to a body whose second output
    is a BlockGrad; a conditional GAN passes the discriminator's two input gradients to a
    one-output generator. MXNet reads them by position."""
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    other = mx.sym.FullyConnected(data, num_hidden=2, name="other")
    x = mx.nd.array(np.random.RandomState(1).rand(4, 5))
    g = mx.nd.array(np.random.RandomState(2).rand(4, 3))

    def grads(symbol, out_grads):
        mod = mx.mod.Module(symbol, label_names=None, context=[mx.cpu(0), mx.cpu(1)])
        mod.bind([("data", (4, 5))])
        mod.init_params(mx.init.Constant(0.1))
        mod.forward(mx.io.DataBatch([x], None), is_train=True)
        mod.backward(out_grads=out_grads)
        return {
            n: sum(a.asnumpy() for a in arrs)
            for n, arrs in zip(mod._exec_group.param_names, mod._exec_group.grad_arrays)
        }

    full = grads(mx.sym.Group([fc, mx.sym.BlockGrad(other)]), [g, mx.nd.zeros((4, 2))])
    short = grads(mx.sym.Group([fc, mx.sym.BlockGrad(other)]), [g])
    for name in full:
        np.testing.assert_allclose(short[name], full[name], rtol=1e-6)
    longer = grads(fc, [g, mx.nd.ones((4, 5))])  # the extra array is not read
    np.testing.assert_allclose(longer["fc_weight"], full["fc_weight"], rtol=1e-6)

    mod = mx.mod.Module(mx.sym.Group([fc, other]), label_names=None)
    mod.bind([("data", (4, 5))])
    mod.init_params()
    mod.forward(mx.io.DataBatch([x], None), is_train=True)
    with pytest.raises(MXNetError, match=r"head gradient of \['other_output'\]"):
        mod.backward(out_grads=[g])

    exe = mx.sym.Group([fc, mx.sym.BlockGrad(other)]).simple_bind(mx.cpu(), data=(4, 5))
    for arr in exe.arg_dict.values():
        arr[:] = 0.1
    exe.forward(is_train=True, data=x)
    exe.backward([g])
    np.testing.assert_allclose(
        exe.grad_dict["fc_weight"].asnumpy(), g.asnumpy().T @ x.asnumpy(), rtol=1e-5
    )


def test_upsampling_takes_bilinear_inputs_by_name():
    """densenet.mxnet's decoder: UpSampling(data=x, sample_type='bilinear', ...)."""
    x = mx.sym.Variable("x")
    up = mx.sym.UpSampling(data=x, scale=2, sample_type="bilinear", num_filter=3, name="up")
    assert up.list_arguments() == ["x", "up_weight"]
    assert json.loads(up.tojson())["nodes"][-1]["attrs"]["num_args"] == "1"
    w = mx.sym.Variable("w")
    up = mx.sym.UpSampling(data=x, weight=w, scale=2, sample_type="bilinear", num_filter=3)
    assert up.list_arguments() == ["x", "w"]
    assert up.infer_shape(x=(1, 3, 4, 4))[1] == [(1, 3, 8, 8)]
    # nearest names its inputs arg0, arg1...: MXNet refuses data= too
    with pytest.raises(MXNetError, match=r"no input named \['data'\]; its inputs are \['arg0'\]"):
        mx.sym.UpSampling(data=x, scale=2, sample_type="nearest")


def test_registry_functions_share_the_metric_and_initializer_tables():
    register = registry.get_register_func(mx.metric.EvalMetric, "metric")
    alias = registry.get_alias_func(mx.metric.EvalMetric, "metric")

    @register
    @alias("idiom_acc_alias")
    class IdiomAcc(mx.metric.EvalMetric):
        def __init__(self, name="idiom_acc"):
            super().__init__(name)

        def update(self, labels, preds):
            self.sum_metric += 1
            self.num_inst += 2

    metric = mx.metric.create("IDIOMACC")
    metric.update([], [])
    assert metric.get() == ("idiom_acc", 0.5)
    assert isinstance(mx.metric.create("idiom_acc_alias"), IdiomAcc)
    create = registry.get_create_func(mx.metric.EvalMetric, "metric")
    assert create('["idiomacc", {"name": "z"}]').name == "z"
    assert "idiomacc" in registry.get_registry(mx.metric.EvalMetric)
    with pytest.raises(TypeError, match="subclasses of EvalMetric"):
        register(dict)

    iregister = registry.get_register_func(mx.init.Initializer, "initializer")

    @iregister
    class IdiomSevens(mx.init.Initializer):
        def _init_weight(self, name, arr):
            arr[:] = 7

    arr = mx.nd.zeros((2, 2))
    mx.init.create("idiomsevens")(mx.init.InitDesc("w_weight"), arr)
    assert arr.asnumpy().tolist() == [[7, 7], [7, 7]]

    class Base:
        pass

    create = registry.get_create_func(Base, "thing")

    @registry.get_register_func(Base, "thing")
    class Foo(Base):
        def __init__(self, a=1):
            self.a = a

    assert create("foo", a=3).a == 3 and create({"thing": "foo"}).a == 1
    with pytest.raises(ValueError, match="bar is not registered"):
        create("bar")


def test_join_and_layout_operators_write_into_out():
    a = mx.nd.array(np.arange(6.0).reshape(2, 3))
    out = mx.nd.zeros((2, 6))
    assert mx.nd.concat(a, a, dim=1, out=out) is out
    np.testing.assert_array_equal(out.asnumpy(), np.hstack([a.asnumpy()] * 2))
    out = mx.nd.zeros((2, 2, 3))
    mx.nd.stack(a, a, out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.stack([a.asnumpy()] * 2))
    big = mx.nd.zeros((5, 2))
    mx.nd.transpose(a, out=big[1:4])  # a view (rows) writes through
    np.testing.assert_array_equal(big.asnumpy()[1:4], a.asnumpy().T)
    with pytest.raises(MXNetError, match=r"out has shape \(2, 2\) but the result"):
        mx.nd.reshape(a, shape=(3, 2), out=mx.nd.zeros((2, 2)))


def test_debug_str_ends_with_mxnets_two_summary_lines():
    """memonger reads ``int(debug_str().split('\\n')[-3].split()[1])`` (megabytes)."""
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=1000, name="fc")
    exe = net.simple_bind(mx.cpu(), data=(64, 1000))
    lines = exe.debug_str().split("\n")
    assert lines[-2] == "Total 0 TempSpace resource requested" and lines[-1] == ""
    assert int(lines[-3].split()[1]) >= 4  # weight and its gradient: 4 MB each


def test_score_callbacks_see_mxnets_local_names():
    """SSD's LogDetectionsCallback reads locals['eval_batch'] at the end of score()."""
    x = np.random.RandomState(0).rand(10, 4).astype(np.float32)
    y = np.arange(10) % 3
    it = mx.io.NDArrayIter(x, y, batch_size=4)
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3)
    net = mx.sym.SoftmaxOutput(fc, name="softmax")
    mod = mx.mod.Module(net)
    mod.bind(it.provide_data, it.provide_label, for_training=False)
    mod.init_params()
    seen = {}

    def at_batch(param):
        seen.setdefault("batches", []).append(param.locals["eval_batch"].pad)

    def at_end(param):
        loc = param.locals
        seen["end"] = (loc["actual_num_batch"], loc["eval_batch"].pad, "batch_end_params" in loc)

    mod.score(it, "acc", batch_end_callback=at_batch, score_end_callback=at_end)
    assert seen == {"batches": [0, 0, 2], "end": (3, 2, True)}


@pytest.mark.parametrize("shape", [(4,), (2, 3), (2, 3, 4), (2, 3, 4, 5)])
def test_makeloss_batch_normalization_divides_by_the_rows_of_the_2d_view(shape):
    """MXNet flattens the loss to 2-D (all axes but the last are rows) and divides the
    gradient by the rows; a 1-D loss is one row."""
    s = mx.sym.MakeLoss(mx.sym.Variable("x"), normalization="batch", grad_scale=2.0)
    exe = s.simple_bind(mx.cpu(), x=shape)
    exe.forward(is_train=True)
    exe.backward()
    want = 2.0 / int(np.prod(shape[:-1]))
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), np.full(shape, want), rtol=1e-6)


def test_executor_lists_every_argument_in_grad_dict():
    net = mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden=3, name="fc")
    exe = net.simple_bind(mx.cpu(), x=(2, 4), grad_req={"x": "null", "fc_weight": "write"})
    assert {k: (None if v is None else v.shape) for k, v in exe.grad_dict.items()} == {
        "x": None,
        "fc_weight": (3, 4),
        "fc_bias": None,
    }


def test_update_counts_the_step_at_once():
    """sockeye logs optimizer.learning_rate after update(): the count is the step's."""

    class Warmup(mx.lr_scheduler.LRScheduler):
        def __call__(self, num_update):
            return 0.01 * min(1.0, num_update / 2.0)

    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3))
    mod = mx.mod.Module(net, label_names=["softmaxoutput0_label"])
    mod.bind([("data", (4, 5))], [("softmaxoutput0_label", (4,))])
    mod.init_params()
    mod.init_optimizer(optimizer="adam", optimizer_params={"lr_scheduler": Warmup()})
    batch = mx.io.DataBatch([mx.nd.ones((4, 5))], [mx.nd.array([0, 1, 2, 0])])
    seen = []
    for _ in range(3):
        mod.forward_backward(batch)
        mod.update()
        seen.append((mod._optimizer.num_update, mod._optimizer.learning_rate))
    assert seen == [(1, 0.005), (2, 0.01), (3, 0.01)]


def test_misc_schedulers_and_executor_contexts():
    from mxmod import misc

    sched = misc.FactorScheduler(2, 0.5)
    sched.base_lr = 0.1
    assert [sched(i) for i in range(6)] == [0.1, 0.1, 0.05, 0.05, 0.025, 0.025]
    with pytest.raises(ValueError, match="factor 1.5 must be below 1"):
        misc.FactorScheduler(2, 1.5)
    net = mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden=2)
    exe = net.simple_bind(mx.cpu(1), x=(2, 3))
    exe.forward()
    assert exe.arg_dict["x"].context == mx.cpu(1) and exe.outputs[0].context == mx.cpu(1)


def test_module_names_given_as_any_iterable():
    """DRL_mxnet passes data_names={'s'} and fine-tuning code fixed_param_names={...}:
    MXNet takes list(...) of them."""
    net = mx.sym.SoftmaxOutput(
        mx.sym.FullyConnected(mx.sym.Variable("s"), num_hidden=2), name="act"
    )
    for names in ({"s"}, {"s": 0}.keys(), np.array(["s"]), (n for n in ["s"])):
        mod = mx.mod.Module(net, data_names=names, label_names={"act_label"},
                            fixed_param_names={"fullyconnected0_bias"})  # fmt: skip
        assert mod._data_names == ["s"] and mod._fixed_param_names == ["fullyconnected0_bias"]
        assert isinstance(mod._data_names[0], str)
    mod.bind([("s", (2, 3))], [("act_label", (2,))])
    mod.init_params(mx.init.Constant(0.5))
    mod.init_optimizer(optimizer_params={"learning_rate": 1.0})
    data = mx.nd.array([[1.0, 2.0, 3.0], [0.0, 1.0, 0.0]])
    mod.forward_backward(mx.io.DataBatch([data], [mx.nd.array([0, 1])]))
    mod.update()
    params = mod.get_params()[0]
    assert (params["fullyconnected0_bias"].asnumpy() == 0).all()  # fixed (a bias starts at 0)
    assert not (params["fullyconnected0_weight"].asnumpy() == 0.5).all()


def test_custom_metric_sums_float32_results_in_double():
    """MXNet (NumPy 1) summed a float32 feval result into a float64; NumPy 2's promotion
    would keep float32 and drift in the 7th digit."""
    metric = mx.metric.CustomMetric(lambda label, pred: np.float32(1.1336029), name="rae")
    for _ in range(3):
        metric.update([mx.nd.ones((2,))], [mx.nd.ones((2,))])
    name, value = metric.get()
    assert type(value) is float and value == pytest.approx(float(np.float32(1.1336029)), abs=0)


def test_symbol_functions_take_name_attr_and_out_by_position():
    """brain-seg's BlockGrad(x, 'mask'); sft-reid's mx.sym.relu(d, out=d) (NDArray code
    copied into a graph: MXNet ignores out= on symbols)."""
    x = mx.sym.Variable("x")
    assert mx.sym.BlockGrad(x, "mask").list_outputs() == ["mask_output"]
    assert mx.sym.Activation(x, "relu", "act9").list_outputs() == ["act9_output"]
    assert mx.sym.sum(x, 1, False, False, "sm").list_outputs() == ["sm_output"]
    assert mx.sym.Reshape(x, (0, -1), False, None, False, "rs").list_outputs() == ["rs_output"]
    shifted = mx.sym.relu(x - 1, out=x)
    assert shifted.list_arguments() == ["x"]
    assert shifted.eval(x=mx.nd.array([0.0, 3.0]))[0].asnumpy().tolist() == [0, 2]
    with pytest.raises(TypeError, match=r"at most 3 positional arguments .*\(name, attr, out\)"):
        mx.sym.BlockGrad(x, "mask", None, None, 5)
    out = mx.nd.zeros((2,))
    mx.nd.relu(mx.nd.array([-1.0, 2.0]), out)  # mx.nd's (..., out, name)
    assert out.asnumpy().tolist() == [0, 2]


def test_one_element_host_arrays_convert_to_numbers_as_under_numpy_1():
    """float(loss.asnumpy()) and int(label[i]) on shape-(1,) arrays: everyday MXNet code
    that NumPy 2 alone refuses."""
    total = mx.nd.sum(mx.nd.ones((3,))).asnumpy()
    assert total.shape == (1,) and float(total) == 3.0 and "%.1f" % total == "3.0"
    labels = mx.nd.array([[1], [2]]).asnumpy()
    assert int(labels[1]) == 2 and repr(total) == "array([3.], dtype=float32)"
    with pytest.raises(TypeError, match=r"only arrays with one element .* shape \(2,\)"):
        float(mx.nd.ones((2,)).asnumpy())


def test_inputs_left_out_by_position_with_none():
    """MXNet's generated signatures take None for an input not given: SoftmaxOutput(x,
    None, 2.0) makes its label variable and sets grad_scale."""
    x = mx.sym.Variable("x")
    s = mx.sym.SoftmaxOutput(x, None, 2.0, name="sm")
    assert s.list_arguments() == ["x", "sm_label"]
    assert s.attr_dict()["sm"] == {"grad_scale": "2.0"}
    assert mx.sym.sum(x, None).attr_dict()["sum0"]["axis"] == "None"  # past the inputs


def test_none_inputs_by_position_in_ops_whose_inputs_follow_attributes():
    """MXNet's generated signatures list every input (FullyConnected(data, weight, bias,
    num_hidden, ...)) whatever no_bias says: values after the Nones are attributes."""
    x = mx.sym.Variable("x")
    fc = mx.sym.FullyConnected(x, None, None, 4, no_bias=True, name="fc")
    assert fc.list_arguments() == ["x", "fc_weight"]
    assert fc.attr_dict()["fc"]["num_hidden"] == "4"
    conv = mx.sym.Convolution(x, None, None, (3, 3), num_filter=2, name="c")
    assert conv.list_arguments() == ["x", "c_weight", "c_bias"]
    assert conv.attr_dict()["c"]["kernel"] == "(3, 3)"
    out = mx.nd.FullyConnected(mx.nd.ones((2, 3)), mx.nd.ones((4, 3)), None, 4, no_bias=True)
    np.testing.assert_allclose(out.asnumpy(), np.full((2, 4), 3.0))


def test_power_takes_base_and_exp_by_name():
    """MXNet's pow/power are (base, exp) (Keras-MXNet's K.pow names them)."""
    x = mx.sym.var("x")
    data = mx.nd.array([1, 2, 3])
    for sym, want in (
        (mx.sym.pow(base=x, exp=2), [1, 4, 9]),
        (mx.sym.power(base=2, exp=x), [2, 4, 8]),
        (mx.sym.maximum(left=x, right=2), [2, 2, 3]),
    ):
        np.testing.assert_allclose(sym.eval(x=data)[0].asnumpy(), want)
    np.testing.assert_allclose(mx.nd.power(base=data, exp=2).asnumpy(), [1, 4, 9])
    np.testing.assert_allclose(mx.nd.add(lhs=data, rhs=1).asnumpy(), [2, 3, 4])
    with pytest.raises(TypeError, match="unexpected keyword argument 'lhs'"):
        mx.nd.power(lhs=data, exp=2)
    with pytest.raises(TypeError, match="missing operand 'exp'"):
        mx.sym.pow(base=x)


def test_a_multi_output_node_is_named_like_one_node():
    """As MXNet (nnvm's GetAttr): a symbol whose outputs all come from one node has its
    name and attributes; a group's repr lists its outputs' node names."""
    x = mx.sym.var("x")
    sl = mx.sym.SliceChannel(x, num_outputs=3, name="sl", attr={"__tag__": "t"})
    assert (repr(sl), sl.name, sl.attr("num_outputs")) == ("<Symbol sl>", "sl", "3")
    assert sl.list_attr() == {"__tag__": "t", "num_outputs": "3"}
    bn = mx.sym.BatchNorm(x, output_mean_var=True, name="bn")
    assert bn.name == "bn" and len(bn.list_outputs()) == 3
    fc = mx.sym.FullyConnected(x, num_hidden=2, name="fc")
    group = mx.sym.Group([fc, mx.sym.Activation(x, act_type="relu", name="act")])
    assert (repr(group), group.name, group.attr("num_hidden")) == (
        "<Symbol group [fc, act]>",
        None,
        None,
    )
    assert group.list_attr() == {"num_hidden": "2"}  # the first output's node, as MXNet
    with mx.name.NameManager():  # fresh counters
        internals = ((x * 2) + 1).get_internals()
    assert repr(internals) == "<Symbol group [x, _mulscalar0, _plusscalar0]>"


def test_symbol_debug_str_is_mxnets_print_format():
    x = mx.sym.var("x")
    conv = mx.sym.Convolution(x, kernel=(1, 1), num_filter=4, name="conv")
    sl = mx.sym.SliceChannel(conv, num_outputs=2, name="sl")
    out = mx.sym.Concat(sl[0], sl[1], dim=1, name="cat")
    want = (
        "Symbol Outputs:\n\toutput[0]=cat(0)\nVariable:x\nVariable:conv_weight\n"
        "Variable:conv_bias\n--------------------\nOp:Convolution, Name=conv\nInputs:\n"
        "\targ[0]=x(0) version=0\n\targ[1]=conv_weight(0) version=0\n"
        "\targ[2]=conv_bias(0) version=0\nAttrs:\n\tkernel=(1, 1)\n\tnum_filter=4\n"
        "--------------------\nOp:SliceChannel, Name=sl\nInputs:\n\targ[0]=conv(0)\n"
        "Attrs:\n\tnum_outputs=2\n--------------------\nOp:Concat, Name=cat\nInputs:\n"
        "\targ[0]=sl(0)\n\targ[1]=sl(1)\nAttrs:\n\tdim=1\n\tnum_args=2\n"
    )  # MXNet 1.9.1's output for this graph
    assert out.debug_str() == want


def test_symbol_copies_and_compositions_own_their_variables():
    """MXNet's Symbol copy is the whole graph: attributes set on a copy (memonger's
    force_mirroring, a variable's tag) never reach the original; compose(name=) renames
    the composed head."""
    x = mx.sym.var("x")
    fc = mx.sym.FullyConnected(x, num_hidden=2, name="fc")
    twin = copy.copy(fc)
    for s in twin.get_internals():
        s._set_attr(force_mirroring="True")
    assert "force_mirroring" not in fc.tojson() and twin.tojson().count("force_mirroring") == 4
    v = mx.sym.var("v")
    copy.deepcopy(v)._set_attr(foo="1")
    assert v.attr("foo") is None
    composed = fc(x=mx.sym.var("y"), name="compose")
    composed.get_internals()["fc_weight"]._set_attr(bar="2")
    assert "bar" not in fc.attr_dict()["fc_weight"]
    assert (composed.name, composed.list_outputs()) == ("compose", ["compose_output"])
    assert fc.name == "fc"


def test_colour_augmenters_change_a_float_ndarray_in_place():
    """MXNet's colour augmenters and color_normalize compute src *= alpha, src -= mean:
    the caller's float array changes and is returned."""
    base = np.random.RandomState(0).randint(0, 255, (4, 5, 3)).astype("float32")
    eig = np.eye(3, dtype=np.float32)
    augs = [
        mx.image.BrightnessJitterAug(0.5),
        mx.image.ContrastJitterAug(0.5),
        mx.image.SaturationJitterAug(0.5),
        mx.image.LightingAug(0.1, np.array([55.0, 4.8, 1.1]), eig),
        mx.image.ColorNormalizeAug(mx.nd.array([1, 2, 3]), mx.nd.array([2, 2, 2])),
    ]
    for aug in augs:
        x = mx.nd.array(base)
        out = aug(x)
        assert out is x and not np.allclose(x.asnumpy(), base), type(aug).__name__
    x = mx.nd.array(base)
    assert mx.image.color_normalize(x, mx.nd.array([1, 2, 3]), mx.nd.array([2, 2, 2])) is x
    np.testing.assert_allclose(x.asnumpy(), (base - [1, 2, 3]) / 2)
    raw = base.astype(np.uint8)  # numpy input: a new array, the input untouched
    mx.image.BrightnessJitterAug(0.5)(raw)
    np.testing.assert_array_equal(raw, base.astype(np.uint8))


def test_a_monitor_on_a_bare_executor_sees_every_node():
    """Monitor.install(executor): every operator's outputs in forward, then the backward
    nodes as MXNet's backward runs them (last node first); the arguments at toc()."""
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    act = mx.sym.Activation(fc, act_type="relu", name="relu")
    out = mx.sym.SoftmaxOutput(act, name="sm")
    exe = out.simple_bind(mx.cpu(), data=(2, 4))
    mon = mx.monitor.Monitor(1, pattern=".*output")
    mon.install(exe)
    mon.tic()
    exe.forward(is_train=False)
    assert [r[1] for r in mon.toc()] == ["fc_output", "relu_output", "sm_output"]
    mon.tic()
    exe.forward(is_train=True)
    exe.backward()
    assert [r[1] for r in mon.toc()] == [
        "fc_output",
        "relu_output",
        "sm_output",
        "sm_backward_output0",
        "sm_backward_output1",
        "relu_backward_output",
        "fc_backward_output0",
        "fc_backward_output1",
        "fc_backward_output2",
    ]  # fmt: skip  (MXNet 1.9.1's list)


def test_feedforward_fit_logs_mxnets_epoch_lines(caplog):
    """MXNet's FeedForward loop ends an epoch with 'Resetting Data Iterator' (log parsers
    of old scripts read these), no Train- lines; then time cost, checkpoint, validation."""
    import logging

    rng = np.random.RandomState(0)
    x, y = rng.rand(40, 5).astype("f"), rng.randint(0, 2, 40)
    net = mx.sym.SoftmaxOutput(
        mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2), name="softmax"
    )
    with pytest.warns(DeprecationWarning):
        model = mx.model.FeedForward(net, num_epoch=2, learning_rate=0.1)
    with caplog.at_level(logging.INFO):
        model.fit(mx.io.NDArrayIter(x, y, 10), eval_data=mx.io.NDArrayIter(x, y, 10))
    lines = [r.getMessage().split("=")[0] for r in caplog.records]
    assert lines == [
        "Start training with [cpu(0)]",
        "Epoch[0] Resetting Data Iterator",
        "Epoch[0] Time cost",
        "Epoch[0] Validation-accuracy",
        "Epoch[1] Resetting Data Iterator",
        "Epoch[1] Time cost",
        "Epoch[1] Validation-accuracy",
    ]


def test_reductions_of_host_arrays_are_numpy_scalars():
    """mx-rcnn-style metrics add np.sum(pred.asnumpy() == label) and CompositeEvalMetric
    tests isinstance(value, np.generic): one-value reductions are numpy scalars."""
    host = mx.nd.array([[1, 2], [3, 4]]).asnumpy()
    for value in (np.sum(host), host.sum(), host.max(), host.mean(), (host == 1).sum()):
        assert isinstance(value, np.generic) and hash(value) is not None
    assert type(host.sum(axis=0)) is type(host)  # arrays stay what asnumpy gave

    class Count(mx.metric.EvalMetric):
        def update(self, labels, preds):
            self.sum_metric += np.sum(preds[0].asnumpy() > 0.5)
            self.num_inst += 1

    composite = mx.metric.CompositeEvalMetric()
    composite.add(Count("count"))
    composite.update([mx.nd.zeros(3)], [mx.nd.array([0.2, 0.7, 0.9])])
    assert composite.get() == (["count"], [2.0])


def test_bind_reads_only_the_symbols_names_from_dicts():
    """MXNet's autoencoder/DEC solvers bind each stacked sub-symbol with the whole model's
    argument and gradient dicts: names the symbol lacks are ignored."""
    x = mx.sym.var("data")
    net = mx.sym.FullyConnected(x, num_hidden=2, name="fc")
    every = {
        "data": mx.nd.ones((3, 4)),
        "fc_weight": mx.nd.ones((2, 4)),
        "fc_bias": mx.nd.zeros(2),
        "other_weight": mx.nd.ones((5, 5)),
    }
    grads = {k: mx.nd.zeros(v.shape) for k, v in every.items()}
    exe = net.bind(mx.cpu(), args=every, args_grad=grads, aux_states={"unused": mx.nd.ones(1)})
    out = exe.forward(is_train=True)[0]
    np.testing.assert_allclose(out.asnumpy(), np.full((3, 2), 4.0))
    exe.backward(mx.nd.ones((3, 2)))
    np.testing.assert_allclose(grads["fc_weight"].asnumpy(), np.full((2, 4), 3.0))
    with pytest.raises(MXNetError, match="missing"):
        net.bind(mx.cpu(), args={"data": mx.nd.ones((3, 4))})


def test_control_flow_bodies_may_return_one_symbol():
    """MXNet's while_loop takes a bare Symbol as func's step output (its while_loop RNN
    benchmark does); a one-output cond names its output 'output'."""
    data, h0, i0 = mx.sym.var("data"), mx.sym.var("h"), mx.sym.var("i")

    def step(i, h):
        out = mx.sym.tanh(data.take(i).squeeze(axis=0) + h)
        return out, [i + 1, out]

    out, state = mx.sym.contrib.while_loop(lambda i, *_: i < 3, step, [i0, h0], max_iterations=3)
    feed = {"data": mx.nd.ones((3, 2)), "h": mx.nd.zeros((2,)), "i": mx.nd.zeros((1,))}
    res = mx.sym.Group([out] + state).bind(mx.cpu(), feed).forward()
    h = 0.0
    for _ in range(3):
        h = np.tanh(1.0 + h)
    np.testing.assert_allclose(res[2].asnumpy(), [h, h], rtol=1e-6)
    with mx.name.NameManager():
        c = mx.sym.contrib.cond(mx.sym.sum(h0) > 0, lambda: h0 * 2, lambda: h0 - 1)
    assert c.list_outputs() == ["_cond0_output"]


def test_the_module_kvstore_holds_what_mxnets_would():
    """After init_optimizer(kvstore=kv), kv.pull gives the weights (MXNet's module inits
    them in the store and, updating on the store, keeps them there after each update)."""
    net = mx.sym.SoftmaxOutput(
        mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3, name="fc"), name="sm"
    )
    mod = mx.mod.Module(net, label_names=["sm_label"], context=[mx.cpu(0), mx.cpu(1)])
    mod.bind([("data", (4, 5))], [("sm_label", (4,))])
    mod.init_params(mx.init.Constant(0.5))
    kv = mx.kv.create("local")
    mod.init_optimizer(kvstore=kv, optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    out = mx.nd.zeros((3, 5))
    kv.pull("fc_weight", out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.float32(0.5))
    batch = mx.io.DataBatch([mx.nd.ones((4, 5))], [mx.nd.array([0, 1, 2, 0])])
    mod.forward_backward(batch)
    mod.update()
    kv.pull("fc_weight", out=out)
    np.testing.assert_allclose(out.asnumpy()[:, 0], [0.51667, 0.49167, 0.49167], atol=1e-5)
    np.testing.assert_array_equal(out.asnumpy(), mod.get_params()[0]["fc_weight"].asnumpy())
    with pytest.raises(NotImplementedError, match="push of key 'fc_weight'"):
        kv.push("fc_weight", mx.nd.ones((3, 5)))


@pytest.mark.parametrize("shuffle", [False, True])
def test_in_place_writes_to_ndarrayiter_arrays_reach_later_batches(shuffle):
    """DEC's refresh() writes new targets into it.data_list[1] then resets: MXNet's
    iterator reads those arrays, so the next epoch serves them (in either order)."""
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    it = mx.io.NDArrayIter(x, np.zeros(6, np.float32), 2, shuffle=shuffle)
    next(it)
    rows = it.data_list[0].asnumpy()  # the (shuffled) order data_list hands out
    it.data_list[1][:] = mx.nd.array(np.arange(6) + 10)
    np.testing.assert_array_equal(next(it).label[0].asnumpy(), [12, 13])
    it.reset()
    served = {
        tuple(d): lab for b in it for d, lab in zip(b.data[0].asnumpy(), b.label[0].asnumpy())
    }
    assert served == {tuple(rows[p]): 10 + p for p in range(6)}  # each sample its target
    given = mx.nd.array(x)
    it = mx.io.NDArrayIter(given, None, 3)
    given[:] = 1
    assert next(it).data[0].asnumpy().sum() == 6.0


def test_libinfo_and_the_c_library_stand_in():
    """MXNet's diagnose.py prints mx.libinfo.find_lib_path(); benchmark scripts import
    base._LIB and check_call. The path is jaxlib's library; a C call names itself."""
    import os

    from mxmod.base import _LIB, check_call

    paths = mx.libinfo.find_lib_path()
    assert paths and all(os.path.exists(p) for p in paths)
    assert mx.libinfo.__version__ == mx.__version__
    check_call(0)
    with pytest.raises(MXNetError, match="return code -1"):
        check_call(-1)
    with pytest.raises(NotImplementedError, match="_LIB.MXSetNumOMPThreads"):
        _LIB.MXSetNumOMPThreads(4)
    with pytest.raises(RuntimeError, match="no C API"):
        mx.libinfo.find_include_path()


def test_csr_batches_split_over_contexts_sharing_a_device():
    """Two contexts on one device (cpu(8) wraps to device 0 here) run one program per
    context; a csr batch is split by rows for them (MXNet 1.9.1's numbers)."""
    x = mx.sym.Variable("data", stype="csr")
    w = mx.sym.Variable("w", shape=(10, 3), stype="row_sparse", init=mx.init.Constant(0.1))
    net = mx.sym.SoftmaxOutput(mx.sym.sparse.dot(x, w), name="out")
    n_dev = len(__import__("jax").devices())
    with warnings.catch_warnings():  # cpu(k) wrapping warns (once per process)
        warnings.simplefilter("ignore")
        ctxs = [mx.cpu(0), mx.cpu(n_dev)]
        mod = mx.mod.Module(net, label_names=["out_label"], context=ctxs)
        mod.bind([("data", (4, 10))], [("out_label", (4,))])
    mod.init_params()
    mod.init_optimizer(kvstore="local", optimizer="sgd", optimizer_params={"learning_rate": 0.5})
    d = np.zeros((4, 10), "float32")
    d[0, 1], d[1, 3], d[2, 5], d[3, 7] = 1, 2, 1, 3
    batch = mx.io.DataBatch([mx.nd.array(d).tostype("csr")], [mx.nd.array([0, 1, 2, 0])])
    mod.forward_backward(batch)
    mod.update()
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), np.full((4, 3), 1 / 3), atol=1e-6)
    want = [[0.1833, 0.0583, 0.0583], [0.0167, 0.2667, 0.0167], [0.0583, 0.0583, 0.1833],
            [0.35, -0.025, -0.025]]  # fmt: skip
    np.testing.assert_allclose(mod.get_params()[0]["w"].asnumpy()[[1, 3, 5, 7]], want, atol=1e-4)


def test_row_sparse_pulls_into_the_modules_own_weights_keep_them_whole():
    """MXNet's factorization-machine example row_sparse_pulls the store into
    _exec_group.param_arrays before each batch: the rows not pulled stay (the store keeps
    the full weight), so training equals training without the pulls."""
    x = mx.sym.Variable("data", stype="csr")
    w = mx.sym.Variable("w", shape=(12, 1), stype="row_sparse", init=mx.init.Constant(0.05))
    net = mx.sym.LogisticRegressionOutput(mx.sym.sparse.dot(x, w), name="out")
    rng = np.random.RandomState(0)
    dense = (rng.rand(4, 5, 12) < 0.25) * rng.rand(4, 5, 12)
    labels = rng.randint(0, 2, (4, 5))

    def train(pull):
        mod = mx.mod.Module(net, label_names=["out_label"])
        mod.bind([("data", (5, 12))], [("out_label", (5,))])
        mod.init_params()
        kv = mx.kv.create("local")
        mod.init_optimizer(kvstore=kv, optimizer="sgd", optimizer_params={"learning_rate": 0.1})
        w_param = mod._exec_group.param_arrays[mod._exec_group.param_names.index("w")]
        for d, lab in zip(dense, labels):
            batch = mx.io.DataBatch([mx.nd.array(d).tostype("csr")], [mx.nd.array(lab)])
            if pull:
                kv.row_sparse_pull("w", w_param, row_ids=[batch.data[0].indices])
            mod.forward_backward(batch)
            mod.update()
        return mod.get_params()[0]["w"].asnumpy()

    np.testing.assert_allclose(train(pull=True), train(pull=False), rtol=1e-6)
    assert not np.allclose(train(pull=True), 0.05)


def test_sparse_embedding_takes_deterministic():
    """MXNet's SparseEmbedding accepts deterministic=True (matrix factorization example)."""
    d, w = mx.sym.var("user"), mx.sym.var("user_weight", stype="row_sparse")
    s = mx.sym.contrib.SparseEmbedding(d, w, input_dim=5, output_dim=2, deterministic=True)
    exe = s.simple_bind(mx.cpu(), user=(3,))
    exe.arg_dict["user_weight"][:] = mx.nd.array(np.arange(10).reshape(5, 2))
    exe.arg_dict["user"][:] = mx.nd.array([1, 3, 1])
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), [[2, 3], [6, 7], [2, 3]])
    with pytest.raises(MXNetError, match="deterministic"):
        mx.sym.Embedding(d, input_dim=5, output_dim=2, deterministic=True)


def test_a_fixed_gamma_is_updated_from_one_each_step():
    """MXNet's BatchNorm forward writes 1 into a fix_gamma gamma, so with weight decay the
    saved value stays 1 - lr * wd (0.995 here) instead of decaying step after step."""
    data = mx.sym.var("data")
    bn = mx.sym.BatchNorm(mx.sym.FullyConnected(data, num_hidden=4, name="fc"), name="bn")
    net = mx.sym.SoftmaxOutput(bn, name="softmax")  # BatchNorm's fix_gamma defaults to True
    x = np.random.RandomState(0).rand(16, 3).astype("f")
    it = mx.io.NDArrayIter(x, np.arange(16) % 4, 8)
    mod = mx.mod.Module(net)
    mod.fit(it, num_epoch=3, optimizer="sgd", optimizer_params={"learning_rate": 0.5, "wd": 0.01})
    np.testing.assert_allclose(mod.get_params()[0]["bn_gamma"].asnumpy(), 0.995, rtol=1e-6)


def test_without_update_on_kvstore_the_store_holds_summed_gradients(monkeypatch):
    """MXNET_UPDATE_ON_KVSTORE=0: MXNet's store holds the initial weights, then after each
    update the devices' gradients summed (MXNet 1.9.1's numbers)."""
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", "0")
    fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=1, name="fc", no_bias=True)
    net = mx.sym.LinearRegressionOutput(fc, name="lro")
    mod = mx.mod.Module(net, label_names=["lro_label"], context=[mx.cpu(0), mx.cpu(1)])
    mod.bind([("data", (4, 2))], [("lro_label", (4, 1))])
    mod.init_params(mx.init.Constant(0.5))
    kv = mx.kv.create("local")
    mod.init_optimizer(kvstore=kv, optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    out = mx.nd.zeros((1, 2))
    kv.pull("fc_weight", out=out)
    np.testing.assert_array_equal(out.asnumpy(), [[0.5, 0.5]])
    data = mx.nd.array([[1, 2], [3, 4], [5, 6], [7, 8]])
    mod.forward_backward(mx.io.DataBatch([data], [mx.nd.ones((4, 1))]))
    mod.update()
    kv.pull("fc_weight", out=out)
    np.testing.assert_allclose(out.asnumpy(), [[76, 90]], rtol=1e-6)
    np.testing.assert_allclose(mod.get_params()[0]["fc_weight"].asnumpy(), [[-1.4, -1.75]])


def test_simple_bind_labels_ctx_group_arrays_with_their_context():
    """simple_bind(group2ctx=...) arrays report their group's context, also where that
    context shares a JAX device with another (cpu(k) past the device count wraps)."""
    n_dev = len(__import__("jax").devices())
    with mx.AttrScope(ctx_group="a"):
        h = mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden=3, name="fc1")
    with mx.AttrScope(ctx_group="b"):
        out = mx.sym.MakeLoss(mx.sym.sum(mx.sym.FullyConnected(h, num_hidden=2, name="fc2")))
    far = mx.cpu(n_dev + 1)
    with warnings.catch_warnings():  # cpu(k) wrapping warns (once per process)
        warnings.simplefilter("ignore")
        exe = out.simple_bind(mx.cpu(), x=(2, 4), group2ctx={"a": far, "b": mx.cpu(2)})
    assert exe.arg_dict["fc1_weight"].context == far and exe.grad_dict["fc1_weight"].context == far
    assert exe.arg_dict["fc2_weight"].context == mx.cpu(2)


def _mnist_files(folder, n):
    import struct

    images = np.zeros((n, 28, 28), np.uint8)
    images[:, 0, 0] = np.arange(n) // 256
    img, lab = str(folder / "img"), str(folder / "lab")
    with open(img, "wb") as f:
        f.write(struct.pack(">IIII", 2051, n, 28, 28) + images.tobytes())
    with open(lab, "wb") as f:
        f.write(struct.pack(">II", 2049, n) + (np.arange(n) % 256).astype(np.uint8).tobytes())
    return img, lab


def test_mnistiter_shuffles_in_mxnets_order(tmp_path):
    """MNIST examples seed MNISTIter's shuffle; the order is MXNet's (std::shuffle with
    std::mt19937), recorded by tests/fixtures/gen_mnist_order_golden.py."""
    import os

    path = os.path.join(os.path.dirname(__file__), "fixtures", "mnist_order", "order.json")
    for case in json.load(open(path)):
        img, lab = _mnist_files(tmp_path, case["n"])
        it = mx.io.MNISTIter(
            image=img, label=lab, batch_size=1, shuffle=True, seed=case["seed"],
            num_parts=case["num_parts"], part_index=case["part_index"], silent=True, flat=True,
        )  # fmt: skip
        order = [
            int(round(b.data[0].asnumpy()[0, 0] * 256)) * 256 + int(b.label[0].asnumpy()[0])
            for b in it
        ]
        assert order == case["order"], case["seed"]


def test_exported_gluon_rnn_weights_get_their_input_size_from_the_rnn():
    """A hybridized Gluon RNN exports its first layer's input weights as (4H, 0) Variables,
    reshaped to 1-D and joined by _rnn_param_concat: the RNN's parameter size decides the
    0 (split equally between the two directions), as MXNet 1.9.1 infers it."""
    hidden, width = 2, 5
    names = ["l0_i2h_weight", "l0_h2h_weight", "r0_i2h_weight", "r0_h2h_weight"]
    names += [n.replace("weight", "bias") for n in names]
    declared = {"l0_i2h_weight": (8, 0), "r0_i2h_weight": (8, 0)}
    declared.update({"l0_h2h_weight": (8, hidden), "r0_h2h_weight": (8, hidden)})
    parts = [mx.sym.Reshape(mx.sym.var(n, shape=declared.get(n, (8,))), shape=-1) for n in names]
    params = mx.sym._internal._rnn_param_concat(*parts, dim=0, num_args=len(parts))
    rnn = mx.sym.RNN(
        mx.sym.var("data"), params, mx.sym.var("state"), mx.sym.var("cell"),
        state_size=hidden, num_layers=1, bidirectional=True, mode="lstm",
    )  # fmt: skip
    args, outs, _ = rnn.infer_shape(data=(3, 4, width), state=(2, 4, 2), cell=(2, 4, 2))
    found = dict(zip(rnn.list_arguments(), args))
    assert found["l0_i2h_weight"] == found["r0_i2h_weight"] == (8, width)
    assert outs == [(3, 4, 4)]
    exe = rnn.simple_bind(mx.cpu(), data=(3, 4, width), state=(2, 4, 2), cell=(2, 4, 2))
    assert exe.arg_dict["l0_i2h_weight"].shape == (8, width)
