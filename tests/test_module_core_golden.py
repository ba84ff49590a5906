"""Module internals against MXNet 1.9.1 (goldens from fixtures/gen_module_core_goldens.py):
a user Module subclass that clips per-device gradients and updates through
``mx.model._update_params``, an optimizer written the MXNet way, and BatchNorm's
moving-statistics rules (frozen prefix, forward without backward)."""

import os
import sys

import numpy as np
import pytest

import mxmod as mx

HERE = os.path.join(os.path.dirname(__file__), "fixtures")
sys.path.insert(0, HERE)
import module_core_cases as cases  # noqa: E402

GOLD = os.path.join(HERE, "module_core")


def golden(name):
    return dict(np.load(os.path.join(GOLD, name + ".npz")))


def check_params(mod, gold, rtol=1e-4, atol=1e-5):
    arg, aux = mod.get_params()
    for k, v in arg.items():
        np.testing.assert_allclose(v.asnumpy(), gold[f"arg:{k}"], rtol=rtol, atol=atol, err_msg=k)
    for k, v in aux.items():
        np.testing.assert_allclose(v.asnumpy(), gold[f"aux:{k}"], rtol=rtol, atol=atol, err_msg=k)


def shapes_of(sym, data_shape):
    arg, _, aux = sym.infer_shape(data=data_shape, softmax_label=(cases.BATCH,))
    out = {n: s for n, s in zip(sym.list_arguments(), arg) if n not in ("data", "softmax_label")}
    out.update(zip(sym.list_auxiliary_states(), aux))
    return out


def fit(sym, module, x, y, optimizer, opt_params, epochs=2):
    it = mx.io.NDArrayIter(x, y, batch_size=cases.BATCH)
    params = cases.init_params(shapes_of(sym, (cases.BATCH,) + x.shape[1:]))
    aux_names = set(sym.list_auxiliary_states())
    arg = {k: mx.nd.array(v) for k, v in params.items() if k not in aux_names}
    aux = {k: mx.nd.array(v) for k, v in params.items() if k in aux_names}
    module.fit(
        it,
        num_epoch=epochs,
        optimizer=optimizer,
        optimizer_params=opt_params,
        arg_params=arg,
        aux_params=aux,
        eval_metric="acc",
    )
    return module, params


@pytest.mark.parametrize("n_dev", [1, 2])
def test_subclass_clipping_per_device_grads_through_update_params(n_dev):
    x, y = cases.data()
    ctx = [mx.cpu(i) for i in range(n_dev)]
    cls = cases.clipping_module_class(mx)
    mod, _ = fit(
        cases.mlp(mx),
        cls(cases.mlp(mx), context=ctx),
        x,
        y,
        "sgd",
        {"learning_rate": 0.5, "momentum": 0.9, "wd": 1e-3},
    )
    gold = golden(f"clip_{n_dev}dev")
    # per-device gradient norms: each device's own slice, as MXNet's grad_arrays
    np.testing.assert_allclose(mod.norms, gold["norms"], rtol=1e-4)
    check_params(mod, gold)
    assert mod.bound_batch == cases.BATCH and mod.devices_seen == n_dev
    np.testing.assert_allclose(mod.first_param, gold["arg:fc1_weight"], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("n_dev", [1, 2])
def test_subclass_per_device_updates_with_a_host_optimizer(n_dev, monkeypatch):
    """MXNET_UPDATE_ON_KVSTORE=0: the kvstore sums, then the (uncompilable) optimizer
    updates each device's copy through the per-index Updater."""
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", "0")
    x, y = cases.data()
    name = cases.register_host_sgd(mx)
    ctx = [mx.cpu(i) for i in range(n_dev)]
    cls = cases.clipping_module_class(mx)
    mod = cls(cases.mlp(mx), context=ctx)
    mod, _ = fit(cases.mlp(mx), mod, x, y, name, {"learning_rate": 0.3, "wd": 1e-3})
    assert not mod._exec_group.state.opt.fused
    gold = golden(f"clip_host_{n_dev}dev")
    np.testing.assert_allclose(mod.norms, gold["norms"], rtol=1e-4)
    check_params(mod, gold)


@pytest.mark.parametrize("n_dev", [1, 2])
def test_mxnet_style_optimizer_trains_a_module_through_fit(n_dev):
    x, y = cases.data()
    name = cases.register_custom_sgd(mx)
    ctx = [mx.cpu(i) for i in range(n_dev)]
    mod, _ = fit(
        cases.mlp(mx),
        mx.mod.Module(cases.mlp(mx), context=ctx),
        x,
        y,
        name,
        {"learning_rate": 0.3, "momentum": 0.9, "wd": 1e-3},
    )
    check_params(mod, golden(f"customopt_{n_dev}dev"))


@pytest.mark.parametrize("n_dev", [1, 2])
def test_frozen_prefix_keeps_its_batchnorm_statistics(n_dev):
    bx, by = cases.bn_data()
    ctx = [mx.cpu(i) for i in range(n_dev)]
    mod = mx.mod.Module(cases.bn_net(mx), context=ctx, fixed_param_names=cases.FROZEN)
    mod, init = fit(cases.bn_net(mx), mod, bx, by, "sgd", {"learning_rate": 0.1}, epochs=1)
    gold = golden(f"bn_frozen_{n_dev}dev")
    check_params(mod, gold)
    aux = mod.get_params()[1]
    np.testing.assert_array_equal(aux["bn1_moving_mean"].asnumpy(), init["bn1_moving_mean"])
    assert not np.allclose(aux["bn2_moving_mean"].asnumpy(), init["bn2_moving_mean"])


def test_training_forward_alone_leaves_batchnorm_statistics():
    sym = cases.bn_net(mx)
    bx, by = cases.bn_data()
    mod = mx.mod.Module(sym, context=mx.cpu())
    mod.bind([("data", (cases.BATCH,) + bx.shape[1:])], [("softmax_label", (cases.BATCH,))])
    params = cases.init_params(shapes_of(sym, (cases.BATCH,) + bx.shape[1:]))
    aux_names = set(sym.list_auxiliary_states())
    mod.init_params(
        arg_params={k: mx.nd.array(v) for k, v in params.items() if k not in aux_names},
        aux_params={k: mx.nd.array(v) for k, v in params.items() if k in aux_names},
    )
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    batch = mx.io.DataBatch([mx.nd.array(bx[: cases.BATCH])], [mx.nd.array(by[: cases.BATCH])])
    gold = golden("bn_forward_only")
    mod.forward(batch, is_train=True)
    mod.get_outputs()[0].asnumpy()
    check_params(mod, {k[4:]: v for k, v in gold.items() if k.startswith("fwd/")})
    mod.backward()
    mod.update()
    check_params(mod, {k[5:]: v for k, v in gold.items() if k.startswith("step/")})
