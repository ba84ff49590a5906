"""Issue #6 conformance: metrics and LR schedulers against goldens recorded with real MXNet
1.9.1 (``tests/fixtures/gen_catalogue_goldens.py``; initializers are in
``test_catalogue_init_conformance.py``), plus the Module contract that built-in metrics
never sync to the host inside ``fit`` and that a CustomMetric's host fallback is logged
once."""

import json
import logging
import math
import os
from collections import Counter, OrderedDict

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mxmod as mx
from mxmod.metric import _base as metric_base


HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "catalogue")


def _load_json(name):
    with open(os.path.join(HERE, name)) as f:
        return json.load(f)


METRICS = _load_json("metrics.json")
INPUTS = dict(np.load(os.path.join(HERE, "metric_inputs.npz")))
SCHED = _load_json("schedulers.json")


def _exec(src, name):
    scope = {"np": np}
    exec(src, scope)  # noqa: S102 - source recorded next to the goldens
    return scope[name]


FEVALS = {k: _exec(src, k) for k, src in METRICS["fevals"].items()}


# ============================================================================= metrics
def make_metric(spec):
    args, kwargs = list(spec.get("args", [])), dict(spec.get("kwargs", {}))
    feval = FEVALS[spec["feval"]] if "feval" in spec else None
    if spec["name"] == "np":
        return mx.metric.np(feval, *args, **kwargs)
    if spec["name"] == "callable":
        return mx.metric.create(feval, *args, **kwargs)
    if feval is not None:
        args = [feval] + args
    return mx.metric.create(spec["name"], *args, **kwargs)


def _nd(keys):
    if isinstance(keys, str):  # a single NDArray rather than a list
        return mx.nd.array(INPUTS[keys])
    return [mx.nd.array(INPUTS[k]) for k in keys]


def _od(pairs):
    return OrderedDict((name, mx.nd.array(INPUTS[k])) for name, k in pairs)


def _replay(metric, steps, device):
    """Run the recorded steps; yield ``(get, get_global)`` after each one."""
    for step in steps:
        if step[0] == "update":
            if device:
                metric._update_device(_nd(step[1]), _nd(step[2]))
            else:
                metric.update(_nd(step[1]), _nd(step[2]))
        elif step[0] == "update_dict":
            if device:
                metric._update_dict_device(_od(step[1]), _od(step[2]))
            else:
                metric.update_dict(_od(step[1]), _od(step[2]))
        elif step[0] == "reset_local":
            metric.reset_local()
        else:
            metric.reset()
        yield metric.get(), metric.get_global()


def _close(got, want, rtol, where):
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{where}: {got} vs {want}"
        for g, w in zip(got, want):
            _close(g, w, rtol, where)
        return
    if isinstance(want, str):
        assert got == want, f"{where}: name {got!r} vs MXNet {want!r}"
        return
    got = float(got)
    if math.isnan(want):
        assert math.isnan(got), f"{where}: {got} vs MXNet nan"
    else:
        assert got == pytest.approx(want, rel=rtol, abs=rtol), f"{where}: {got} vs MXNet {want}"


def _check_case(name, device, rtol):
    case = METRICS["cases"][name]
    metric = make_metric(case["spec"])
    for i, (got, got_global) in enumerate(_replay(metric, case["steps"], device)):
        snap = case["snapshots"][i]
        _close(list(got), snap["get"], rtol, f"{name} step {i} get()")
        _close(list(got_global), snap["get_global"], rtol, f"{name} step {i} get_global()")
    _close([list(p) for p in metric.get_name_value()], case["name_value"], rtol, name)
    _close([list(p) for p in metric.get_global_name_value()], case["global_name_value"], rtol, name)
    return metric, case


def test_metric_registry_matches_mxnet():
    from mxmod.metric import _registry

    assert sorted(n for n, _ in _registry._REGISTRY.items()) == METRICS["registry"]
    used = {c["spec"]["name"] for c in METRICS["cases"].values()}
    assert set(METRICS["registry"]) <= used  # every registry name has a recorded case


@pytest.mark.parametrize("name", sorted(METRICS["cases"]))
def test_metric_host_path_matches_mxnet(name):
    metric, case = _check_case(name, device=False, rtol=1e-6)
    if "config" in case:
        assert json.loads(json.dumps(metric.get_config(), default=str)) == case["config"]


DEVICE_CASES = sorted(n for n, c in METRICS["cases"].items() if c["device"])


@pytest.mark.parametrize("name", DEVICE_CASES)
def test_metric_device_path_matches_mxnet(name):
    metric = make_metric(METRICS["cases"][name]["spec"])
    assert metric._supports_device()
    _check_case(name, device=True, rtol=2e-5)


@pytest.mark.parametrize("name", sorted(METRICS["errors"]))
def test_metric_errors_match_mxnet(name):
    err = METRICS["errors"][name]
    with pytest.raises((ValueError, TypeError, AssertionError)) as info:
        for _ in _replay(make_metric(err["spec"]), err["steps"], device=False):
            pass
    if err["type"] == "AssertionError":  # mxmod raises a ValueError/TypeError with a message
        assert isinstance(info.value, (ValueError, TypeError)) and str(info.value)
        return
    assert type(info.value).__name__ == err["type"]
    want = err["message"]
    if want.startswith("_BinaryClassificationMetrics"):  # MXNet names its private helper
        want = want.split(" ", 1)[1]
    assert want in str(info.value), (str(info.value), err["message"])


def test_host_only_metrics_have_no_device_form():
    for name in ("custommetric", "custommetric_tuple_extra", "np"):
        assert not make_metric(METRICS["cases"][name]["spec"])._supports_device()
    topk = make_metric(METRICS["cases"]["topkaccuracy"]["spec"])
    with pytest.raises(NotImplementedError, match="1-D predictions"):
        topk._device_stats([jnp.zeros(6)], [jnp.zeros(6)])


# ============================================================================= schedulers
def _scheduler(case):
    sched = getattr(mx.lr_scheduler, case["cls"])(**case["kwargs"])
    if case["set_base_lr"] is not None:
        sched.base_lr = case["set_base_lr"]  # what Optimizer(learning_rate=...) does
    return sched


@pytest.mark.parametrize("name", sorted(SCHED["cases"]))
def test_scheduler_sequence_matches_mxnet(name):
    case = SCHED["cases"][name]
    sched = _scheduler(case)
    got = [sched(n) for n in case["num_update"]]
    np.testing.assert_allclose(got, case["lr"], rtol=1e-12, atol=1e-15, err_msg=name)


@pytest.mark.parametrize(
    "name",
    sorted(n for n, c in SCHED["cases"].items() if c["num_update"] == sorted(c["num_update"])),
)
def test_scheduler_jax_schedule_matches_mxnet(name):
    case = SCHED["cases"][name]
    fn = _scheduler(case).jax_schedule()
    got = fn(jnp.asarray(case["num_update"], jnp.int32))  # elementwise over all updates
    np.testing.assert_allclose(np.asarray(got), case["lr"], rtol=2e-6, atol=1e-9, err_msg=name)


@pytest.mark.parametrize(
    "name",
    [
        "factor_warm_linear",
        "multifactor_warm_constant",
        "poly_pwr3_warm_linear",
        "cosine_warm_constant",
    ],
)
def test_scheduler_jax_schedule_jits_per_scalar_step(name):
    case = SCHED["cases"][name]
    fn = jax.jit(_scheduler(case).jax_schedule())
    got = [float(fn(jnp.int32(n))) for n in case["num_update"]]
    np.testing.assert_allclose(got, case["lr"], rtol=2e-6, atol=1e-9, err_msg=name)


@pytest.mark.parametrize("err", SCHED["errors"], ids=lambda e: f"{e['cls']}-{e['bad']}")
def test_scheduler_bad_hyperparameters_raise_value_error_naming_them(err):
    assert err["type"] == "ValueError"
    with pytest.raises(ValueError) as info:
        getattr(mx.lr_scheduler, err["cls"])(**err["kwargs"])
    msg = str(info.value)
    assert msg.startswith(err["message"]), (msg, err["message"])
    assert f"{err['bad']}=" in msg, f"message does not name {err['bad']}: {msg}"


# ============================================================================= Module.fit
def _clf_net():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), name="fc", num_hidden=2)
    return mx.sym.SoftmaxOutput(net, name="softmax"), "softmax_label", False


def _reg_net():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), name="fc", num_hidden=1)
    return mx.sym.LinearRegressionOutput(net, name="lro"), "lro_label", True


def _all_classification():
    M = mx.metric
    return M.CompositeEvalMetric(
        [
            M.Accuracy(),
            M.CrossEntropy(),
            M.NegativeLogLikelihood(),
            M.F1(),
            M.F1(average="micro"),
            M.MCC(),
            M.MCC(average="micro"),
            M.Perplexity(None),
            M.PCC(),
            M.TopKAccuracy(top_k=2),
            M.Loss(),
            M.Torch(),
            M.Caffe(),
        ]
    )


def _all_regression():
    M = mx.metric
    return M.CompositeEvalMetric(
        [M.MAE(), M.MSE(), M.RMSE(), M.PearsonCorrelation(), M.PearsonCorrelation(average="micro")]
    )


# every built-in metric class (in the two composites) and a few on their own
FIT_METRICS = {
    "all_classification": (_all_classification, _clf_net),
    "all_regression": (_all_regression, _reg_net),
    "acc": (lambda: mx.metric.create("acc"), _clf_net),
    "pcc": (lambda: mx.metric.create("pcc"), _clf_net),
    "pearsonr_micro": (lambda: mx.metric.create("pearsonr", average="micro"), _reg_net),
}


class _CountingCache(dict):
    """Programs' compiled-function cache, counting every call of a cached program."""

    def __init__(self, src, counter):
        super().__init__(src)
        self.counter = counter

    def __getitem__(self, key):
        fn = super().__getitem__(key)

        def counted(*args, **kwargs):
            self.counter["dispatch"] += 1
            return fn(*args, **kwargs)

        return counted


def _pending(metric):
    if isinstance(metric, mx.metric.CompositeEvalMetric):
        return sum(len(m._pending) for m in metric.metrics)
    return len(metric._pending)


def _fit_data(regression, label_name, n=40):
    rng = np.random.RandomState(0)
    x = rng.randn(n, 5).astype(np.float32)
    y = (x[:, :1] * 0.7 + 0.1) if regression else (x[:, 0] > 0).astype(np.float32)
    return mx.io.NDArrayIter(x, y, batch_size=10, label_name=label_name)


@pytest.mark.parametrize("case", sorted(FIT_METRICS))
def test_fit_with_builtin_metric_is_one_dispatch_per_batch_without_host_sync(case, monkeypatch):
    make_metric_, net = FIT_METRICS[case]
    sym, label_name, regression = net()
    it = _fit_data(regression, label_name)
    metric = make_metric_()
    assert metric._supports_device()
    counter = Counter()
    real_get, real_asnumpy = jax.device_get, mx.nd.NDArray.asnumpy

    def device_get(x):
        counter["device_get"] += 1
        return real_get(x)

    def asnumpy(self):
        counter["asnumpy"] += 1
        return real_asnumpy(self)

    monkeypatch.setattr(jax, "device_get", device_get)
    monkeypatch.setattr(mx.nd.NDArray, "asnumpy", asnumpy)
    mod = mx.mod.Module(sym, label_names=[label_name])
    seen = []

    def on_batch(param):
        progs = mod._exec_group._progs
        if not isinstance(progs._cache, _CountingCache):
            progs._cache = _CountingCache(progs._cache, counter)
        seen.append((param.epoch, param.nbatch, dict(counter), _pending(metric)))

    mod.fit(
        it,
        eval_metric=metric,
        num_epoch=2,
        batch_end_callback=on_batch,
        optimizer_params={"learning_rate": 0.05},
    )
    epoch2 = [s for s in seen if s[0] == 1]
    assert len(epoch2) == 4
    for i, ((_, nb, before, _), (_, _, after, _)) in enumerate(zip(epoch2, epoch2[1:])):
        # between two batch ends: exactly one compiled dispatch, and no device->host transfer
        # except the end-of-epoch read of the metric before the last callback
        assert after.get("dispatch", 0) - before.get("dispatch", 0) == 1, (nb, before, after)
        if i < len(epoch2) - 2:
            assert after.get("device_get", 0) == before.get("device_get", 0), (nb, before, after)
            assert after.get("asnumpy", 0) == before.get("asnumpy", 0), (nb, before, after)
    # statistics queue up on device without folding until the epoch end reads them
    n_stat = len(metric.metrics) if isinstance(metric, mx.metric.CompositeEvalMetric) else 1
    assert [s[3] for s in epoch2[:-1]] == [n_stat * (i + 1) for i in range(3)]
    assert epoch2[-1][3] == 0  # folded once, by the end-of-epoch get_global_name_value()
    values = np.atleast_1d(np.asarray(metric.get_global()[1], np.float64))
    assert np.isfinite(values).sum() >= len(values) - 1  # PCC may be nan on a tiny model


def test_custom_metric_host_fallback_is_logged_once(caplog):
    sym, label_name, _ = _clf_net()
    it = _fit_data(False, label_name)

    def my_acc(label, pred):
        return float((pred.argmax(1) == label).mean())

    metric = mx.metric.create(my_acc)
    mod = mx.mod.Module(sym, label_names=[label_name])
    with caplog.at_level(logging.INFO):
        mod.fit(
            it,
            eval_data=it,
            eval_metric=metric,
            num_epoch=2,
            optimizer_params={"learning_rate": 0.05},
        )
    recs = [r for r in caplog.records if "updated on the host" in r.getMessage()]
    assert len(recs) == 1, [r.getMessage() for r in recs]  # 2 epochs + 2 validations: once
    assert recs[0].levelno == logging.WARNING
    assert "CustomMetric 'my_acc'" in recs[0].getMessage()
    assert "its feval is a host function" in recs[0].getMessage()
    assert 0.0 <= metric.get()[1] <= 1.0
    # a built-in metric on the same module logs nothing
    caplog.clear()
    with caplog.at_level(logging.INFO):
        mod.score(it, "acc")
    assert not [r for r in caplog.records if "updated on the host" in r.getMessage()]


def test_fold_pending_is_the_only_sync_point(monkeypatch):
    """The pending queue folds on read; ``_accumulate_device`` never blocks."""
    m = mx.metric.Accuracy()
    calls, real = [], jax.device_get
    monkeypatch.setattr(metric_base.jax, "device_get", lambda x: calls.append(1) or real(x))
    for _ in range(3):
        m._update_device([mx.nd.array([0, 1])], [mx.nd.array([[1, 0], [0, 1]])])
    assert calls == [] and len(m._pending) == 3
    assert m.get() == ("accuracy", 1.0) and len(calls) == 1


def test_host_fallback_reason_names_the_host_only_child(caplog):
    m = mx.metric.create(["acc", mx.metric.np(lambda label, pred: 0.0)])
    assert not m._supports_device()
    with caplog.at_level(logging.INFO):
        for _ in range(3):
            metric_base.note_host_update(m, m._host_reason(), logging)
    assert len(caplog.records) == 1
    assert "child CustomMetric 'custom(<lambda>)': its feval is a host function" in caplog.text
