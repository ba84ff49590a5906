"""fit(steps_per_dispatch=N): blocks of N steps in one lax.scan equal N single steps
(parameters, aux states, what every batch_end_callback sees), the tail of an epoch, the
mesh, and the fallbacks with their reasons."""

import logging

import numpy as np
import pytest

import mxmod as mx

RS = np.random.RandomState(0)
X = RS.randn(160, 10).astype("f4")
Y = RS.randint(0, 5, 160).astype("f4")


def _net(dropout=True):
    with mx.name.NameManager():
        d = mx.sym.Variable("data")
        h = mx.sym.FullyConnected(d, num_hidden=16, name="fc1")
        h = mx.sym.BatchNorm(h, name="bn")
        h = mx.sym.Activation(h, act_type="relu")
        if dropout:
            h = mx.sym.Dropout(h, p=0.3)
        h = mx.sym.FullyConnected(h, num_hidden=5, name="fc2")
        return mx.sym.SoftmaxOutput(h, name="softmax")


def _fit(n, ctx=None, metric="acc", batch_size=16, num_epoch=2, net=None, **kw):
    mx.random.seed(3)
    it = mx.io.NDArrayIter(X, Y, batch_size=batch_size)
    mod = mx.mod.Module(net if net is not None else _net(), context=ctx or mx.cpu())
    seen = []

    def cb(p):
        seen.append((p.epoch, p.nbatch, p.eval_metric.get()))

    sched = mx.lr_scheduler.FactorScheduler(3, 0.9, base_lr=0.1)
    mod.fit(
        it,
        num_epoch=num_epoch,
        optimizer="sgd",
        eval_metric=metric,
        optimizer_params={"momentum": 0.9, "lr_scheduler": sched},
        initializer=mx.init.Xavier(),
        batch_end_callback=cb,
        steps_per_dispatch=n,
        **kw,
    )
    arg, aux = mod.get_params()
    return mod, seen, {k: v.asnumpy() for k, v in {**arg, **aux}.items()}


def _same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


@pytest.mark.parametrize("n", [2, 4])
def test_blocks_equal_single_steps(n):
    # 10 batches per epoch: with n=4 two blocks and a tail of two single steps
    _, seen1, p1 = _fit(1)
    mod, seen_n, p_n = _fit(n)
    assert seen_n == seen1  # every callback sees the metric of the batches so far
    assert [s[:2] for s in seen_n[:3]] == [(0, 0), (0, 1), (0, 2)]
    _same(p1, p_n)
    assert mod._optimizer.num_update == 20


def test_blocks_on_a_two_device_mesh():
    ctx = [mx.cpu(0), mx.cpu(1)]
    _, seen1, p1 = _fit(1, ctx)
    _, seen5, p5 = _fit(5, ctx)
    assert seen5 == seen1
    _same(p1, p5)


def test_outputs_after_a_block_are_the_last_batch():
    mod, _, _ = _fit(5, num_epoch=1, net=_net(dropout=False))
    out = mod.get_outputs()[0].asnumpy()
    mod2, _, _ = _fit(1, num_epoch=1, net=_net(dropout=False))
    np.testing.assert_array_equal(out, mod2.get_outputs()[0].asnumpy())
    assert out.shape == (16, 5)


def test_fallback_is_logged_and_exact(caplog):
    metric = mx.metric.CustomMetric(lambda label, pred: float((pred.argmax(1) == label).mean()))
    with caplog.at_level(logging.WARNING):
        _, seen_c, p_c = _fit(4, metric=metric)
    assert (
        "fit(steps_per_dispatch=4) runs single steps: the metric CustomMetric is "
        "updated on the host" in caplog.text
    )
    _, _, p1 = _fit(
        1,
        metric=mx.metric.CustomMetric(lambda label, pred: float((pred.argmax(1) == label).mean())),
    )
    _same(p1, p_c)
    assert len(seen_c) == 20


def test_steps_per_dispatch_must_be_a_positive_int():
    for bad in (0, -2, 1.5, "4"):
        with pytest.raises(ValueError, match=r"fit\(steps_per_dispatch=.*\): give a positive int"):
            _fit(bad, num_epoch=1)


def test_a_batch_of_another_shape_runs_as_a_single_step():
    class Iter(mx.io.NDArrayIter):  # the 4th batch has 8 rows instead of 16
        def next(self):
            b = super().next()
            if self.cursor == 48:
                b = mx.io.DataBatch([b.data[0][:8]], [b.label[0][:8]], pad=0)
            return b

    for n in (1, 4):
        mx.random.seed(3)
        mod = mx.mod.Module(_net(dropout=False))
        seen = []
        mod.fit(
            Iter(X[:96], Y[:96], batch_size=16),
            num_epoch=1,
            optimizer="sgd",
            initializer=mx.init.Xavier(),
            steps_per_dispatch=n,
            batch_end_callback=lambda p: seen.append(p.eval_metric.get()[1]),
        )
        arg = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
        if n == 1:
            ref, ref_seen = arg, seen
    assert seen == ref_seen and len(seen) == 6
    _same(ref, arg)


def _locals_seen(n, batch="data_batch", next_batch="next_data_batch"):
    seen = []

    def cb(p):
        loc = p.locals
        seen.append(
            (
                loc["nbatch"],
                loc["end_of_batch"],
                loc[batch].data[0].asnumpy().tolist(),
                None if loc[next_batch] is None else loc[next_batch].data[0].asnumpy()[0, 0],
                loc.get("eval_name_vals") if loc["end_of_batch"] else None,
                loc["self"] is mod
                and loc.get("batch", loc[batch]) is loc[batch]
                and loc.get("next_batch", loc[next_batch]) is loc[next_batch],
                loc["num_epoch"],
                loc["epoch"],
            )
        )

    mx.random.seed(3)
    mod = mx.mod.Module(_net(dropout=False))
    it = mx.io.NDArrayIter(X[:80], Y[:80], batch_size=16)
    mod.fit(
        it,
        num_epoch=2,
        optimizer="sgd",
        initializer=mx.init.Xavier(),
        batch_end_callback=cb,
        steps_per_dispatch=n,
    )
    return seen


def test_callbacks_see_mxnet_fit_locals():
    # MXNet 1.9.1's loop: end_of_batch (True at the epoch's last batch, with eval_name_vals),
    # data_batch, next_data_batch and fit's own arguments; 5 batches: a block of 3 + 2 singles
    ref = _locals_seen(1)
    got = _locals_seen(3)
    assert got == ref
    assert [s[1] for s in got] == [False] * 4 + [True] + [False] * 4 + [True]
    assert got[4][3] == got[4][2][0][0] and got[4][4][0][0] == "accuracy"
    assert all(s[5] and s[6] == 2 for s in got) and got[-1][7] == 1


def test_metric_without_callbacks_equals_single_steps():
    # without batch_end_callback a block's statistics are folded in one go
    metrics = []
    for n in (1, 4):
        mx.random.seed(3)
        mod = mx.mod.Module(_net())
        metric = mx.metric.create(["acc", "ce"])
        mod.fit(
            mx.io.NDArrayIter(X, Y, batch_size=16),
            num_epoch=1,
            optimizer="sgd",
            eval_metric=metric,
            initializer=mx.init.Xavier(),
            steps_per_dispatch=n,
        )
        metrics.append((metric.get(), metric.num_inst if hasattr(metric, "num_inst") else None))
    assert metrics[0] == metrics[1]


def test_per_device_replicas_fall_back_to_single_steps(caplog):
    # an uneven work_load_list runs one program per device: no block can span them
    def run(n):
        mx.random.seed(3)
        mod = mx.mod.Module(
            _net(dropout=False), context=[mx.cpu(0), mx.cpu(1)], work_load_list=[1, 3]
        )
        mod.fit(
            mx.io.NDArrayIter(X[:64], Y[:64], batch_size=16),
            num_epoch=1,
            optimizer="sgd",
            initializer=mx.init.Xavier(),
            steps_per_dispatch=n,
        )
        return {k: v.asnumpy() for k, v in mod.get_params()[0].items()}

    with caplog.at_level(logging.WARNING):
        p4 = run(4)
    assert "runs single steps: the devices are per-device replicas" in caplog.text
    _same(run(1), p4)


def test_a_callback_reading_gradients_sees_each_batch_s_own():
    """Once a callback reads grad_arrays, fit keeps every later batch's gradients (its
    one-step loop gives way to the Module's calls), as MXNet's buffers hold them."""
    seen = []

    def cb(p):
        group = p.locals["self"]._exec_group
        seen.append(group.grad_arrays[0][0].asnumpy().copy())

    mx.random.seed(3)
    mod = mx.mod.Module(_net(dropout=False))
    mod.fit(
        mx.io.NDArrayIter(X[:64], Y[:64], batch_size=16),
        num_epoch=1,
        optimizer="sgd",
        initializer=mx.init.Xavier(),
        batch_end_callback=cb,
    )
    assert len(seen) == 4
    for a, b in zip(seen[1:], seen[2:]):
        assert np.abs(a).sum() > 0 and not np.allclose(a, b)
