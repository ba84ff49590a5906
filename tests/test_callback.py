"""mx.callback and mx.model.BatchEndParam: MXNet 1.9.1 cadence and log formats."""

import logging
import types

import numpy as np
import pytest

import mxmod as mx
from mxmod import callback as cb_mod


def _acc_metric(value_hits=1, n=8):
    m = mx.metric.Accuracy()
    pred = np.r_[np.ones(value_hits), np.zeros(n - value_hits)]
    m.update([mx.nd.array(np.ones(n))], [mx.nd.array(pred)])
    return m


def _param(epoch, nbatch, metric):
    return mx.model.BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=metric, locals={})


@pytest.fixture
def clock(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(cb_mod, "time", types.SimpleNamespace(time=lambda: now[0]))
    return now


def _messages(caplog):
    return [r.getMessage() for r in caplog.records]


def test_batch_end_param():
    p = mx.model.BatchEndParam(1, 2, None, {"x": 1})
    assert type(p).__name__ == "BatchEndParams"
    assert p._fields == ("epoch", "nbatch", "eval_metric", "locals")
    assert (p.epoch, p.nbatch, p.locals["x"]) == (1, 2, 1)


def test_speedometer_auto_reset(caplog, clock):
    caplog.set_level(logging.INFO)
    metric = _acc_metric()
    speed = mx.callback.Speedometer(batch_size=16, frequent=2)
    speed(_param(0, 0, metric))  # first call only starts the clock
    assert _messages(caplog) == []
    clock[0] += 0.5
    speed(_param(0, 1, metric))  # not a multiple of frequent
    speed(_param(0, 2, metric))
    assert _messages(caplog) == [
        "Epoch[0] Batch [0-2]\tSpeed: 64.00 samples/sec\taccuracy=0.125000"
    ]
    assert metric.num_inst == 0 and metric.global_num_inst == 8  # reset_local only
    clock[0] += 1.0
    speed(_param(0, 4, metric))
    assert _messages(caplog)[-1] == "Epoch[0] Batch [2-4]\tSpeed: 32.00 samples/sec\taccuracy=nan"
    caplog.clear()
    speed(_param(1, 0, metric))  # new epoch: the clock restarts, nothing logged
    speed(_param(1, 2, metric))
    assert _messages(caplog) == ["Epoch[1] Batch [0-2]\tSpeed: inf samples/sec\taccuracy=nan"]


def test_speedometer_without_reset_and_without_metric(caplog, clock):
    caplog.set_level(logging.INFO)
    metric = mx.metric.create(["acc", "mse"])
    metric.update([mx.nd.array(np.ones(4))], [mx.nd.array(np.ones(4))])
    speed = mx.callback.Speedometer(batch_size=10, frequent=1, auto_reset=False)
    speed(_param(3, 0, metric))
    clock[0] += 2.0
    speed(_param(3, 1, metric))
    assert _messages(caplog) == [
        "Epoch[3] Batch [0-1]\tSpeed: 5.00 samples/sec\taccuracy=1.000000\tmse=0.000000"
    ]
    assert metric.get()[1][0] == 1.0  # not reset
    caplog.clear()
    plain = mx.callback.Speedometer(batch_size=10, frequent=1)
    plain(_param(2, 0, None))
    clock[0] += 1.0
    plain(_param(2, 1, None))
    assert _messages(caplog) == ["Iter[2] Batch [1]\tSpeed: 10.00 samples/sec"]


def test_speedometer_reads_device_metrics(caplog, clock):
    caplog.set_level(logging.INFO)
    metric = mx.metric.Accuracy()
    speed = mx.callback.Speedometer(batch_size=4, frequent=1)
    speed(_param(0, 0, metric))
    metric._update_device(
        [mx.nd.array(np.array([0.0, 1, 1, 1]))], [mx.nd.array(np.eye(4, 2)[[0, 1, 0, 0]])]
    )
    speed(_param(0, 1, metric))
    assert _messages(caplog)[-1].endswith("accuracy=0.500000")


def test_progress_bar(caplog):
    caplog.set_level(logging.INFO)
    bar = mx.callback.ProgressBar(total=3, length=6)
    bar(_param(0, 1, None))
    bar(_param(0, 3, None))
    assert _messages(caplog) == ["[==----] 34%\r", "[======] 100%\r"]
    with pytest.raises(ValueError, match="ProgressBar total must be a positive number"):
        mx.callback.ProgressBar(total=0)


def test_log_train_metric(caplog):
    caplog.set_level(logging.INFO)
    metric = _acc_metric(2)
    cb = mx.callback.log_train_metric(2, auto_reset=True)
    cb(_param(1, 1, metric))
    assert _messages(caplog) == []
    cb(_param(1, 2, metric))
    assert _messages(caplog) == ["Iter[1] Batch[2] Train-accuracy=0.250000"]
    assert metric.num_inst == 0 and metric.global_num_inst == 8
    mx.callback.log_train_metric(1)(_param(1, 3, None))  # no metric: nothing
    assert len(_messages(caplog)) == 1


def test_log_validation_metrics_callback(caplog):
    caplog.set_level(logging.INFO)
    mx.callback.LogValidationMetricsCallback()(_param(4, 0, mx.metric.create(["acc", "mse"])))
    mx.callback.LogValidationMetricsCallback()(_param(4, 0, None))
    assert _messages(caplog) == ["Epoch[4] Validation-accuracy=nan", "Epoch[4] Validation-mse=nan"]


def test_do_checkpoint_calls_model_save_checkpoint(monkeypatch):
    calls = []
    monkeypatch.setattr(mx.model, "save_checkpoint", lambda *a: calls.append(a), raising=False)
    cb = mx.callback.do_checkpoint("pre", period=2)
    for epoch in range(4):
        cb(epoch, "sym", {"w": 1}, {"a": 2})
    assert calls == [("pre", 2, "sym", {"w": 1}, {"a": 2}), ("pre", 4, "sym", {"w": 1}, {"a": 2})]
    calls.clear()
    mx.callback.do_checkpoint("p", period=0)(0, None, {}, {})  # period clamps to 1
    assert calls == [("p", 1, None, {}, {})]


def test_module_checkpoint():
    class FakeModule:
        def __init__(self):
            self.calls = []

        def save_checkpoint(self, *args):
            self.calls.append(args)

    mod = FakeModule()
    cb = mx.callback.module_checkpoint(mod, "pre", period=3, save_optimizer_states=True)
    for epoch in range(6):
        cb(epoch)
    assert mod.calls == [("pre", 3, True), ("pre", 6, True)]


def test_mxnets_reexports_of_model_helpers():
    # mxnet.callback and mxnet.model expose these names (scripts import them from there)
    assert mx.callback.save_checkpoint is mx.model.save_checkpoint
    assert mx.model.get_updater is mx.optimizer.get_updater
    assert issubclass(mx.model.FeedForward, mx.model.BASE_ESTIMATOR)
