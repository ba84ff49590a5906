"""Regressions found by running MXNet 1.x's own example programs on mxmod."""

import numpy as np

import mxmod as mx


def _softmax_mlp():
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=2, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax")


def _xy(n=1000):
    rng = np.random.RandomState(0)
    x = rng.rand(n, 5).astype(np.float32)
    return x, (x[:, 0] > 0.5).astype(np.float32)


def test_fit_validation_with_metric_list_counts_last_batch():
    # image-classification/common/fit.py passes eval_metric=['accuracy']; the last
    # (padded) validation batch was dropped from the composite's statistics
    x, y = _xy()
    val = mx.io.NDArrayIter(x, y, 64)
    mod = mx.mod.Module(_softmax_mlp())
    mod.fit(
        mx.io.NDArrayIter(x[:128], y[:128], 64),
        eval_data=val,
        eval_metric=["accuracy"],
        initializer=mx.init.One(),
        optimizer_params={"learning_rate": 0.0},
        num_epoch=1,
    )
    composite = mx.metric.create(["accuracy"])
    single = mx.metric.create("acc")
    assert mod.score(val, composite) == mod.score(val, single)
    assert composite.get_metric(0).num_inst == 1024  # 16 batches, pad counted as MXNet


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
