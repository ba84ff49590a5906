"""Queued device statistics are fetched in stacked runs: the folded values equal the host
metric's, in order, whatever mix of layouts was queued."""

import jax
import numpy as np

import mxmod as mx
from mxmod.metric import _base


def _batches(n, seed=0):
    rng = np.random.RandomState(seed)
    return [
        (rng.randint(0, 3, 8).astype(np.float32), rng.rand(8, 3).astype(np.float32))
        for _ in range(n)
    ]


def test_stacked_fetch_folds_like_the_host(monkeypatch):
    calls = []
    stack = _base._stack_stats
    monkeypatch.setattr(_base, "_stack_stats", lambda run: calls.append(len(run)) or stack(run))
    batches = _batches(45)
    host = mx.metric.create("acc")
    dev = mx.metric.create("acc")
    stats = jax.jit(lambda lab, pred: dev._device_stats([lab], [pred]))
    for i, (lab, pred) in enumerate(batches):
        host.update([mx.nd.array(lab)], [mx.nd.array(pred)])
        s = stats(lab, pred)
        if i in (3, 20, 21):  # another layout in the queue: stacked (per-device) stats
            dev._accumulate_device(jax.tree_util.tree_map(lambda x: x[None], s), stacked=True)
        else:
            dev._accumulate_device(s)
    assert dev.get() == host.get()
    assert dev.num_inst == host.num_inst == 45 * 8
    assert calls == [16, 16]  # entries 4-19 and 22-37; the rest one by one


def test_fetch_keeps_order_for_order_sensitive_folds():
    seen = []

    class Last(mx.metric.Accuracy):
        def _fold_stats(self, stats):
            seen.append(float(stats[0]))
            super()._fold_stats(stats)

    m = Last()
    for i in range(40):
        m._accumulate_device((jax.numpy.float32(i), jax.numpy.int32(1)))
    m.get()
    assert seen == [float(i) for i in range(40)]
