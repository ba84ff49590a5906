"""Module training trajectories equal real MXNet 1.9.1's (fixtures/gen_module_goldens.py),
on one device and on several simulated devices."""

import os

import numpy as np
import pytest

import mxmod as mx

HERE = os.path.join(os.path.dirname(__file__), "fixtures", "module")


def mlp():
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, name="fc1", num_hidden=16)
    net = mx.sym.Activation(net, name="relu1", act_type="relu")
    net = mx.sym.FullyConnected(net, name="fc2", num_hidden=5)
    return mx.sym.SoftmaxOutput(net, name="softmax")


def bn_net():
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, name="fc1", num_hidden=12)
    net = mx.sym.BatchNorm(net, name="bn1", fix_gamma=False)
    net = mx.sym.Activation(net, name="relu1", act_type="tanh")
    net = mx.sym.FullyConnected(net, name="fc2", num_hidden=5)
    return mx.sym.SoftmaxOutput(net, name="softmax")


CASES = {
    "mlp_sgd_momentum": (mlp, {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-3}),
    "mlp_sgd_clip": (mlp, {"learning_rate": 0.5, "clip_gradient": 0.01}),
    "bn_sgd": (bn_net, {"learning_rate": 0.05, "momentum": 0.5}),
}


def _replay(name, n_dev, fused, fixture=None, work_load_list=None):
    ref = np.load(os.path.join(HERE, (fixture or name) + ".npz"))
    make_sym, opt_params = CASES[name]
    ctx = [mx.cpu(i) for i in range(n_dev)]
    mod = mx.mod.Module(make_sym(), context=ctx, work_load_list=work_load_list)
    mod.bind(data_shapes=[("data", (8, 10))], label_shapes=[("softmax_label", (8,))])
    arg = {k.split(":", 1)[1]: mx.nd.array(ref[k]) for k in ref.files if k.startswith("init_arg:")}
    aux = {k.split(":", 1)[1]: mx.nd.array(ref[k]) for k in ref.files if k.startswith("init_aux:")}
    mod.init_params(arg_params=arg, aux_params=aux)
    mod.init_optimizer(optimizer="sgd", optimizer_params=opt_params)
    steps = sum(1 for k in ref.files if k.startswith("out"))
    for s in range(steps):
        batch = mx.io.DataBatch([mx.nd.array(ref[f"x{s}"])], [mx.nd.array(ref[f"y{s}"])])
        if fused:
            mod.forward_backward(batch)
            mod.update()
            out = mod.get_outputs()[0].asnumpy()
        else:
            mod.forward(batch, is_train=True)
            out = mod.get_outputs()[0].asnumpy()
            mod.backward()
            mod.update()
        np.testing.assert_allclose(
            out, ref[f"out{s}"], rtol=1e-4, atol=1e-5, err_msg=f"{name} step {s} outputs"
        )
        arg_now, aux_now = mod.get_params()
        for k, v in arg_now.items():
            np.testing.assert_allclose(
                v.asnumpy(),
                ref[f"arg{s}:{k}"],
                rtol=1e-4,
                atol=1e-5,
                err_msg=f"{name} step {s} param {k}",
            )
        for k, v in aux_now.items():
            np.testing.assert_allclose(
                v.asnumpy(),
                ref[f"aux{s}:{k}"],
                rtol=1e-4,
                atol=1e-5,
                err_msg=f"{name} step {s} aux {k}",
            )
    mod.set_params(*mod.get_params())  # what fit does at each epoch end
    mod.forward(mx.io.DataBatch([mx.nd.array(ref["x0"])]), is_train=False)
    np.testing.assert_allclose(
        mod.get_outputs()[0].asnumpy(),
        ref["eval_out"],
        rtol=1e-4,
        atol=1e-5,
        err_msg=f"{name} inference outputs",
    )


@pytest.mark.parametrize("fused", [False, True], ids=["imperative", "fused"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_single_device_matches_mxnet(name, fused):
    _replay(name, 1, fused)


def test_multi_device_matches_mxnet():
    _replay("mlp_sgd_momentum", 4, fused=True)


@pytest.mark.parametrize("fused", [False, True], ids=["imperative", "fused"])
def test_multi_device_batchnorm_matches_mxnet_four_contexts(fused):
    # MXNet run with [cpu(0)..cpu(3)]: each device normalises its own 2-sample slice
    _replay("bn_sgd", 4, fused=fused, fixture="bn_sgd_4dev")


def test_uneven_work_load_batchnorm_matches_mxnet():
    # MXNet with work_load_list [1, 3]: devices normalise 2 and 6 samples separately
    _replay("bn_sgd", 2, fused=True, fixture="bn_sgd_uneven", work_load_list=[1, 3])
