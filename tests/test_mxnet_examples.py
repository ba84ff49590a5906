"""Regressions found by running MXNet 1.x's own example programs on mxmod."""

import numpy as np
import pytest

import mxmod as mx


def _softmax_mlp():
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=2, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax")


def _xy(n):
    rng = np.random.RandomState(0)
    x = rng.rand(n, 5).astype(np.float32)
    return x, (x[:, 0] > 0.5).astype(np.float32)


def test_score_with_metric_list_counts_last_batch():
    # image-classification/common/fit.py passes eval_metric=['accuracy']; fit's validation
    # (Module.score) dropped the last, padded batch from the composite's statistics
    x, y = _xy(200)
    val = mx.io.NDArrayIter(x, y, 64)
    mod = mx.mod.Module(_softmax_mlp())
    mod.bind(val.provide_data, val.provide_label, for_training=False)
    mod.init_params(mx.init.One())
    composite = mx.metric.create(["accuracy"])
    single = mx.metric.create("acc")
    assert mod.score(val, composite) == mod.score(val, single)
    assert composite.get_metric(0).num_inst == 256  # 4 batches, pad counted as MXNet


def test_composite_child_read_alone_sees_last_batch():
    x, y = _xy(128)
    it = mx.io.NDArrayIter(x, y, 64)
    mod = mx.mod.Module(_softmax_mlp())
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(mx.init.One())
    composite = mx.metric.create(["acc", "ce"])
    for batch in it:
        mod.forward(batch, is_train=False)
        mod.update_metric(composite, batch.label)
    assert composite.get_metric(0).num_inst == 128
    assert composite.get_metric(1).num_inst == 128
    composite.reset()
    assert composite.get_metric(0).num_inst == 0


def test_native_iter_log_leaves_root_logger_unconfigured(tmp_path):
    # module/mnist_mlp.py builds MNISTIter(silent=False) before logging.basicConfig(DEBUG):
    # a root logging.info() there configured root at WARNING and hid every fit() log
    import struct
    import subprocess
    import sys

    img, lbl = tmp_path / "img", tmp_path / "lbl"
    img.write_bytes(struct.pack(">IIII", 2051, 4, 28, 28) + bytes(4 * 784))
    lbl.write_bytes(struct.pack(">II", 2049, 4) + bytes(4))
    code = (
        "import logging, mxmod as mx\n"
        f"mx.io.MNISTIter(image={str(img)!r}, label={str(lbl)!r}, batch_size=2, silent=False)\n"
        "print(len(logging.root.handlers))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0"


@pytest.mark.slow
def test_debug_logging_program_is_not_flooded_by_jax():
    # every MXNet example calls logging.basicConfig(level=logging.DEBUG); JAX's compile
    # debug records made toy_nce.py print 351 lines where MXNet prints 19
    import subprocess
    import sys

    code = (
        "import logging, numpy as np, mxmod as mx\n"
        "logging.basicConfig(level=logging.DEBUG)\n"
        "net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=2),"
        " name='softmax')\n"
        "it = mx.io.NDArrayIter(np.ones((8, 3), 'f'), np.zeros(8, 'f'), 4)\n"
        "mx.mod.Module(net).fit(it, num_epoch=1)\n"
        "logging.getLogger('jax').debug('kept out')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = out.stderr.splitlines()
    assert any("Epoch[0] Time cost" in line for line in lines)  # the program's own log
    assert not [line for line in lines if ":jax" in line], lines[:5]


def test_profiled_run_writes_its_trace_at_exit(tmp_path):
    # example/profiler/profiler_executor.py sets run/stop and never calls dump():
    # MXNet writes the file when the process ends
    import json
    import subprocess
    import sys

    traced, idle = tmp_path / "traced.json", tmp_path / "idle.json"
    code = (
        "import mxmod as mx\n"
        f"mx.profiler.set_config(profile_symbolic=True, filename={str(traced)!r})\n"
        "mx.profiler.set_state('run')\n"
        "(mx.nd.ones((3, 3)) * 2).wait_to_read()\n"
        "mx.profiler.set_state('stop')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    assert "traceEvents" in json.loads(traced.read_text())
    never_run = f"import mxmod as mx\nmx.profiler.set_config(filename={str(idle)!r})\n"
    subprocess.run([sys.executable, "-c", never_run], check=True, capture_output=True)
    assert not idle.exists()  # as MXNet: no profiling, no file


@pytest.mark.filterwarnings("ignore:mxnet.model.FeedForward has been deprecated")
def test_feedforward_batch_end_callback_counts_batches_from_one():
    # numpy-ops/custom_softmax.py: Speedometer(100, 10) over 20 batches logged only
    # [0-10] (MXNet's FeedForward also logs [10-20]); MXNet 1.9.1 gives nbatch 1..4 here
    seen = []
    ff = mx.model.FeedForward(_softmax_mlp(), num_epoch=2, learning_rate=0.1)
    ff.fit(
        X=mx.io.NDArrayIter(np.ones((8, 5), "f"), np.zeros(8, "f"), 2),
        batch_end_callback=[lambda p: seen.append((p.epoch, p.nbatch))],
    )
    assert seen == [(e, n) for e in range(2) for n in range(1, 5)]


class _NumpySoftmax(mx.operator.NumpyOp):
    # numpy-ops/numpy_softmax.py's operator (np.int there is int now)
    def __init__(self):
        super().__init__(False)

    def list_arguments(self):
        return ["data", "label"]

    def list_outputs(self):
        return ["output"]

    def infer_shape(self, in_shape):
        return [in_shape[0], (in_shape[0][0],)], [in_shape[0]]

    def forward(self, in_data, out_data):
        x, y = in_data[0], out_data[0]
        y[:] = np.exp(x - x.max(axis=1, keepdims=True))
        y /= y.sum(axis=1, keepdims=True)

    def backward(self, out_grad, in_data, out_data, in_grad):
        label = in_data[1].astype(int)
        in_grad[0][:] = out_data[0]
        in_grad[0][np.arange(label.size), label] -= 1.0


class _NDArrayTriple(mx.operator.NDArrayOp):
    def forward(self, in_data, out_data):
        out_data[0][:] = in_data[0] * 3

    def backward(self, out_grad, in_data, out_data, in_grad):
        in_grad[0][:] = out_grad[0] * 3


def test_numpy_op_trains_in_a_module_as_mxnet():
    # numpy-ops/numpy_softmax.py: mx.operator.NumpyOp raised NotImplementedError;
    # the values below are MXNet 1.9.1's for this input
    x = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 1.0]], "f")
    sym = _NumpySoftmax()(data=mx.sym.var("data"), name="softmax")
    assert sym.list_arguments() == ["data", "softmax_label"]
    mod = mx.mod.Module(sym)
    mod.bind([("data", (2, 3))], [("softmax_label", (2,))], inputs_need_grad=True)
    mod.init_params()
    mod.forward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array([2.0, 0.0])]), is_train=True)
    mod.backward()
    prob = [[0.09003, 0.24473, 0.66524], [0.21194, 0.21194, 0.57612]]
    grad = [[0.09003, 0.24473, -0.33476], [-0.78806, 0.21194, 0.57612]]
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), prob, atol=1e-5)
    np.testing.assert_allclose(mod.get_input_grads()[0].asnumpy(), grad, atol=1e-5)


def test_ndarray_op_and_executor_backward_with_empty_out_grads():
    sym = _NDArrayTriple()(data=mx.sym.var("data"), name="t")
    assert sym.list_outputs() == ["t_output"]
    ex = sym.simple_bind(mx.cpu(), data=(2, 2))
    ex.arg_dict["data"][:] = np.array([[1.0, 2.0], [0.0, -1.0]])
    assert ex.forward(is_train=True)[0].asnumpy().tolist() == [[3, 6], [0, -3]]
    ex.backward([mx.nd.ones((2, 2))])
    assert ex.grad_dict["data"].asnumpy().tolist() == [[3, 3], [3, 3]]
    # MXNet reads backward([]) as backward() (head gradients of loss outputs)
    loss = mx.sym.SoftmaxOutput(mx.sym.var("data"), name="sm").simple_bind(mx.cpu(), data=(1, 2))
    loss.arg_dict["data"][:] = np.array([[0.0, 0.0]])
    loss.forward(is_train=True)
    loss.backward([])
    assert loss.grad_dict["data"].asnumpy().tolist() == [[-0.5, 0.5]]


def test_symbolic_random_normal_in_a_vae_graph():
    # autoencoder/variational_autoencoder/VAE.py: mx.sym.random_normal was missing
    import json

    mu = mx.sym.var("mu")
    z = mu + mx.sym.random_normal(loc=1, scale=2, shape=(4000, 3))
    u = mx.sym.random_uniform(low=-1, high=3, shape=(4000, 3))
    loss = mx.sym.MakeLoss(sum(pow(z, 2) + u), name="loss")  # builtins, as VAE.py
    ops = [n["op"] for n in json.loads(loss.tojson())["nodes"]]
    assert {"_random_normal", "_random_uniform"} <= set(ops)  # MXNet's JSON op names
    ex = mx.sym.Group([z, u]).simple_bind(mx.cpu(), mu=(4000, 3))
    z1, u1 = (o.asnumpy() for o in ex.forward())
    assert abs(z1.mean() - 1) < 0.1 and abs(z1.std() - 2) < 0.1
    assert u1.min() >= -1 and u1.max() <= 3 and abs(u1.mean() - 1) < 0.1
    assert not np.allclose(ex.forward()[0].asnumpy(), z1)  # a fresh draw every forward


def test_speedometer_times_the_work_not_the_dispatch(caplog):
    # fit.py's Speedometer showed ~95000 samples/sec for a ResNet whose steps were still
    # running: the metric read (which waits for them) came after the clock was read
    import logging
    import time

    from mxmod.model import BatchEndParam

    class SlowToRead:
        def get_name_value(self):
            time.sleep(0.2)  # as a metric fetch waiting for queued steps
            return [("accuracy", 1.0)]

        def reset_local(self):
            pass

    meter = mx.callback.Speedometer(batch_size=1, frequent=1)
    with caplog.at_level(logging.INFO):
        for nbatch in range(2):
            meter(BatchEndParam(epoch=0, nbatch=nbatch, eval_metric=SlowToRead(), locals={}))
    speed = float(caplog.records[-1].getMessage().split("Speed: ")[1].split()[0])
    assert speed <= 5.01  # one sample per >= 0.2 s (before: the dispatch speed, ~1e5)


def test_sym_random_namespace():
    s = mx.sym.random.normal(loc=2, scale=0.5, shape=(2000,)) + mx.sym.random.uniform(shape=(2000,))
    assert s.infer_shape()[1] == [(2000,)]
    assert abs(s.simple_bind(mx.cpu()).forward()[0].asnumpy().mean() - 2.5) < 0.1
    # Symbol parameters: a _sample_normal node, param.shape + shape samples (as MXNet)
    per_row = mx.sym.random.normal(loc=mx.sym.var("m"), scale=mx.sym.var("s"), shape=(3,))
    assert per_row.infer_shape(m=(2,), s=(2,))[1] == [(2, 3)]


def test_module_monitor_reports_in_mxnet_order():
    # image-classification fit.py --monitor: MXNet lists the node outputs as they ran
    # (backward last node first), then the arguments in list_arguments() order
    mod = mx.mod.Module(_softmax_mlp())
    mod.bind([("data", (4, 5))], [("softmax_label", (4,))])
    mod.init_params()
    mod.init_optimizer()
    mon = mx.mon.Monitor(1, pattern=".*")
    mod.install_monitor(mon)
    mon.tic()
    mod.forward_backward(mx.io.DataBatch([mx.nd.ones((4, 5))], [mx.nd.zeros((4,))]))
    names = [name for _, name, _ in mon.toc()]
    assert names == [
        "fc_output",
        "softmax_output",
        "softmax_backward_output0",
        "softmax_backward_output1",
        "fc_backward_output0",
        "fc_backward_output1",
        "fc_backward_output2",
        "data",
        "fc_weight",
        "fc_bias",
        "softmax_label",
    ]
