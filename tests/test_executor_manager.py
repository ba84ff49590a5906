"""mx.executor_manager (pre-Module data-parallel training) against MXNet 1.9.1's run of the
same loop (``tests/fixtures/gen_executor_manager_golden.py``)."""

import json
import logging
from pathlib import Path

import numpy as np
import pytest

import mxmod as mx
from mxmod.executor_manager import (
    DataParallelExecutorManager,
    _bind_exec,
    _check_arguments,
    _split_input_slice,
)

GOLDEN = json.loads((Path(__file__).parent / "fixtures/executor_manager/loop.json").read_text())
CTX = [mx.cpu(0), mx.cpu(1)]


def _net():
    fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax")


def _manager(net, it, **kw):
    args = net.list_arguments()
    params = [a for a in args if a not in ("data", "softmax_label")]
    return DataParallelExecutorManager(
        net, CTX, it, args, params, net.list_auxiliary_states(), **kw
    )


def test_split_input_slice_as_mxnet():
    for n, work, want in GOLDEN["splits"]:
        assert [[s.start, s.stop] for s in _split_input_slice(n, work)] == want
    with pytest.raises(ValueError, match="Too many slices"):
        _split_input_slice(2, [1, 1, 1])


def test_training_loop_matches_mxnet():
    x, y = np.array(GOLDEN["x"], np.float32), np.array(GOLDEN["y"], np.float32)
    it = mx.io.NDArrayIter(x, y, 10)
    mgr = _manager(_net(), it)
    assert [(s.start, s.stop) for s in mgr.slices] == [(0, 5), (5, 10)]
    init = {"fc_weight": mx.nd.array(GOLDEN["init_weight"]), "fc_bias": mx.nd.zeros((2,))}
    mgr.set_params(init, {})
    updater = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.5, rescale_grad=0.1))
    kv = mx.kv.create("local")
    for i, p in enumerate(mgr.param_arrays):
        kv.init(i, p[0])
    metric = mx.metric.Accuracy()
    for batch in it:
        mgr.load_data_batch(batch)
        mgr.forward(is_train=True)
        mgr.backward()
        for i, (ws, gs) in enumerate(zip(mgr.param_arrays, mgr.grad_arrays)):
            kv.push(i, gs)
            kv.pull(i, gs)
            for k, (w, g) in enumerate(zip(ws, gs)):
                updater(i * len(CTX) + k, g, w)
        mgr.update_metric(metric, batch.label)
    out = {"fc_weight": mx.nd.zeros((2, 6)), "fc_bias": mx.nd.zeros((2,))}
    mgr.copy_to(out, {})
    assert metric.get()[1] == pytest.approx(GOLDEN["accuracy"])
    np.testing.assert_allclose(out["fc_weight"].asnumpy(), GOLDEN["fc_weight"], atol=1e-5)
    np.testing.assert_allclose(out["fc_bias"].asnumpy(), GOLDEN["fc_bias"], atol=1e-5)
    # both devices hold the same weights
    w0, w1 = (a.asnumpy() for a in mgr.param_arrays[0])
    np.testing.assert_array_equal(w0, w1)


def test_buckets_share_parameters_and_data_buffers():
    def sym_gen(key):
        return _net()

    x = np.random.RandomState(1).rand(8, 6).astype(np.float32)
    it = mx.io.NDArrayIter(x, np.zeros(8, np.float32), 4)
    it.default_bucket_key = 6
    mgr = _manager(_net(), it, sym_gen=sym_gen)
    batch = next(iter(it))
    batch.bucket_key = 3  # as a bucketing iterator's batches carry it, with their shapes
    batch.provide_data, batch.provide_label = it.provide_data, it.provide_label
    mgr.load_data_batch(batch)
    other = mgr.curr_execgrp
    assert other is not mgr.execgrp
    assert (
        other.train_execs[0].arg_dict["fc_weight"]
        is mgr.execgrp.train_execs[0].arg_dict["fc_weight"]
    )
    np.testing.assert_array_equal(other.data_arrays[0][1][1].asnumpy(), x[2:4])
    with pytest.raises(NotImplementedError, match="bucketing"):
        mgr.install_monitor(mx.monitor.Monitor(1))


def test_bind_exec_shares_a_base_executors_parameters(caplog):
    net = _net()
    shapes, params = {"data": (4, 6), "softmax_label": (4,)}, ["fc_weight", "fc_bias"]
    base = _bind_exec(net, mx.cpu(), shapes, params, need_grad=True, shared_data_arrays={})
    shared = {"data": mx.nd.zeros((2, 6)), "softmax_label": mx.nd.zeros((2,))}
    with caplog.at_level(logging.WARNING):
        ex = _bind_exec(
            net, mx.cpu(), shapes, params, need_grad=True, base_exec=base, shared_data_arrays=shared
        )
    assert "Need to re-allocate" in caplog.text  # the shared buffer was too small
    assert shared["data"].shape == (4, 6)
    assert ex.arg_dict["fc_weight"] is base.arg_dict["fc_weight"]
    assert ex.grad_dict["fc_weight"] is base.grad_dict["fc_weight"]
    assert ex.grad_dict.get("data") is None
    # a smaller bucket next to a larger shared buffer gets its own array
    half = {"data": (2, 6), "softmax_label": (2,)}
    small = _bind_exec(net, mx.cpu(), half, params, base_exec=base, shared_data_arrays=shared)
    assert small.arg_dict["data"].shape == (2, 6) and shared["data"].shape == (4, 6)
    with pytest.raises(AssertionError, match="need_grad must be boolean or set"):
        _bind_exec(net, mx.cpu(), {"data": (4, 6)}, ["fc_weight"], need_grad="yes")


def test_duplicated_argument_names_and_bad_work_load_are_errors():
    a = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    b = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    with pytest.raises(ValueError, match='duplicated argument name "data"'):
        _check_arguments(a + b)
    it = mx.io.NDArrayIter(np.zeros((4, 6), np.float32), np.zeros(4, np.float32), 2)
    with pytest.raises(AssertionError, match="one number per context"):
        _manager(_net(), it, work_load_list=[1])


def test_set_params_lands_on_each_executors_device():
    it = mx.io.NDArrayIter(np.zeros((4, 6), np.float32), np.zeros(4, np.float32), 4)
    mgr = _manager(_net(), it)
    mgr.set_params({"fc_weight": mx.nd.ones((2, 6)), "fc_bias": mx.nd.zeros((2,))}, {})
    for arrays in mgr.param_arrays:
        devices = [next(iter(a._data.devices())) for a in arrays]
        assert devices == [c.jax_device for c in CTX]


def test_reachable_as_mx_executor_manager():
    assert mx.executor_manager.DataParallelExecutorManager is DataParallelExecutorManager
