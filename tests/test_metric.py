"""mx.metric: MXNet 1.9.1 numbers (computed independently with numpy from the spec's
definitions), registry/create, errors, and the device-side form (== host form)."""

import math
import warnings
from collections import OrderedDict

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mxmod as mx
from mxmod.metric import _base, _registry

A = mx.nd.array
rng = np.random.RandomState(0)


def _probs(n, c):
    x = rng.rand(n, c).astype(np.float32)
    return x / x.sum(1, keepdims=True)


LABEL3 = np.array([0, 1, 2, 1], np.float32)
PRED3 = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4], [0.5, 0.3, 0.2]], np.float32)
B = [
    dict(
        l3=rng.randint(0, 3, 8).astype(np.float32),
        p3=_probs(8, 3),
        l2=rng.randint(0, 2, 8).astype(np.float32),
        p2=_probs(8, 2),
        rl=rng.randn(8).astype(np.float32),
        rp=rng.randn(8, 1).astype(np.float32),
        rl2=rng.randn(8, 3).astype(np.float32),
        rp2=rng.randn(8, 3).astype(np.float32),
    )
    for _ in range(3)
]

REGISTRY = (
    "acc accuracy caffe ce composite compositeevalmetric crossentropy custommetric f1 "
    "loss mae mcc mse negativeloglikelihood nll_loss pcc pearsoncorrelation pearsonr "
    "perplexity rmse top_k_acc top_k_accuracy topkaccuracy torch"
).split()


def _run(metric, lk, pk, batches=B):
    for b in batches:
        metric.update([A(b[lk])], [A(b[pk])])
    return metric.get()[1]


# ------------------------------------------------------------------ registry and create
def test_registry_has_exactly_the_mxnet_names():
    assert sorted(n for n, _ in _registry._REGISTRY.items()) == REGISTRY


def test_create_spec_example():
    m = mx.metric.create(["acc", "ce", mx.metric.TopKAccuracy(top_k=3)])
    assert isinstance(m, mx.metric.CompositeEvalMetric)
    m.update([A(LABEL3)], [A(PRED3)])
    names, values = m.get()
    assert names == ["accuracy", "cross-entropy", "top_k_accuracy_3"]
    np.testing.assert_allclose(values, [0.75, 0.675020516, 1.0], rtol=1e-6)


def test_create_forms():
    assert isinstance(mx.metric.create("ACC"), mx.metric.Accuracy)
    inst = mx.metric.MSE()
    assert mx.metric.create(inst) is inst
    custom = mx.metric.create(lambda label, pred: 1.0)
    assert isinstance(custom, mx.metric.CustomMetric) and custom.name == "custom(<lambda>)"
    assert mx.metric.create(mx.metric.F1).name == "f1"
    assert mx.metric.create("top_k_acc", top_k=4).name == "top_k_accuracy_4"
    assert mx.metric.create("perplexity", None).ignore_label is None
    assert mx.metric.create('["ce", {"eps": 0.5}]').eps == 0.5
    assert mx.metric.create('{"metric": "acc", "axis": 2}').axis == 2
    comp = mx.metric.create(["acc", "mse"], name="x")  # args go to every child
    assert [m.name for m in comp.metrics] == ["x", "x"]


def test_get_config_round_trip():
    m = mx.metric.create(["acc", mx.metric.CrossEntropy(eps=1e-3, output_names=["o"])])
    config = m.get_config()
    assert config["metric"] == "CompositeEvalMetric"
    assert config["metrics"][1] == {
        "eps": 1e-3,
        "metric": "CrossEntropy",
        "name": "cross-entropy",
        "output_names": ["o"],
        "label_names": None,
    }
    again = mx.metric.create(config)
    assert [type(c) for c in again.metrics] == [mx.metric.Accuracy, mx.metric.CrossEntropy]
    assert again.metrics[1].eps == 1e-3


def test_create_errors():
    with pytest.raises(ValueError, match="unknown metric 'nope'; known metrics are: acc, accuracy"):
        mx.metric.create("nope")
    with pytest.raises(TypeError, match="ignore_label"):
        mx.metric.create("perplexity")
    with pytest.raises(TypeError, match="already an EvalMetric instance"):
        mx.metric.create(mx.metric.Accuracy(), axis=0)
    with pytest.raises(TypeError, match="must be a name, an EvalMetric"):
        mx.metric.create(3)
    with pytest.raises(ValueError, match="needs a 'metric' key"):
        mx.metric.create({"axis": 1})
    with pytest.raises(NotImplementedError, match="CustomMetric cannot be serialized"):
        mx.metric.create(lambda a, b: 0).get_config()


@pytest.fixture
def restore_metric_registry(monkeypatch):
    """Registrations made by a test do not leak into later tests (registry goldens)."""
    from mxmod.metric import _registry

    monkeypatch.setattr(_registry._REGISTRY, "_items", dict(_registry._REGISTRY._items))


def test_register_and_alias(restore_metric_registry):
    @mx.metric.register
    @mx.metric.alias("my_metric_alias")
    class MyMetric(mx.metric.EvalMetric):
        def __init__(self):
            super().__init__("mine")

    assert isinstance(mx.metric.create("MyMetric"), MyMetric)
    assert isinstance(mx.metric.create("my_metric_alias"), MyMetric)
    with pytest.warns(UserWarning, match="overriding existing metric"):
        mx.metric.register(mx.metric.MSE, "my_metric_alias")
    with pytest.raises(TypeError, match="subclasses of EvalMetric"):
        mx.metric.register(dict)


# ------------------------------------------------------------------ base protocol
def test_base_counters_local_and_global():
    m = mx.metric.Accuracy()
    assert math.isnan(m.get()[1]) and m.get()[0] == "accuracy"
    m.update([A(LABEL3)], [A(PRED3)])
    m.reset_local()
    assert math.isnan(m.get()[1]) and m.get_global()[1] == 0.75
    m.update([A(LABEL3)], [A(PRED3)])
    assert (m.sum_metric, m.num_inst, m.global_sum_metric, m.global_num_inst) == (3, 4, 6, 8)
    assert m.get_name_value() == [("accuracy", 0.75)]
    assert m.get_global_name_value() == [("accuracy", 0.75)]
    assert str(m) == "EvalMetric: {'accuracy': 0.75}"
    m.reset()
    assert m.global_num_inst == 0 and math.isnan(m.get_global()[1])


def test_user_subclass_without_global_stats():
    class Half(mx.metric.EvalMetric):
        def __init__(self):
            super().__init__("half", foo=1)

        def update(self, labels, preds):
            self.sum_metric += 1
            self.num_inst += 2

    m = Half()
    m.update([], [])
    assert m.get() == ("half", 0.5) and m.get_global() == ("half", 0.5)
    assert m.get_global_name_value() == [("half", 0.5)]
    assert m.get_config() == {
        "foo": 1,
        "metric": "Half",
        "name": "half",
        "output_names": None,
        "label_names": None,
    }
    assert not m._supports_device()
    with pytest.raises(NotImplementedError, match="must implement update"):
        mx.metric.EvalMetric("x").update([], [])


def test_update_dict_selects_names_and_composite_filters():
    labels = OrderedDict([("lab", A(LABEL3)), ("other", A(np.zeros(4)))])
    preds = OrderedDict([("out", A(PRED3)), ("aux", A(np.zeros((4, 3))))])
    m = mx.metric.Accuracy(output_names=["out"], label_names=["lab"])
    m.update_dict(labels, preds)
    assert m.get()[1] == 0.75
    comp = mx.metric.CompositeEvalMetric(["acc"], output_names=["out"], label_names=["lab"])
    comp.update_dict(labels, preds)
    assert comp.get() == (["accuracy"], [0.75])
    with pytest.raises(KeyError, match="no output or label named 'missing'"):
        mx.metric.Accuracy(output_names=["missing"]).update_dict(labels, preds)


def test_check_label_shapes_and_pair_count_errors():
    with pytest.raises(ValueError, match="Shape of labels 1 does not match shape of predictions 2"):
        mx.metric.Accuracy().update([A(LABEL3)], [A(PRED3), A(PRED3)])
    with pytest.raises(ValueError, match=r"Shape of labels \(2,\) does not match"):
        mx.metric.check_label_shapes(np.zeros(2), np.zeros(3), shape=True)
    lab, pred = mx.metric.check_label_shapes(A(LABEL3), A(LABEL3), wrap=True)
    assert isinstance(lab, list) and len(pred) == 1


# ------------------------------------------------------------------ built-in numbers
def test_accuracy_and_numpy_inputs():
    want = np.mean([np.mean(b["p3"].argmax(1) == b["l3"]) for b in B])
    assert _run(mx.metric.Accuracy(), "l3", "p3") == pytest.approx(want)
    m = mx.metric.Accuracy()
    m.update(LABEL3, PRED3)  # single numpy arrays are wrapped
    assert m.get()[1] == 0.75
    m = mx.metric.Accuracy(axis=0)
    m.update([A(LABEL3[:3])], [A(PRED3[:3].T)])
    assert m.get()[1] == pytest.approx(np.mean(PRED3[:3].T.argmax(0) == LABEL3[:3]))
    with pytest.raises(ValueError, match="Shape of labels 3 does not match shape of predictions 4"):
        mx.metric.Accuracy().update([A(LABEL3[:3])], [A(PRED3)])


def test_top_k_accuracy():
    labels, preds = B[0]["l3"], B[0]["p3"]
    top2 = np.argsort(-preds, axis=1)[:, :2]
    want = np.mean([lab in row for lab, row in zip(labels, top2)])
    m = mx.metric.TopKAccuracy(top_k=2)
    m.update([A(labels)], [A(preds)])
    assert m.name == "top_k_accuracy_2" and m.get()[1] == pytest.approx(want)
    with pytest.raises(ValueError, match="Please use Accuracy if top_k is no more than 1"):
        mx.metric.TopKAccuracy()
    with pytest.raises(ValueError, match="top_k=5 exceeds the 3 classes"):
        mx.metric.TopKAccuracy(top_k=5).update([A(labels)], [A(preds)])
    with pytest.raises(ValueError, match="no more than 2 dims"):
        mx.metric.TopKAccuracy(top_k=2).update([A(np.zeros(2))], [A(np.zeros((2, 3, 4)))])


def test_top_k_one_dim_quirk_only_local_sum():
    m = mx.metric.TopKAccuracy(top_k=2)
    m.update([A(np.array([1.0, 0.0, 2.0]))], [A(np.array([0.1, 0.9, 0.5]))])
    assert m.global_sum_metric == 0 and m.num_inst == 3 and m.global_num_inst == 3


def _binary_counts(labels, preds):
    p = preds.argmax(1) == 1
    t = labels == 1
    return (p & t).sum(), (p & ~t).sum(), (~p & t).sum(), (~p & ~t).sum()


def _f1(tp, fp, fn, tn):
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    return 2 * prec * rec / (prec + rec) if prec + rec else 0.0


def _mcc(tp, fp, fn, tn):
    terms = [t for t in (tp + fp, tp + fn, tn + fp, tn + fn) if t]
    if not tp + fp + fn + tn:
        return 0.0
    return (tp * tn - fp * fn) / math.sqrt(np.prod(terms, dtype=float))


@pytest.mark.parametrize("cls,score", [(mx.metric.F1, _f1), (mx.metric.MCC, _mcc)])
def test_f1_mcc_macro_and_micro(cls, score):
    counts = [_binary_counts(b["l2"], b["p2"]) for b in B]
    assert _run(cls(), "l2", "p2") == pytest.approx(np.mean([score(*c) for c in counts]))
    micro = cls(average="micro")
    assert _run(micro, "l2", "p2") == pytest.approx(score(*np.sum(counts, axis=0)))
    assert micro.num_inst == 24
    micro.reset_local()
    assert math.isnan(micro.get()[1])
    assert micro.get_global()[1] == pytest.approx(score(*np.sum(counts, axis=0)))


def test_f1_errors():
    with pytest.raises(ValueError, match="F1 currently only supports binary classification."):
        mx.metric.F1().update([A(np.array([0.0, 1, 2]))], [A(np.zeros((3, 2)))])
    with pytest.raises(ValueError, match="average must be 'macro' or 'micro', got 'avg'"):
        mx.metric.MCC(average="avg")


def _pcc(labels, preds, k):
    cm = np.zeros((k, k))
    for p, lab in zip(preds, labels):
        cm[p, lab] += 1
    n, x, y = cm.sum(), cm.sum(1), cm.sum(0)
    return np.sum(np.diag(cm) * n - x * y) / math.sqrt(np.sum(x * (n - x)) * np.sum(y * (n - y)))


def test_pcc_accumulates_a_confusion_matrix():
    labels = np.concatenate([b["l3"] for b in B]).astype(int)
    preds = np.concatenate([b["p3"].argmax(1) for b in B])
    m = mx.metric.PCC()
    assert _run(m, "l3", "p3") == pytest.approx(_pcc(labels, preds, 3))
    assert m.num_inst == 3 and m.sum_metric == pytest.approx(3 * _pcc(labels, preds, 3))
    m.update([A(np.array([4.0, 0.0]))], [A(np.array([4.0, 1.0]))])  # grows to 5 classes
    assert m.k == 5 and m.lcm.shape == (5, 5)


def test_perplexity():
    labels, preds = B[0]["l3"].astype(int), B[0]["p3"]
    picked = preds[np.arange(8), labels]
    m = mx.metric.Perplexity(None)
    m.update([A(labels)], [A(preds)])
    assert m.get()[1] == pytest.approx(math.exp(-np.log(picked).mean()), rel=1e-6)
    m = mx.metric.Perplexity(ignore_label=1)
    m.update([A(labels)], [A(preds)])
    keep = labels != 1
    assert m.num_inst == keep.sum()
    assert m.get_global()[1] == pytest.approx(
        math.exp(-np.log(picked[keep]).sum() / keep.sum()), rel=1e-6
    )
    with pytest.raises(ValueError, match=r"shape mismatch: \(3,\) vs. \(8, 3\)"):
        m.update([A(labels[:3])], [A(preds)])


@pytest.mark.parametrize(
    "cls,fn",
    [
        (mx.metric.MAE, lambda d: np.abs(d).mean()),
        (mx.metric.MSE, lambda d: (d**2).mean()),
        (mx.metric.RMSE, lambda d: np.sqrt((d**2).mean())),
    ],
)
def test_regression_metrics_average_per_batch_values(cls, fn):
    want = np.mean([fn(b["rl"][:, None] - b["rp"]) for b in B])
    assert _run(cls(), "rl", "rp") == pytest.approx(want, rel=1e-6)
    want2 = np.mean([fn(b["rl2"] - b["rp2"]) for b in B])
    assert _run(cls(), "rl2", "rp2") == pytest.approx(want2, rel=1e-6)


@pytest.mark.parametrize("cls", [mx.metric.CrossEntropy, mx.metric.NegativeLogLikelihood])
def test_cross_entropy_and_nll(cls):
    nll = np.concatenate([-np.log(b["p3"][np.arange(8), b["l3"].astype(int)] + 1e-12) for b in B])
    assert _run(cls(), "l3", "p3") == pytest.approx(nll.mean(), rel=1e-6)
    with pytest.raises(ValueError, match=r"3 labels but predictions of shape \(4, 3\)"):
        cls().update([A(LABEL3[:3])], [A(PRED3)])


def test_pearson_macro_and_micro():
    want = np.mean([np.corrcoef(b["rp2"].ravel(), b["rl2"].ravel())[0, 1] for b in B])
    assert _run(mx.metric.PearsonCorrelation(), "rl2", "rp2") == pytest.approx(want, rel=1e-6)
    micro = mx.metric.PearsonCorrelation(average="micro")
    pooled = np.corrcoef(
        np.concatenate([b["rp2"].ravel() for b in B]), np.concatenate([b["rl2"].ravel() for b in B])
    )[0, 1]
    assert _run(micro, "rl2", "rp2") == pytest.approx(pooled, rel=1e-6)
    assert micro.get_global() == ("pearsonr", 0.0)  # MXNet quirk
    with pytest.raises(
        ValueError,
        match=r"Shape of labels \(8,\) does not match shape of "
        r"predictions \(8, 1\)",
    ):
        micro.update([A(B[0]["rl"])], [A(B[0]["rp"])])


@pytest.mark.parametrize(
    "cls,name", [(mx.metric.Loss, "loss"), (mx.metric.Torch, "torch"), (mx.metric.Caffe, "caffe")]
)
def test_loss_metrics_mean_of_outputs(cls, name):
    m = cls()
    m.update(None, A(B[0]["rp2"]))  # labels ignored, single NDArray wrapped
    m.update([], [A(B[1]["rp2"]), A(B[2]["rp"])])
    outs = np.concatenate([B[0]["rp2"].ravel(), B[1]["rp2"].ravel(), B[2]["rp"].ravel()])
    assert m.name == name and m.get()[1] == pytest.approx(outs.mean(), rel=1e-5)


def test_custom_metric_and_np():
    m = mx.metric.np(lambda label, pred: float(np.abs(label - pred).sum()))
    assert m.name == "custom(<lambda>)"

    def tuple_feval(label, pred):
        return float((label == pred.argmax(1)).sum()), label.size

    m = mx.metric.CustomMetric(tuple_feval)
    m.update([A(LABEL3)], [A(PRED3)])
    assert m.name == "tuple_feval" and m.get() == ("tuple_feval", 0.75)
    extra = mx.metric.np(tuple_feval, allow_extra_outputs=True)
    extra.update([A(LABEL3)], [A(PRED3), A(np.zeros(1))])
    assert extra.num_inst == 4
    with pytest.raises(ValueError, match="Shape of labels 1 does not match shape of predictions 2"):
        m.update([A(LABEL3)], [A(PRED3), A(PRED3)])


def test_composite():
    comp = mx.metric.CompositeEvalMetric()
    comp.add("acc")
    comp.add(mx.metric.CompositeEvalMetric(["mse"]))
    comp.update([A(LABEL3)], [A(PRED3)])
    names, values = comp.get()
    assert names == ["accuracy", "mse"] and values[0] == 0.75
    assert comp.get_global()[0] == names
    assert comp.get_name_value()[0] == ("accuracy", 0.75)
    assert comp.get_metric(0) is comp.metrics[0]
    err = comp.get_metric(5)
    assert isinstance(err, ValueError) and "Metric index 5 is out of range 0 and 2" in str(err)
    comp.reset_local()
    assert math.isnan(comp.get()[1][0]) and comp.get_global()[1][0] == 0.75
    comp.reset()
    assert math.isnan(comp.get_global()[1][0])


# ------------------------------------------------------------------ device-side form
DEVICE_CASES = [
    (lambda: mx.metric.Accuracy(), "l3", "p3"),
    (lambda: mx.metric.TopKAccuracy(top_k=2), "l3", "p3"),
    (lambda: mx.metric.F1(), "l2", "p2"),
    (lambda: mx.metric.F1(average="micro"), "l2", "p2"),
    (lambda: mx.metric.MCC(), "l2", "p2"),
    (lambda: mx.metric.MCC(average="micro"), "l2", "p2"),
    (lambda: mx.metric.PCC(), "l3", "p3"),
    (lambda: mx.metric.Perplexity(ignore_label=2), "l3", "p3"),
    (lambda: mx.metric.MAE(), "rl", "rp"),
    (lambda: mx.metric.MSE(), "rl2", "rp2"),
    (lambda: mx.metric.RMSE(), "rl", "rp"),
    (lambda: mx.metric.CrossEntropy(), "l3", "p3"),
    (lambda: mx.metric.NegativeLogLikelihood(), "l3", "p3"),
    (lambda: mx.metric.PearsonCorrelation(), "rl2", "rp2"),
    (lambda: mx.metric.PearsonCorrelation(average="micro"), "rl2", "rp2"),
    (lambda: mx.metric.Loss(), "rl2", "rp2"),
    (lambda: mx.metric.create(["acc", "ce"]), "l3", "p3"),
]


def _state(m):
    return [m.get(), m.get_global(), m.get_name_value()]


@pytest.mark.parametrize("make,lk,pk", DEVICE_CASES)
def test_device_form_matches_host(make, lk, pk):
    host, dev = make(), make()
    assert dev._supports_device()
    for i, b in enumerate(B):
        host.update([A(b[lk]), A(B[0][lk])], [A(b[pk]), A(B[0][pk])])
        dev._update_device([A(b[lk]), A(B[0][lk])], [A(b[pk]), A(B[0][pk])])
        if i == 1:
            host.reset_local()
            dev.reset_local()
    np.testing.assert_allclose(
        np.array(_state(dev)[:2], dtype=object)[:, 1].tolist(),
        np.array(_state(host)[:2], dtype=object)[:, 1].tolist(),
        rtol=2e-5,
    )
    assert _state(dev)[0][0] == _state(host)[0][0]


def test_device_stats_inside_jit_with_dicts_and_stacked_accumulation():
    m = mx.metric.create(
        [
            mx.metric.Accuracy(output_names=["out"], label_names=["lab"]),
            mx.metric.MSE(output_names=["aux"], label_names=["reg"]),
        ]
    )

    @jax.jit
    def step(lab, reg, pred):
        return m._device_stats_dict(
            OrderedDict([("lab", lab), ("reg", reg)]), OrderedDict([("out", pred), ("aux", pred)])
        )

    # two "devices": stats stacked along a leading axis, folded in order
    s1 = step(jnp.asarray(LABEL3), jnp.asarray(PRED3), jnp.asarray(PRED3))
    s2 = step(jnp.asarray(LABEL3[::-1].copy()), jnp.zeros((4, 3)), jnp.asarray(PRED3))
    m._accumulate_device(
        jax.tree_util.tree_map(lambda a, b: jnp.stack([a, b]), s1, s2), stacked=True
    )
    assert m.metrics[0].get()[1] == pytest.approx((3 + 1) / 8)  # reversed labels: 1 hit
    assert m.metrics[0].num_inst == 8 and m.metrics[1].num_inst == 2
    assert m.metrics[1].get()[1] == pytest.approx((PRED3**2).mean() / 2, rel=1e-6)


def test_device_stats_are_additive_where_declared():
    # the stats structure and fold logic are shared with the host path: check there (fast)
    for make, lk, pk in DEVICE_CASES:
        a, b, ref = make(), make(), make()
        if isinstance(a, (mx.metric.PCC, mx.metric.CompositeEvalMetric)):
            continue
        s1 = a._stats([B[0][lk]], [B[0][pk]], np)
        s2 = a._stats([B[1][lk]], [B[1][pk]], np)
        if not a._device_additive:
            assert isinstance(a, mx.metric.PearsonCorrelation) and a.average == "micro"
            continue
        b._accumulate_device(jax.tree_util.tree_map(np.add, s1, s2))
        ref._accumulate_device(s1)
        ref._accumulate_device(s2)
        np.testing.assert_allclose(b.get()[1], ref.get()[1], rtol=1e-6)
    pcc, ref = mx.metric.PCC(), mx.metric.PCC()
    s1 = pcc._device_stats([jnp.asarray(B[0]["l3"])], [jnp.asarray(B[0]["p3"])])
    s2 = pcc._device_stats([jnp.asarray(B[1]["l3"])], [jnp.asarray(B[1]["p3"])])
    pcc._accumulate_device(jax.tree_util.tree_map(jnp.add, s1, s2))
    ref.update([A(B[0]["l3"])], [A(B[0]["p3"])])
    ref.update([A(B[1]["l3"])], [A(B[1]["p3"])])
    assert pcc.get()[1] == pytest.approx(ref.get()[1]) and pcc.num_inst == 2


def test_pending_stats_fold_lazily_and_reset_drops_them(monkeypatch):
    m = mx.metric.Accuracy()
    m._update_device([A(LABEL3)], [A(PRED3)])
    assert len(m._pending) == 1  # nothing read yet: no host sync
    assert m.num_inst == 4 and m._pending == []
    m._update_device([A(LABEL3)], [A(PRED3)])
    m.reset()
    assert m.global_num_inst == 0
    monkeypatch.setattr(_base, "_MAX_PENDING", 5)
    monkeypatch.setattr(_base, "_KEEP_PENDING", 2)
    for _ in range(5):
        m._accumulate_device((jnp.int32(1), jnp.int32(2)))
    assert len(m._pending) == 2 and m.__dict__["_num_inst"] == 6
    assert m.get() == ("accuracy", 0.5) and m.global_num_inst == 10


def test_device_form_fallbacks_and_errors():
    assert not mx.metric.create(lambda a, b: 0)._supports_device()
    assert not mx.metric.create(["acc", lambda a, b: 0])._supports_device()

    class MyAcc(mx.metric.Accuracy):
        def update(self, labels, preds):
            super().update(labels, preds)

    assert not MyAcc()._supports_device()
    with pytest.raises(NotImplementedError, match="1-D predictions is host-only"):
        mx.metric.TopKAccuracy(top_k=2)._device_stats([jnp.zeros(3)], [jnp.zeros(3)])
    with pytest.raises(NotImplementedError, match="has no device-side form"):
        mx.metric.CustomMetric(lambda a, b: 0)._device_stats([], [])
    f1 = mx.metric.F1()
    f1._update_device([A(np.array([0.0, 1, 2]))], [A(np.zeros((3, 2)))])
    with pytest.raises(ValueError, match="only supports binary classification"):
        f1.get()
    pcc = mx.metric.PCC()
    pcc._update_device([A(np.array([0.0, 7.0]))], [A(np.zeros((2, 3)))])
    with pytest.raises(ValueError, match=r"PCC: a label outside \[0, num_classes\)"):
        pcc.get()
    comp = mx.metric.create(["acc", "mse"])
    with pytest.raises(ValueError, match="has 2 children but got stats for 1"):
        comp._accumulate_device(((1, 2),))


def test_no_warnings_from_host_paths():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = mx.metric.PearsonCorrelation()
        m.update([A(np.ones(4))], [A(np.arange(4.0))])  # constant label: nan, as numpy corrcoef
        assert math.isnan(m.get()[1])
