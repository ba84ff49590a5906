"""Python custom operators (mx.operator) against real MXNet 1.9.1
(fixtures/gen_custom_op_goldens.py): symbol JSON, Module.fit trajectories on one and two
devices, the hand-written forward/backward/update loop, mx.nd.Custom."""

import os
import sys

import numpy as np
import pytest

import mxmod as mx

HERE = os.path.join(os.path.dirname(__file__), "fixtures")
sys.path.insert(0, HERE)
import custom_op_nets as nets  # noqa: E402

nets.define(mx)
GOLD = os.path.join(HERE, "custom_op")


def _gold(name):
    return np.load(os.path.join(GOLD, name + ".npz"))


def _init(ref):
    arg = {k.split(":", 1)[1]: mx.nd.array(ref[k]) for k in ref.files if k.startswith("init_arg:")}
    aux = {k.split(":", 1)[1]: mx.nd.array(ref[k]) for k in ref.files if k.startswith("init_aux:")}
    return arg, aux


def _close(got, want, what):
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=what)


# ------------------------------------------------------------------ symbols
@pytest.mark.parametrize("name", sorted(nets.NETS))
def test_symbol_json_is_mxnets_and_round_trips(name):
    with open(os.path.join(GOLD, f"{name}-symbol.json")) as f:
        want = f.read()
    sym = nets.NETS[name][0](mx)
    assert sym.tojson() == want
    loaded = mx.sym.load_json(want)
    assert loaded.tojson() == want
    assert loaded.list_arguments() == sym.list_arguments()
    assert loaded.list_auxiliary_states() == sym.list_auxiliary_states()


def test_names_and_inference_come_from_the_prop():
    sym = nets.softmax_net(mx)
    assert sym.list_outputs() == ["softmax_output"]
    assert sym.list_arguments()[-1] == "softmax_label"
    arg, out, aux = sym.infer_shape(data=(8, 6))  # label shape derived by the Prop
    assert dict(zip(sym.list_arguments(), arg))["softmax_label"] == (8,)
    assert out == [(8, 4)] and aux == []
    center = nets.center_net(mx)
    assert center.list_auxiliary_states() == ["center_moving_mean"]
    assert center.infer_shape(data=(8, 6))[2] == [(8,)]
    _, out_t, aux_t = center.infer_type(data="float32", softmax_label="float32")
    assert out_t == [np.float32] and aux_t == [np.float32]


def test_auto_created_inputs_and_scope_attributes():
    with mx.AttrScope(ctx_group="dev1"):  # MXNet passes __ctx_group__ to the Prop and crashes
        s = mx.sym.Custom(op_type="np_softmax")
    assert s.name.startswith("custom")
    assert s.list_arguments() == [f"{s.name}_data", f"{s.name}_label"]


# ------------------------------------------------------------------ training against MXNet
# MXNet writes a Custom op's aux in forward even where no backward pass reaches the node
@pytest.mark.parametrize(
    "name,n_dev",
    [("softmax", 1), ("softmax", 2), ("center", 1), ("center", 2), ("center_first", 2)],
)
def test_fit_trajectory_matches_mxnet(name, n_dev):
    ref = _gold(f"{name}_{n_dev}dev")
    build, opt = nets.NETS[name]
    x, y = nets.data()
    mod = mx.mod.Module(build(mx), context=[mx.cpu(i) for i in range(n_dev)])
    seen = []

    def on_batch(_):
        arg, aux = mod.get_params()
        seen.append(
            ({k: v.asnumpy() for k, v in arg.items()}, {k: v.asnumpy() for k, v in aux.items()})
        )

    arg0, aux0 = _init(ref)
    mod.fit(
        mx.io.NDArrayIter(x, y, batch_size=nets.BATCH, shuffle=False),
        num_epoch=nets.EPOCHS,
        optimizer="sgd",
        optimizer_params=opt,
        arg_params=arg0,
        aux_params=aux0,
        batch_end_callback=on_batch,
        eval_metric="acc",
    )
    assert len(seen) == int(ref["steps"])
    for s, (arg, aux) in enumerate(seen):
        for k, v in arg.items():
            _close(v, ref[f"arg{s}:{k}"], f"step {s} {k}")
        for k, v in aux.items():
            _close(v, ref[f"aux{s}:{k}"], f"step {s} aux {k}")
    pred = mod.predict(mx.io.NDArrayIter(x, batch_size=nets.BATCH)).asnumpy()
    _close(pred, ref["predict"], "predict after fit")


@pytest.mark.parametrize("name", sorted(nets.NETS))
def test_forward_backward_update_loop_matches_mxnet(name):
    ref, init = _gold(f"{name}_manual"), _gold(f"{name}_1dev")
    build, opt = nets.NETS[name]
    x, y = nets.data()
    mod = mx.mod.Module(build(mx), context=mx.cpu())
    mod.bind(
        data_shapes=[("data", (nets.BATCH, nets.N_IN))],
        label_shapes=[("softmax_label", (nets.BATCH,))],
    )
    arg0, aux0 = _init(init)
    mod.init_params(arg_params=arg0, aux_params=aux0)
    mod.init_optimizer(optimizer="sgd", optimizer_params=opt)
    for s in range(4):
        sl = slice(s * nets.BATCH, (s + 1) * nets.BATCH)
        mod.forward(mx.io.DataBatch([mx.nd.array(x[sl])], [mx.nd.array(y[sl])]), is_train=True)
        _close(mod.get_outputs()[0].asnumpy(), ref[f"out{s}"], f"outputs {s}")
        mod.backward()
        mod.update()
        arg, aux = mod.get_params()
        for k, v in {**arg, **aux}.items():
            kind = "aux" if k in aux else "arg"
            _close(v.asnumpy(), ref[f"{kind}{s}:{k}"], f"step {s} {k}")
    mod.forward(mx.io.DataBatch([mx.nd.array(x[: nets.BATCH])]), is_train=False)
    _close(mod.get_outputs()[0].asnumpy(), ref["eval_out"], "inference output")


def test_executor_gradients_match_mxnet():
    ref, init = _gold("center_manual"), _gold("center_1dev")
    x, y = nets.data()
    ex = nets.center_net(mx).simple_bind(mx.cpu(), data=(8, 6), softmax_label=(8,))
    for k, v in _init(init)[0].items():
        ex.arg_dict[k][:] = v
    ex.arg_dict["data"][:] = x[:8]
    ex.arg_dict["softmax_label"][:] = y[:8]
    ex.forward(is_train=True)
    ex.backward()
    for k in ("fc1_weight", "fc1_bias", "fc2_weight"):
        _close(ex.grad_dict[k].asnumpy(), ref[f"grad0:{k}"], k)
    _close(ex.aux_dict["center_moving_mean"].asnumpy(), init["aux0:center_moving_mean"], "aux")


def test_loaded_json_runs_like_the_built_symbol():
    init = _gold("center_1dev")
    with open(os.path.join(GOLD, "center-symbol.json")) as f:
        loaded = mx.sym.load_json(f.read())
    x, _ = nets.data()
    outs = []
    for sym in (loaded, nets.center_net(mx)):
        mod = mx.mod.Module(sym, context=mx.cpu())
        mod.bind(
            data_shapes=[("data", (8, 6))],
            label_shapes=[("softmax_label", (8,))],
            for_training=False,
        )
        arg0, aux0 = _init(init)
        mod.init_params(arg_params=arg0, aux_params=aux0)
        mod.forward(mx.io.DataBatch([mx.nd.array(x[:8])]), is_train=False)
        outs.append(mod.get_outputs()[0].asnumpy())
    np.testing.assert_array_equal(outs[0], outs[1])


def test_nd_custom_matches_mxnet_and_writes_aux_in_place():
    ref = _gold("nd_custom")
    out = mx.nd.Custom(mx.nd.array(ref["x"]), mx.nd.array(ref["label"]), op_type="np_softmax")
    _close(out.asnumpy(), ref["softmax"], "np_softmax")
    aux = mx.nd.array(ref["mean_before"])
    out = mx.nd.Custom(mx.nd.array(ref["x"]), aux, op_type="running_center", momentum=0.5)
    _close(out.asnumpy(), ref["center"], "running_center")
    _close(aux.asnumpy(), ref["mean_after"], "aux written by forward")
    by_name = mx.nd.Custom(
        data=mx.nd.array(ref["x"]), label=mx.nd.array(ref["label"]), op_type="np_softmax"
    )
    _close(by_name.asnumpy(), ref["softmax"], "inputs by name")


# ------------------------------------------------------------------ behaviour
CALLS = []


class _Square(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        CALLS.append(("forward", is_train, req))
        self.assign(out_data[0], req[0], in_data[0] * in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        CALLS.append(
            (
                "backward",
                [a.shape for a in out_grad],
                [a.shape for a in in_data],
                [a.shape for a in out_data],
            )
        )
        self.assign(in_grad[0], req[0], 2 * in_data[0] * out_grad[0])


@mx.operator.register("t_square")
class _SquareProp(mx.operator.CustomOpProp):
    def declare_backward_dependency(self, out_grad, in_data, out_data):
        return list(out_grad) + list(in_data)  # out_data is not needed

    def create_operator(self, ctx, shapes, dtypes):
        CALLS.append(("create", str(ctx), shapes, dtypes))
        return _Square()


def test_head_gradient_is_train_and_declared_dependencies():
    CALLS.clear()
    x = np.array([[1.0, -2.0, 3.0]], "float32")
    og = np.array([[0.5, 1.0, 2.0]], "float32")
    sym = mx.sym.Custom(mx.sym.var("x"), op_type="t_square", name="sq")
    assert sym.list_outputs() == ["sq_output"]
    ex = sym.simple_bind(mx.cpu(), x=(1, 3))
    ex.forward(is_train=False, x=mx.nd.array(x))
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), x * x)
    ex.forward(is_train=True, x=mx.nd.array(x))
    ex.backward(mx.nd.array(og))
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), 2 * x * og)
    assert ("create", "cpu(0)", [[1, 3]], [0]) in CALLS
    fwd = [c for c in CALLS if c[0] == "forward"]
    # the executor's backward re-runs the forward (one vjp); Module's step runs it once
    assert [c[1] for c in fwd][:2] == [False, True] and fwd[0][2] == ["write"]
    (bwd,) = [c for c in CALLS if c[0] == "backward"]
    assert bwd[1:] == ([(1, 3)], [(1, 3)], [(0,)])  # undeclared out_data arrives empty


def test_a_prop_without_head_gradient_is_a_loss_head():
    sym = nets.softmax_net(mx)
    mod = mx.mod.Module(sym, context=mx.cpu())
    mod.bind(data_shapes=[("data", (8, 6))], label_shapes=[("softmax_label", (8,))])
    mod.init_params()
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 1.0})
    before = mod.get_params()[0]["fc1_weight"].asnumpy()
    x, y = nets.data()
    mod.forward(mx.io.DataBatch([mx.nd.array(x[:8])], [mx.nd.array(y[:8])]), is_train=True)
    mod.backward()  # no out_grads needed: need_top_grad=False
    mod.update()
    assert np.abs(mod.get_params()[0]["fc1_weight"].asnumpy() - before).max() > 1e-4
    fc = mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=3, name="fc")
    head = mx.sym.Custom(fc, op_type="t_square")
    mod = mx.mod.Module(head, data_names=["x"], label_names=None, context=mx.cpu())
    mod.bind(data_shapes=[("x", (1, 3))])
    mod.init_params()
    mod.forward(mx.io.DataBatch([mx.nd.ones((1, 3))]), is_train=True)
    with pytest.raises(mx.MXNetError, match="out_grads"):
        mod.backward()
    CALLS.clear()
    mod.init_optimizer(optimizer="sgd")
    mod.forward(mx.io.DataBatch([mx.nd.ones((1, 3))]), is_train=True)
    mod.backward(out_grads=[mx.nd.ones((1, 3))])
    mod.update()
    # the operator was created once, before (MXNet: at bind), not per program
    assert [c[0] for c in CALLS] == ["forward", "backward"]


class _ArgMax(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy()
        self.assign(out_data[0], req[0], mx.nd.array(x.max(axis=1)))
        self.assign(out_data[1], req[1], mx.nd.array(x.argmax(axis=1), dtype="int32"))


@mx.operator.register("t_argmax")
class _ArgMaxProp(mx.operator.CustomOpProp):
    def __init__(self, axis="1"):
        super().__init__(need_top_grad=True)
        self.axis = int(axis)

    def list_outputs(self):
        return ["max", "index"]

    def infer_shape(self, in_shape):
        return in_shape, [(in_shape[0][0],), (in_shape[0][0],)], []

    def infer_type(self, in_type):
        return in_type, [in_type[0], np.int32], []

    def create_operator(self, ctx, shapes, dtypes):
        return _ArgMax()


def test_several_outputs_with_their_own_types():
    sym = mx.sym.Custom(mx.sym.var("x"), op_type="t_argmax", name="am", axis=1)
    assert sym.list_outputs() == ["am_max", "am_index"]
    assert sym[0].attr("axis") == "1" and sym[0].attr("op_type") == "t_argmax"
    _, out_t, _ = sym.infer_type(x="float32")
    assert out_t == [np.float32, np.int32]
    x = np.array([[1, 5, 2], [7, 0, 3]], "float32")
    ex = sym.simple_bind(mx.cpu(), grad_req="null", x=(2, 3))
    out = ex.forward(x=mx.nd.array(x))
    np.testing.assert_array_equal(out[0].asnumpy(), [5, 7])
    assert out[1].dtype == np.int32
    np.testing.assert_array_equal(out[1].asnumpy(), [1, 0])
    mx_out = mx.nd.Custom(mx.nd.array(x), op_type="t_argmax")
    assert [o.shape for o in mx_out] == [(2,), (2,)]


def test_registry_listing_and_override_warning(caplog):
    assert {"np_softmax", "running_center", "FullyConnected"} <= set(
        mx.operator.get_all_registered_operators()
    )

    @mx.operator.register("t_override")
    class First(mx.operator.CustomOpProp):
        pass

    with caplog.at_level("WARNING"):

        @mx.operator.register("t_override")
        class Second(mx.operator.CustomOpProp):
            def list_outputs(self):
                return ["a", "b"]

    assert "overriding existing custom operator t_override" in caplog.text
    assert mx.sym.Custom(mx.sym.var("x"), op_type="t_override", name="o").list_outputs() == [
        "o_a",
        "o_b",
    ]


def test_custom_loss_head_loaded_from_json_trains():
    with open(os.path.join(GOLD, "softmax-symbol.json")) as f:
        sym = mx.sym.load_json(f.read())
    mod = mx.mod.Module(sym, context=mx.cpu())
    mod.bind(data_shapes=[("data", (8, 6))], label_shapes=[("softmax_label", (8,))])
    mod.init_params()
    x, y = nets.data()
    mod.forward(mx.io.DataBatch([mx.nd.array(x[:8])], [mx.nd.array(y[:8])]), is_train=True)
    mod.backward()


def test_aux_written_by_forward_persists_like_mxnet():
    ref = _gold("aux_counter")
    sym = mx.sym.Custom(mx.sym.var("data"), op_type="forward_counter", name="cnt")
    ex = sym.simple_bind(mx.cpu(), data=(2, 3))
    for step, is_train in enumerate((False, False, True)):
        ex.forward(is_train=is_train, data=mx.nd.ones((2, 3)))
        np.testing.assert_array_equal(ex.aux_dict["cnt_count"].asnumpy(), ref[f"executor{step}"])
