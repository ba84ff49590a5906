"""Module behaviour through the public API, as MXNet users call it (issue #3)."""

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError


def mlp(hidden=16, classes=4):
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, name="fc1", num_hidden=hidden)
    net = mx.sym.Activation(net, name="relu1", act_type="relu")
    net = mx.sym.FullyConnected(net, name="fc2", num_hidden=classes)
    return mx.sym.SoftmaxOutput(net, name="softmax")


def toy(n=200, d=10, classes=4, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.randn(n, d).astype("float32")
    w = rng.randn(d, classes).astype("float32")
    return x, (x @ w).argmax(1).astype("float32")


def bound(ctx=None, batch=20, **kw):
    mod = mx.mod.Module(mlp(), context=ctx or mx.cpu(), **kw)
    mod.bind(data_shapes=[("data", (batch, 10))], label_shapes=[("softmax_label", (batch,))])
    mod.init_params(initializer=mx.init.Uniform(0.1))
    return mod


@pytest.mark.parametrize("n_dev", [1, 4])
def test_seed_tutorial_end_to_end(n_dev, tmp_path):
    mx.random.seed(1)
    np.random.seed(0)  # NDArrayIter's shuffle draws from numpy's global RNG (as MXNet's does)
    x, y = toy()
    train = mx.io.NDArrayIter(x[:160], y[:160], batch_size=20, shuffle=True)
    val = mx.io.NDArrayIter(x[160:], y[160:], batch_size=20)
    ctx = [mx.cpu(i) for i in range(n_dev)]
    mod = mx.mod.Module(mlp(), context=ctx, data_names=["data"], label_names=["softmax_label"])
    mod.bind(data_shapes=train.provide_data, label_shapes=train.provide_label)
    mod.init_params(initializer=mx.init.Uniform(scale=0.1))
    mod.init_optimizer(optimizer="sgd", optimizer_params=(("learning_rate", 0.5),))
    metric = mx.metric.create("acc")
    accs = []
    for _ in range(5):
        train.reset()
        metric.reset()
        for batch in train:
            mod.forward(batch, is_train=True)
            mod.update_metric(metric, batch.label)
            mod.backward()
            mod.update()
        accs.append(metric.get()[1])
    assert accs[-1] > accs[0] and accs[-1] > 0.6
    mod.fit(
        train,
        eval_data=val,
        optimizer="sgd",
        optimizer_params={"learning_rate": 0.1},
        eval_metric="acc",
        num_epoch=8,
        batch_end_callback=mx.callback.Speedometer(20, 4),
    )
    out = mod.predict(val)
    assert out.shape == (40, 4)
    np.testing.assert_allclose(out.asnumpy().sum(1), 1, rtol=1e-5)
    score = dict(mod.score(val, ["mse", "acc"]))
    assert set(score) == {"mse", "accuracy"} and score["accuracy"] > 0.8


def test_predict_trims_padding_and_score_counts_real_rows():
    mod = bound(batch=2)
    x = np.random.RandomState(0).randn(5, 10).astype("float32")
    it = mx.io.NDArrayIter(x, np.zeros(5, "float32"), batch_size=2)
    merged = mod.predict(it)
    assert merged.shape == (5, 4)
    parts = mod.predict(it, merge_batches=False)
    assert [p[0].shape for p in parts] == [(2, 4), (2, 4), (1, 4)]
    np.testing.assert_allclose(np.concatenate([p[0].asnumpy() for p in parts]), merged.asnumpy())
    as_list = mod.predict(it, always_output_list=True)
    assert isinstance(as_list, list) and as_list[0].shape == (5, 4)
    direct = mod.predict(x[:2])
    np.testing.assert_allclose(direct.asnumpy(), merged.asnumpy()[:2], rtol=1e-6)
    outs = [o[0].shape for o, _, _ in mod.iter_predict(it)]
    assert outs == [(2, 4), (2, 4), (1, 4)]


def test_fixed_params_are_not_updated():
    x, y = toy(40)
    mod = mx.mod.Module(mlp(), fixed_param_names=["fc1_weight"])
    it = mx.io.NDArrayIter(x, y, batch_size=20)
    mod.fit(
        it, num_epoch=2, optimizer_params={"learning_rate": 0.5}, initializer=mx.init.Uniform(0.1)
    )
    before = None
    mod2 = mx.mod.Module(mlp(), fixed_param_names=["fc1_weight"])
    mod2.bind(it.provide_data, it.provide_label)
    mod2.init_params(mx.init.Uniform(0.1))
    before = {k: v.asnumpy().copy() for k, v in mod2.get_params()[0].items()}
    mod2.init_optimizer(optimizer_params={"learning_rate": 0.5})
    for b in it:
        mod2.forward_backward(b)
        mod2.update()
    after = mod2.get_params()[0]
    np.testing.assert_array_equal(after["fc1_weight"].asnumpy(), before["fc1_weight"])
    assert not np.allclose(after["fc2_weight"].asnumpy(), before["fc2_weight"])


@pytest.mark.parametrize(
    "ctx,work_load",
    [
        ([mx.cpu(i) for i in range(8)], None),  # one program over a mesh of 8 devices
        ([mx.cpu(0), mx.cpu(1)], [1, 3]),  # uneven split: per-device replicas
        ([mx.cpu(0), mx.cpu(0), mx.cpu(1)], None),  # shared device: per-device replicas
    ],
    ids=["mesh8", "uneven", "shared"],
)
def test_multi_device_equals_single_device(ctx, work_load):
    x, y = toy(80)
    results = []
    for c, wl in (([mx.cpu()], None), (ctx, work_load)):
        mod = mx.mod.Module(mlp(), context=c, work_load_list=wl)
        mod.bind([("data", (40, 10))], [("softmax_label", (40,))])
        mod.init_params(mx.init.Zero())
        rng = np.random.RandomState(3)
        arg = {
            k: mx.nd.array(rng.uniform(-0.3, 0.3, v.shape).astype("float32"))
            for k, v in sorted(mod.get_params()[0].items())
        }
        mod.set_params(arg, {})
        mod.init_optimizer(optimizer_params={"learning_rate": 0.2, "momentum": 0.9})
        for i in range(2):
            b = mx.io.DataBatch(
                [mx.nd.array(x[i * 40 : (i + 1) * 40])], [mx.nd.array(y[i * 40 : (i + 1) * 40])]
            )
            mod.forward_backward(b)
            mod.update()
        results.append({k: v.asnumpy() for k, v in mod.get_params()[0].items()})
    for k in results[0]:
        np.testing.assert_allclose(results[0][k], results[1][k], rtol=1e-5, atol=1e-6)


def test_second_batch_and_lr_change_do_not_recompile():
    x, y = toy(100)
    mod = bound()
    sched = mx.lr_scheduler.FactorScheduler(step=1, factor=0.5)
    mod.init_optimizer(
        optimizer="sgd", optimizer_params={"learning_rate": 0.1, "lr_scheduler": sched}
    )
    it = mx.io.NDArrayIter(x, y, batch_size=20)
    metric = mx.metric.create("acc")
    sizes = []
    for b in it:
        mod.forward_backward(b)
        mod.update()
        mod.update_metric(metric, b.label)
        sizes.append(sum(f._cache_size() for f in _jitted(mod)))
    assert sizes[1] == sizes[-1], f"compilations grew after the second batch: {sizes}"
    assert mod._optimizer.learning_rate < 0.1 / 8  # the schedule did move


def _jitted(mod):
    cache = mod._exec_group._progs._cache
    return [f for f in cache.values() if hasattr(f, "_cache_size")]


def test_forward_reshapes_for_a_new_batch_size():
    mod = bound(batch=20)
    out = mod.predict(np.ones((7, 10), "float32"))
    assert out.shape == (7, 4)
    assert mod.data_shapes[0].shape == (7, 10)


def test_get_and_set_params_roundtrip_and_checkpoint(tmp_path):
    mod = bound()
    arg, aux = mod.get_params()
    new = {k: mx.nd.array(np.full(v.shape, 0.5, "float32")) for k, v in arg.items()}
    mod.set_params(new, aux)
    np.testing.assert_array_equal(mod.get_params()[0]["fc2_bias"].asnumpy(), 0.5)
    prefix = str(tmp_path / "m")
    mod.save_checkpoint(prefix, 3)
    loaded = mx.mod.Module.load(prefix, 3)
    loaded.bind([("data", (20, 10))], [("softmax_label", (20,))])
    np.testing.assert_array_equal(loaded.get_params()[0]["fc1_weight"].asnumpy(), 0.5)


def test_optimizer_states_roundtrip(tmp_path):
    x, y = toy(40)
    mod = bound()
    mod.init_optimizer(optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    b = mx.io.DataBatch([mx.nd.array(x[:20])], [mx.nd.array(y[:20])])
    mod.forward_backward(b)
    mod.update()
    fname = str(tmp_path / "o.states")
    mod.save_optimizer_states(fname)
    mod2 = bound()
    mod2.init_optimizer(optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    mod2.load_optimizer_states(fname)
    a = mod._opt_state["fc1_weight"]
    b2 = mod2._opt_state["fc1_weight"]
    np.testing.assert_allclose(np.asarray(b2), np.asarray(a))
    with open(fname, "rb") as f:
        assert b"pickle" not in f.read()[:64]


def test_inputs_need_grad_gives_data_gradient():
    mod = mx.mod.Module(mlp())
    mod.bind([("data", (4, 10))], [("softmax_label", (4,))], inputs_need_grad=True)
    mod.init_params(mx.init.Uniform(0.1))
    b = mx.io.DataBatch([mx.nd.ones((4, 10))], [mx.nd.zeros((4,))])
    mod.forward(b, is_train=True)
    mod.backward()
    g = mod.get_input_grads()[0]
    assert g.shape == (4, 10) and np.abs(g.asnumpy()).sum() > 0


def test_monitor_reports_outputs_and_arguments():
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, name="fc1", num_hidden=4)
    net = mx.sym.Activation(net, name="relu1", act_type="relu")
    net = mx.sym.LinearRegressionOutput(net, name="softmax")
    mod = mx.mod.Module(net)
    mod.bind([("data", (2, 3))], [("softmax_label", (2, 4))])
    mod.init_params()
    mod.init_optimizer()
    mon = mx.mon.Monitor(2, sort=True, pattern="fc1|relu")
    mod.install_monitor(mon)
    seen = []
    for _ in range(3):
        mon.tic()
        mod.forward_backward(mx.io.DataBatch([mx.nd.ones((2, 3))], [mx.nd.ones((2, 4))]))
        mod.update()
        seen.append([name for _, name, _ in mon.toc()])
    assert seen[0] == [
        "fc1_backward_output0",
        "fc1_backward_output1",
        "fc1_backward_output2",
        "fc1_bias",
        "fc1_output",
        "fc1_weight",
        "relu1_backward_output",
        "relu1_output",
    ]
    assert seen[1] == [] and seen[2] == seen[0]
    w = mod.get_params()[0]["fc1_weight"].asnumpy()
    mon.tic()
    assert mon.toc() == []  # step 3: not an interval step
    mon.tic()
    mod.forward(mx.io.DataBatch([mx.nd.ones((2, 3))], [mx.nd.ones((2, 4))]), is_train=False)
    stats = {name: float(v) for _, name, v in mon.toc()}
    assert stats["fc1_weight"] == pytest.approx(np.sqrt((w**2).mean()), rel=1e-5)


def test_states_and_unmerged_outputs():
    data = mx.sym.Variable("data")
    state = mx.sym.Variable("state")
    net = mx.sym.FullyConnected(data, num_hidden=3, name="fc") + state
    net = mx.sym.MakeLoss(net, name="loss")
    mod = mx.mod.Module(
        net, label_names=None, state_names=["state"], context=[mx.cpu(0), mx.cpu(1)]
    )
    mod.bind([("data", (4, 2))])
    mod.init_params(mx.init.Zero())
    mod.set_states(value=1.5)
    merged = mod.get_states()
    assert merged[0].shape == (4, 3) and float(merged[0].asnumpy().mean()) == 1.5
    per_dev = mod.get_states(merge_multi_context=False)
    assert [p.shape for p in per_dev[0]] == [(2, 3), (2, 3)]
    mod.set_states(states=[[mx.nd.ones((2, 3)), mx.nd.zeros((2, 3))]])
    mod.forward(mx.io.DataBatch([mx.nd.zeros((4, 2))]), is_train=False)
    out = mod.get_outputs()[0].asnumpy()
    np.testing.assert_array_equal(out, np.array([[1] * 3] * 2 + [[0] * 3] * 2, "float32"))
    parts = mod.get_outputs(merge_multi_context=False)[0]
    assert [p.shape for p in parts] == [(2, 3), (2, 3)]
    with pytest.raises(MXNetError, match="exactly one of"):
        mod.set_states()


def test_pre_sliced_batches_and_metric():
    x, y = toy(8)
    mod = bound(ctx=[mx.cpu(0), mx.cpu(1)], batch=8)
    whole = mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)])
    mod.forward(whole, is_train=False)
    expect = mod.get_outputs()[0].asnumpy()
    parts = [
        mx.io.DataBatch([mx.nd.array(x[i : i + 4])], [mx.nd.array(y[i : i + 4])]) for i in (0, 4)
    ]
    mod.forward(parts, is_train=False)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), expect, rtol=1e-6)
    m1, m2 = mx.metric.create("acc"), mx.metric.create("acc")
    mod.update_metric(m1, [b.label for b in parts], pre_sliced=True)
    mod.update_metric(m2, whole.label)
    assert m1.get() == m2.get() and m1.num_inst == 8


def test_fit_runs_one_compiled_dispatch_per_batch():
    x, y = toy(200)
    it = mx.io.NDArrayIter(x, y, batch_size=20)
    mod = mx.mod.Module(mlp())
    mod.fit(
        it,
        num_epoch=1,
        optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
        initializer=mx.init.Uniform(0.1),
    )
    progs = mod._exec_group._progs
    calls = {}

    def counting(key, fn):
        def wrapped(*a, **k):
            calls[key[0]] = calls.get(key[0], 0) + 1
            return fn(*a, **k)

        return wrapped

    for key, fn in list(progs._cache.items()):
        progs._cache[key] = counting(key, fn)
    metric = mx.metric.create("acc")
    mod.fit(it, num_epoch=2, begin_epoch=1, eval_metric=metric)
    assert calls == {"step": 10}, calls
    assert metric.num_inst == 200


def test_switching_batch_shapes_does_not_recompile():
    x, y = toy(120)
    train = mx.io.NDArrayIter(x[:80], y[:80], batch_size=20)
    val = mx.io.NDArrayIter(x[80:], y[80:], batch_size=8)
    mod = mx.mod.Module(mlp())
    mod.fit(train, eval_data=val, num_epoch=2, initializer=mx.init.Uniform(0.1))
    progs = mod._exec_group._progs
    sizes = [f._cache_size() for f in progs._cache.values() if hasattr(f, "_cache_size")]
    mod.fit(train, eval_data=val, num_epoch=4, begin_epoch=2)
    assert mod._exec_group._progs is progs
    after = [f._cache_size() for f in progs._cache.values() if hasattr(f, "_cache_size")]
    assert after[: len(sizes)] == sizes, (sizes, after)
