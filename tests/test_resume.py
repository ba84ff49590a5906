"""Resume is bit-exact (issue 15): kill-and-resume from a checkpoint equals an uninterrupted
run, with shuffling, BatchNorm, momentum/Adam and an LR schedule; shuffles match MXNet's
orders under np.random.seed; `import mxmod` leaves numpy's global RNG alone."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mxmod as mx

FIXTURES = Path(__file__).parent / "fixtures"
N, BATCH, EPOCHS, SPLIT = 40, 8, 4, 2


def _net():
    data = mx.sym.Variable("data")
    h = mx.sym.FullyConnected(data, num_hidden=16, name="fc1")
    h = mx.sym.BatchNorm(h, fix_gamma=False, name="bn1")
    h = mx.sym.Activation(h, act_type="relu", name="relu1")
    h = mx.sym.FullyConnected(h, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(h, name="softmax")


def _data():
    rng = np.random.RandomState(42)
    return rng.randn(N, 5).astype(np.float32), rng.randint(0, 3, N).astype(np.float32)


def _iter():
    np.random.seed(0)  # the user's seed: the iterator snapshots the global RNG
    x, y = _data()
    return mx.io.NDArrayIter(x, y, batch_size=BATCH, shuffle=True)


def _optimizer(kind):
    if kind == "sgd":
        sched = mx.lr_scheduler.FactorScheduler(step=3, factor=0.5)
        return "sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4, "lr_scheduler": sched}
    sched = mx.lr_scheduler.MultiFactorScheduler(step=[4, 9], factor=0.3)
    return "adam", {"learning_rate": 0.01, "lr_scheduler": sched}


def _init_params():
    mod = mx.mod.Module(_net(), context=mx.cpu())
    mod.bind(data_shapes=[("data", (BATCH, 5))], label_shapes=[("softmax_label", (BATCH,))])
    mx.random.seed(7)
    mod.init_params(mx.init.Xavier())
    arg, aux = mod.get_params()
    return {k: v.copy() for k, v in arg.items()}, {k: v.copy() for k, v in aux.items()}


def _final(mod):
    arg, aux = mod.get_params()
    return {k: v.asnumpy() for k, v in {**arg, **aux}.items()}


@pytest.mark.filterwarnings("ignore:Parameters already initialized")  # as in MXNet
@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_kill_and_resume_equals_uninterrupted(tmp_path, kind):
    arg0, aux0 = _init_params()
    name, params = _optimizer(kind)
    full = mx.mod.Module(_net(), context=mx.cpu())
    full.fit(
        _iter(),
        num_epoch=EPOCHS,
        optimizer=name,
        optimizer_params=_optimizer(kind)[1],
        arg_params=arg0,
        aux_params=aux0,
    )
    expected = _final(full)

    prefix = str(tmp_path / "run")
    first = mx.mod.Module(_net(), context=mx.cpu())
    first.fit(
        _iter(),
        num_epoch=SPLIT,
        optimizer=name,
        optimizer_params=params,
        arg_params=arg0,
        aux_params=aux0,
        epoch_end_callback=mx.callback.module_checkpoint(first, prefix, save_optimizer_states=True),
    )
    del first  # the "killed" process; a new one starts from the files alone
    resumed = mx.mod.Module.load(prefix, SPLIT, load_optimizer_states=True, context=mx.cpu())
    train = _iter()
    train.set_epoch(SPLIT)  # what fit(begin_epoch=SPLIT) asks of the iterator
    resumed.fit(
        train,
        begin_epoch=SPLIT,
        num_epoch=EPOCHS,
        optimizer=name,
        optimizer_params=_optimizer(kind)[1],
    )
    got = _final(resumed)
    assert sorted(got) == sorted(expected)
    for key in expected:
        np.testing.assert_array_equal(got[key], expected[key], err_msg=key)


def _batches(it):
    return [[b.data[0].asnumpy().ravel().astype(int).tolist(), int(b.pad)] for b in it]


@pytest.mark.parametrize(
    "case",
    json.loads((FIXTURES / "io" / "shuffle_orders.json").read_text())["cases"],
    ids=lambda c: c["handle"],
)
def test_shuffle_orders_match_mxnet(case):
    np.random.seed(case["seed"])
    n, bs, handle = case["n"], case["batch_size"], case["handle"]
    data = np.arange(n, dtype=np.float32).reshape(n, 1)
    it = mx.io.NDArrayIter(data, batch_size=bs, shuffle=True, last_batch_handle=handle)
    for epoch, want in enumerate(case["epochs"]):
        assert _batches(it) == want, epoch
        it.reset()
    second = mx.io.NDArrayIter(data, batch_size=bs, shuffle=True, last_batch_handle=handle)
    assert _batches(second) == case["second"]
    assert float(np.random.rand()) == case["rand_after"]  # global RNG advanced as in MXNet
    for epoch, want in enumerate(case["epochs"]):  # a resumed iterator replays each epoch
        np.random.seed(case["seed"])
        fresh = mx.io.NDArrayIter(data, batch_size=bs, shuffle=True, last_batch_handle=handle)
        fresh.set_epoch(epoch)
        assert fresh.epoch == epoch
        assert _batches(fresh) == want, epoch


@pytest.mark.parametrize("handle", ["pad", "discard", "roll_over"])
def test_set_epoch_replays_every_epoch_with_other_draws_in_between(handle):
    data = np.arange(11, dtype=np.float32).reshape(11, 1)
    it = mx.io.NDArrayIter(data, batch_size=4, shuffle=True, last_batch_handle=handle, seed=5)
    seen = []
    for _ in range(5):
        seen.append(_batches(it))
        np.random.rand(3)  # other code drawing from numpy does not change the order
        it.reset()
    for epoch in range(5):
        fresh = mx.io.NDArrayIter(
            data, batch_size=4, shuffle=True, last_batch_handle=handle, seed=5
        )
        fresh.set_epoch(epoch)
        assert _batches(fresh) == seen[epoch], epoch


def test_seeded_iterator_leaves_global_rng_alone():
    np.random.seed(1)
    want = np.random.rand()
    np.random.seed(1)
    mx.io.NDArrayIter(np.zeros((6, 2)), batch_size=2, shuffle=True, seed=3).reset()
    assert np.random.rand() == want


def test_set_epoch_and_seed_errors():
    it = mx.io.NDArrayIter(np.zeros((4, 2)), batch_size=2)
    with pytest.raises(ValueError, match=r"set_epoch needs an int >= 0, got -1"):
        it.set_epoch(-1)
    with pytest.raises(TypeError, match=r"seed must be an int or None, got 'x'"):
        mx.io.NDArrayIter(np.zeros((4, 2)), batch_size=2, seed="x")


def test_import_leaves_numpy_global_rng_untouched():
    code = "import numpy as np; np.random.seed(0); {imp} print(repr(np.random.rand()))"
    out = [
        subprocess.run(
            [sys.executable, "-c", code.format(imp=imp)], capture_output=True, text=True, check=True
        ).stdout
        for imp in ("", "import mxmod;")
    ]
    assert out[0] == out[1]


def test_fit_begin_epoch_tells_the_iterator():
    calls = []

    class Spy(mx.io.NDArrayIter):
        def set_epoch(self, epoch):
            calls.append(epoch)
            super().set_epoch(epoch)

    x, y = _data()
    mod = mx.mod.Module(_net(), context=mx.cpu())
    mod.fit(Spy(x, y, batch_size=BATCH, shuffle=True), begin_epoch=2, num_epoch=3)
    assert calls == [2]
