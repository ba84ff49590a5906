"""The Module core: compile counts, the deferred step, MXNet's executor-group surface
(shapes and per-device meaning), the private attributes subclasses use, bad input."""

import jax
import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError


def mlp(hidden=16, classes=4):
    x = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(x, num_hidden=hidden, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=classes, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def toy(n=80, d=10, classes=4, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.randn(n, d).astype("float32")
    w = rng.randn(d, classes).astype("float32")
    return x, (x @ w).argmax(1).astype("float32")


def compiled_count(sym):
    """Compilations of every program bound to ``sym`` (all Modules share them)."""
    progs = mx.executor.compiled_for(sym).programs.values()
    return {
        key[0]: sum(f._cache_size() for k, f in p._cache.items() if k[0] == key[0])
        for p in progs
        for key in p._cache
    }


def bound(sym=None, ctx=None, batch=8, **kw):
    mod = mx.mod.Module(sym if sym is not None else mlp(), context=ctx or mx.cpu(), **kw)
    mod.bind([("data", (batch, 10))], [("softmax_label", (batch,))])
    mod.init_params(mx.init.Uniform(0.1))
    return mod


def test_first_fit_batch_compiles_the_step_once_and_two_modules_share_it():
    sym = mlp()
    x, y = toy()
    it = mx.io.NDArrayIter(x, y, batch_size=8)
    mod = mx.mod.Module(sym)
    mod.fit(
        it,
        num_epoch=1,
        optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
        initializer=mx.init.Uniform(0.1),
    )
    assert compiled_count(sym) == {"step": 1}
    mod.fit(it, num_epoch=3, begin_epoch=1)
    mod2 = mx.mod.Module(sym)
    mod2.fit(
        it,
        num_epoch=2,
        optimizer_params={"learning_rate": 0.05, "momentum": 0.9},
        initializer=mx.init.Uniform(0.1),
    )
    assert compiled_count(sym) == {"step": 1}


_XLA_COMPILES = [0]


def _count_compiles(event, duration, **kw):
    if "backend_compile" in event:
        _XLA_COMPILES[0] += 1


jax.monitoring.register_event_duration_secs_listener(_count_compiles)


class _ReadyBatches(mx.io.DataIter):
    """Batches of host arrays made before fit: placing them compiles nothing, so every
    XLA program compiled during fit is the Module's."""

    def __init__(self, x, y, batch_size):
        super().__init__(batch_size)
        self.batches = [
            mx.io.DataBatch([x[i : i + batch_size]], [y[i : i + batch_size]])
            for i in range(0, len(x), batch_size)
        ]
        self.provide_data = [mx.io.DataDesc("data", (batch_size, x.shape[1]))]
        self.provide_label = [mx.io.DataDesc("softmax_label", (batch_size,))]
        self.cursor = 0

    def reset(self):
        self.cursor = 0

    def next(self):
        if self.cursor == len(self.batches):
            raise StopIteration
        self.cursor += 1
        return self.batches[self.cursor - 1]


@pytest.mark.parametrize("ctx", [[mx.cpu(0)], [mx.cpu(0), mx.cpu(1)]])
def test_first_fit_batch_compiles_one_xla_program_and_a_second_module_none(ctx):
    """Every XLA compilation counts (placement, the step, metric statistics): the first
    batch of fit compiles the step alone, and a second Module on the same symbol nothing."""
    sym = mlp(hidden=13, classes=3)  # shapes no other test compiles
    x, y = toy(n=66, d=10, classes=3, seed=5)
    seen = []

    def compiles_so_far(param):
        if param.nbatch == 0:
            seen.append(_XLA_COMPILES[0] - before[0])

    for _ in range(2):
        mod = mx.mod.Module(sym, context=ctx)
        it = _ReadyBatches(x, y, batch_size=22)
        mod.bind(it.provide_data, it.provide_label)
        mod.init_params(mx.init.Uniform(0.1))
        mod.init_optimizer(optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
        before = [_XLA_COMPILES[0]]
        mod.fit(it, num_epoch=2, batch_end_callback=compiles_so_far)
    assert seen == [1, 1, 0, 0]  # counted from each fit's start, at each epoch's first batch


def test_input_gradients_after_update():
    x, y = toy(8)
    mod = mx.mod.Module(mlp())
    mod.bind([("data", (8, 10))], [("softmax_label", (8,))], inputs_need_grad=True)
    mod.init_params(mx.init.Uniform(0.1))
    mod.init_optimizer(optimizer_params={"learning_rate": 0.1})
    batch = mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)])
    mod.forward(batch, is_train=True)
    mod.backward()
    want = mod.get_input_grads()[0].asnumpy()
    mod.forward(batch, is_train=True)
    mod.backward()
    mod.update()
    got = mod.get_input_grads()
    assert len(got) == 1 and got[0].shape == (8, 10)
    np.testing.assert_allclose(got[0].asnumpy(), want, rtol=1e-5, atol=1e-7)


def test_executor_group_surface_shapes_and_per_device_meaning():
    x, y = toy(8)
    ctx = [mx.cpu(0), mx.cpu(1)]
    mod = mx.mod.Module(mlp(), context=ctx)
    mod.bind([("data", (8, 10))], [("softmax_label", (8,))])
    mod.init_params(mx.init.Uniform(0.1))
    mod.init_optimizer(optimizer_params={"learning_rate": 0.1})
    g = mod._exec_group
    assert g.batch_size == 8 and g.slices == [slice(0, 4), slice(4, 8)]
    assert g.num_outputs == 1 and g.get_output_shapes() == [("softmax_output", (8, 4))]
    assert [len(p) for p in g.param_arrays] == [2] * 4
    assert g.param_arrays[0][1].shape == (16, 10)
    assert g.param_arrays[0][1].context == mx.cpu(1)
    batch = mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)])
    mod.forward_backward(batch)
    # per-device gradients: device k's own slice, as MXNet's grad_arrays
    single = mx.mod.Module(mlp())
    single.bind([("data", (4, 10))], [("softmax_label", (4,))])
    single.set_params(*mod.get_params())
    for k in range(2):
        single.forward_backward(
            mx.io.DataBatch(
                [mx.nd.array(x[4 * k : 4 * k + 4])], [mx.nd.array(y[4 * k : 4 * k + 4])]
            )
        )
        want = single._exec_group.grad_arrays[0][0].asnumpy()
        np.testing.assert_allclose(g.grad_arrays[0][k].asnumpy(), want, rtol=1e-5, atol=1e-7)
    assert g.execs[1].arg_dict["data"].shape == (4, 10)
    np.testing.assert_array_equal(g.execs[1].arg_dict["data"].asnumpy(), x[4:])
    assert g.execs[0].outputs[0].shape == (4, 4)
    assert g.data_arrays[0][1][0] == slice(4, 8) and g.data_arrays[0][1][1].shape == (4, 10)
    assert g.label_arrays[0][0][1].shape == (4,)
    assert (
        g.aux_arrays == [] and g.state_arrays == [] and g.input_grad_arrays is None
    )  # MXNet: None without inputs_need_grad
    # MXNet: each context's bound inputs by name (for memory sharing); no reshape yet
    assert [sorted(d) for d in g.shared_data_arrays] == [["data", "softmax_label"]] * 2
    assert g._default_execs is None
    assert g.decide_slices(g.data_shapes) == [0]  # MXNet: the batch axes; sets g.slices
    assert g.slices == [slice(0, 4), slice(4, 8)]
    assert g._sliced_shape(g.data_shapes, 1, [0]) == [("data", (4, 10))]
    assert g._total_exec_bytes > 0 and mod._total_exec_bytes > 0
    grads = g.execs[0].grad_dict  # as MXNet: every argument, None without a gradient
    assert {n for n, v in grads.items() if v is not None} == {
        "fc1_weight",
        "fc1_bias",
        "fc2_weight",
        "fc2_bias",
    }
    assert grads["data"] is None and grads["softmax_label"] is None
    # reading after update gives the updated values
    before = g.param_arrays[3][0].asnumpy()
    mod.update()
    after = g.param_arrays[3][0].asnumpy()
    assert not np.allclose(before, after)
    np.testing.assert_array_equal(after, mod.get_params()[0]["fc2_bias"].asnumpy())


def test_writing_through_param_arrays_changes_the_next_step():
    mod = bound(ctx=[mx.cpu(0), mx.cpu(1)])
    g = mod._exec_group
    for k in range(2):
        g.param_arrays[2][k][:] = 0.0
        g.param_arrays[3][k][:] = 5.0
    x, _ = toy(8)
    mod.forward(mx.io.DataBatch([mx.nd.array(x)], None), is_train=False)
    out = mod.get_outputs()[0].asnumpy()
    np.testing.assert_allclose(out, 0.25, rtol=1e-6)  # equal logits: uniform softmax
    g.param_arrays[3][0].copyto(g.param_arrays[3][1])
    np.testing.assert_array_equal(mod.get_params()[0]["fc2_bias"].asnumpy(), 5.0)


def test_private_attributes_subclasses_read():
    mod = bound(fixed_param_names=["fc1_bias"])
    mod.init_optimizer(optimizer_params={"learning_rate": 0.1})
    for name in (
        "_exec_group",
        "_arg_params",
        "_aux_params",
        "_params_dirty",
        "_optimizer",
        "_kvstore",
        "_update_on_kvstore",
        "_updater",
        "_preload_opt_states",
        "_group2ctxs",
        "_compression_params",
        "_work_load_list",
        "_context",
        "_symbol",
        "_data_shapes",
        "_label_shapes",
        "_param_names",
        "_fixed_param_names",
        "_aux_names",
        "_state_names",
        "_output_names",
        "_total_exec_bytes",
        "_grad_req",
    ):
        assert hasattr(mod, name), name
    assert mod._param_names == ["fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"]
    assert mod._fixed_param_names == ["fc1_bias"] and mod._output_names == ["softmax_output"]
    assert mod._exec_group.grad_arrays[1] == [None]
    assert isinstance(mod._updater, mx.optimizer.Updater) and mod._kvstore is None


def test_mxnet_module_level_helpers():
    from mxmod.module.base_module import _as_list, _check_input_names, _parse_data_desc

    assert mx.__version__ == "1.9.1" and mx.__version__ >= "1.3.0"
    assert mx.base._as_list(3) == [3] and mx.base._as_list((1, 2)) == [1, 2]
    assert mx.base._as_list(None) == [None]  # MXNet: None is an object like any other
    assert _as_list is mx.base._as_list  # one helper
    data, label = _parse_data_desc(
        ["data"], ["softmax_label"], [("data", (2, 3))], [("softmax_label", (2,))]
    )
    assert data[0].shape == (2, 3) and label[0].name == "softmax_label"
    with pytest.raises(ValueError, match="Did you mean"):
        _check_input_names(mlp(), ["dat"], "data", True)
    for helper in (
        "_create_kvstore",
        "_initialize_kvstore",
        "_update_params",
        "_update_params_on_kvstore",
        "BatchEndParam",
    ):
        assert callable(getattr(mx.model, helper))
    from mxmod.ndarray import utils

    assert utils.zeros((2,)).shape == (2,) and callable(utils.load) and callable(utils.save)


def test_update_params_fast_path_matches_the_fused_update():
    x, y = toy(16)
    batch = mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)])
    results = []
    for use_helper in (False, True):
        mod = mx.mod.Module(mlp(), context=[mx.cpu(0), mx.cpu(1)])
        mod.bind([("data", (16, 10))], [("softmax_label", (16,))])
        mod.init_params(mx.init.Constant(0.05))
        mod.init_optimizer(
            kvstore="local", optimizer_params={"learning_rate": 0.1, "momentum": 0.9}
        )
        for _ in range(3):
            mod.forward_backward(batch)
            if use_helper:
                g = mod._exec_group
                mx.model._update_params_on_kvstore(
                    g.param_arrays, g.grad_arrays, mod._kvstore, g.param_names
                )
            else:
                mod.update()
        results.append(mod.get_params()[0]["fc1_weight"].asnumpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6)


# ---------------------------------------------------------------- bad input
def test_bind_with_a_dict_of_shapes_names_the_fix():
    mod = mx.mod.Module(mlp())
    with pytest.raises(
        TypeError, match=r"not a dict; write data_shapes=\[\('data', \(10, 20\)\)\]"
    ):
        mod.bind(data_shapes={"data": (10, 20)})


def test_bind_with_a_flat_tuple_names_the_fix():
    mod = mx.mod.Module(mlp())
    with pytest.raises(TypeError, match=r"entry \('data', 10, 20\) is not \(name, shape\)"):
        mod.bind(data_shapes=[("data", 10, 20)])


def test_non_symbol_input_names_the_input():
    with pytest.raises(TypeError, match="input 'data' must be a Symbol"):
        mx.sym.FullyConnected(data=5, num_hidden=3)


def test_wrong_label_name_suggests_the_symbol_label():
    with pytest.warns(UserWarning, match=r"Did you mean label_names=\['softmax_label'\]"):
        mx.mod.Module(mlp(), label_names=["label"])


def test_update_before_any_backward_steps_on_zero_gradients_as_mxnet():
    # MXNet's update() reads the gradient buffers, zeros until a backward writes them:
    # only weight decay moves the weights, and the momentum states come into being
    for ctx in (mx.cpu(), [mx.cpu(0), mx.cpu(1)]):
        mod = bound(ctx=ctx)
        before = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
        mod.init_optimizer(optimizer_params={"learning_rate": 0.1, "momentum": 0.9, "wd": 0.1})
        x, y = toy(8)
        mod.forward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]), is_train=True)
        mod.update()
        after = mod.get_params()[0]
        for name, w in before.items():
            np.testing.assert_allclose(after[name].asnumpy(), w * (1 - 0.1 * 0.1), rtol=1e-6)


def test_sync_batchnorm_uses_whole_batch_statistics_across_devices():
    x = np.random.RandomState(3).randn(8, 3, 4, 4).astype("float32")
    data = mx.sym.Variable("data")
    net = mx.sym.contrib.SyncBatchNorm(data, name="bn", ndev=4, key="bn", fix_gamma=False)
    outs = []
    for ctx in ([mx.cpu(0)], [mx.cpu(i) for i in range(4)]):
        mod = mx.mod.Module(mx.sym.MakeLoss(net), context=ctx, label_names=None)
        mod.bind([("data", x.shape)])
        mod.init_params(mx.init.One())
        mod.forward(mx.io.DataBatch([mx.nd.array(x)]), is_train=True)
        outs.append(mod.get_outputs()[0].asnumpy())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5, atol=1e-5)


def test_optimizer_states_are_checked_against_the_bound_parameters(tmp_path):
    x, y = toy(8)
    batch = mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)])
    mod = bound()
    mod.init_optimizer(optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    mod.forward_backward(batch)
    mod.update()
    fname = str(tmp_path / "a.states")
    mod.save_optimizer_states(fname)
    other = bound(sym=mlp(hidden=12))
    other.init_optimizer(optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    with pytest.raises(
        MXNetError,
        match=r"state of 'fc1_bias' has shape \(16,\) but the bound "
        r"parameter needs \(12,\)",
    ):
        other.load_optimizer_states(fname)
    adam = bound()
    adam.init_optimizer(optimizer="adam")
    with pytest.raises(MXNetError, match="saved by optimizer 'sgd' but this module uses 'adam'"):
        adam.load_optimizer_states(fname)
    fixed = bound(fixed_param_names=["fc2_bias"])
    fixed.init_optimizer(optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    with pytest.raises(MXNetError, match=r"unexpected \['fc2_bias'\]"):
        fixed.load_optimizer_states(fname)


@pytest.mark.parametrize("n_dev", [1, 2])
def test_optimizer_needing_host_values_trains_through_mxnets_update_path(n_dev):
    """An update() that reads values on the host cannot be traced: the Module runs MXNet's
    kvstore/updater path on the executor-group views, with the same numbers."""
    import sys

    sys.path.insert(0, __file__.rsplit("/", 1)[0] + "/fixtures")
    import module_core_cases as cases

    traced = cases.register_custom_sgd(mx)

    @mx.optimizer.Optimizer.register
    class HostReadingSGD(mx.optimizer.create(traced).__class__):
        def update(self, index, weight, grad, state):
            if float(grad.abs().sum().asscalar()) < 0:  # needs a concrete value
                return
            super().update(index, weight, grad, state)

    x, y = toy(16)
    results = []
    for name in (traced, "hostreadingsgd"):
        mod = mx.mod.Module(mlp(), context=[mx.cpu(i) for i in range(n_dev)])
        mod.bind([("data", (16, 10))], [("softmax_label", (16,))])
        mod.init_params(mx.init.Constant(0.05))
        mod.init_optimizer(optimizer=name, optimizer_params={"learning_rate": 0.1})
        assert mod._exec_group.state.opt.fused == (name == traced)
        for _ in range(3):
            mod.forward_backward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]))
            mod.update()
        results.append(mod.get_params()[0]["fc1_weight"].asnumpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5, atol=1e-7)


def test_modules_sharing_weights_see_each_others_updates():
    x, y = toy(8)
    batch = mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)])
    a = bound()
    a.init_optimizer(optimizer_params={"learning_rate": 0.5})
    b = mx.mod.Module(mlp())
    b.bind([("data", (4, 10))], [("softmax_label", (4,))], shared_module=a)
    a.forward_backward(batch)
    a.update()  # pending until someone needs it
    b.forward(mx.io.DataBatch([mx.nd.array(x[:4])], None), is_train=False)
    after = a.get_params()[0]["fc2_bias"].asnumpy()
    assert np.abs(after).sum() > 0  # a's update ran before b's forward
    np.testing.assert_array_equal(b.get_params()[0]["fc2_bias"].asnumpy(), after)
    with pytest.raises(
        MXNetError,
        match=r"weight given \(16, 10\) but data \(4, 10\) needs "
        r"\(12, 10\)",
    ):
        mx.mod.Module(mlp(hidden=12)).bind(
            [("data", (4, 10))], [("softmax_label", (4,))], shared_module=a
        )


def test_sparse_namespaces_name_sparse_storage():
    assert mx.nd.sparse.csr_matrix((2, 3)).stype == "csr"  # NDArray level: test_sparse_nd.py
    assert mx.sym.sparse.dot is not None  # symbol level: tests/test_symbol_sparse.py


def _two_steps(mod, rebind_between):
    x, y = toy(16)
    batch = mx.io.DataBatch([mx.nd.array(x[:8])], [mx.nd.array(y[:8])])
    for i in range(2):
        if i and rebind_between:
            mod.bind([("data", (8, 10))], [("softmax_label", (8,))], force_rebind=True)
        mod.forward_backward(batch)
        mod.update()
    return mod.get_params()[0]


def test_force_rebind_keeps_the_optimizer_its_state_and_the_trained_weights():
    """MXNet keeps the optimizer over a re-bind (but drops updates not yet synced)."""
    got, want = [], []
    start = bound().get_params()
    for out, rebind in ((got, True), (want, False)):
        mod = bound()
        mod.set_params(*start)  # the same start for both
        mod.init_optimizer(optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
        box = mod._opt_box
        out.append(_two_steps(mod, rebind))
        assert mod._exec_group.state.opt is box and box.holder is mod._exec_group.state
    for n in want[0]:
        np.testing.assert_allclose(got[0][n].asnumpy(), want[0][n].asnumpy(), rtol=1e-6)


class AssigningModule(mx.mod.Module):
    """``init_optimizer`` as edited copies of MXNet's module.py write it: assigning the
    private attributes, then updating through ``mx.model._update_params``."""

    def init_optimizer(self, kvstore="local", optimizer="sgd", optimizer_params=(), **kw):
        self._optimizer = mx.optimizer.create(optimizer, **dict(optimizer_params))
        self._kvstore = None
        self._update_on_kvstore = False
        self._updater = mx.optimizer.get_updater(self._optimizer)
        self.optimizer_initialized = True

    def update(self):
        g = self._exec_group
        mx.model._update_params(g.param_arrays, g.grad_arrays, updater=self._updater, num_device=1)


def test_assigned_optimizer_attributes_live_in_the_one_box():
    mod = AssigningModule(mlp(), context=mx.cpu())
    mod.bind([("data", (8, 10))], [("softmax_label", (8,))])
    mod.init_params(mx.init.Uniform(0.1))
    start = {n: v.asnumpy() for n, v in mod.get_params()[0].items()}
    mod.init_optimizer(optimizer_params={"learning_rate": 0.5})
    box = mod._exec_group.state.opt
    assert box is mod._opt_box and box.updater is mod._updater and not box.fused
    assert box.optimizer is mod._optimizer and mod._update_on_kvstore is False
    x, y = toy(8)
    mod.forward_backward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]))
    grads = {n: g[0].asnumpy() for n, g in zip(mod._param_names, mod._exec_group.grad_arrays)}
    mod.update()
    for n, w in mod.get_params()[0].items():
        np.testing.assert_allclose(w.asnumpy(), start[n] - 0.5 * grads[n], rtol=1e-5, atol=1e-7)


def test_a_second_update_on_the_same_gradients_steps_again():
    """MXNet's update() twice after one backward applies the optimizer twice (the
    stochastic-depth example does so); mxmod used to drop the second while deferred."""
    start = bound().get_params()
    x, y = toy(8)
    batch = mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)])
    mods = []
    for twice in (False, True):
        mod = bound()
        mod.set_params(*start)
        mod.init_optimizer(optimizer_params={"learning_rate": 0.1})
        mod.forward_backward(batch)
        grads = {n: g[0].asnumpy() for n, g in zip(mod._param_names, mod._exec_group.grad_arrays)}
        mod.update()
        if twice:
            mod.update()
        mods.append((mod.get_params()[0], grads))
    (once, grads), (two, _) = mods
    for n, w in start[0].items():
        step = 0.1 / 8 * grads[n]  # rescale_grad = 1 / batch size
        np.testing.assert_allclose(once[n].asnumpy(), w.asnumpy() - step, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(two[n].asnumpy(), w.asnumpy() - 2 * step, rtol=1e-5, atol=1e-7)
