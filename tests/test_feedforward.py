"""mx.model.FeedForward (legacy estimator on Module) against MXNet 1.9.1's trajectory
(tests/fixtures/surface/feedforward.npz) and its API contract."""

import os
import sys
import warnings

import numpy as np
import pytest

import mxmod as mx
from mxmod.test_utils import assert_almost_equal

FIX = os.path.join(os.path.dirname(__file__), "fixtures")
sys.path.insert(0, FIX)
import surface_nets  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:mxnet.model.FeedForward has been deprecated")


@pytest.fixture(scope="module")
def gold():
    return dict(np.load(os.path.join(FIX, "surface", "feedforward.npz")))


def _init(gold):
    return {k[5:]: mx.nd.array(v) for k, v in gold.items() if k.startswith("init:")}


@pytest.fixture(scope="module")
def trained(gold):
    model = mx.model.FeedForward(
        surface_nets.ff_net(mx),
        num_epoch=3,
        optimizer="sgd",
        learning_rate=0.2,
        momentum=0.9,
        arg_params=_init(gold),
        numpy_batch_size=5,
    )
    model.fit(mx.io.NDArrayIter(gold["x"], gold["y"], 5, shuffle=False), eval_metric="acc")
    return model


def test_fit_matches_mxnet(trained, gold):
    for name, value in trained.arg_params.items():
        assert_almost_equal(value, gold["arg:" + name], rtol=1e-5, atol=1e-6, names=(name, "mxnet"))
    for name, value in trained.aux_params.items():
        assert_almost_equal(value, gold["aux:" + name], rtol=1e-5, atol=1e-6, names=(name, "mxnet"))


def test_predict_and_score_match_mxnet(trained, gold):
    assert_almost_equal(trained.predict(gold["x"]), gold["predict"], rtol=1e-5, atol=1e-6)
    out = trained.predict(mx.io.NDArrayIter(gold["x"], gold["y"], 6))  # padded last batch
    assert_almost_equal(out, gold["predict_iter"], rtol=1e-5, atol=1e-6)
    assert trained.score(mx.io.NDArrayIter(gold["x"], gold["y"], 5)) == pytest.approx(
        float(gold["score_acc"])
    )
    assert trained.score(mx.io.NDArrayIter(gold["x"], gold["y"], 5), "ce") == pytest.approx(
        float(gold["score_ce"]), rel=1e-5
    )


def test_predict_return_data_and_num_batch(trained, gold):
    out, data, label = trained.predict(gold["x"], num_batch=2, return_data=True)
    assert out.shape == (10, 3) and data.shape == (10, 3) and label.shape == (10,)
    np.testing.assert_allclose(data, gold["x"][:10])
    seen = []
    trained.score(
        mx.io.NDArrayIter(gold["x"], gold["y"], 5),
        batch_end_callback=lambda p: seen.append(p.nbatch),
    )
    assert seen == [0, 1, 2, 3]


def test_create_with_numpy_save_and_load(tmp_path, gold):
    with pytest.warns(DeprecationWarning, match="FeedForward has been deprecated"):
        model = mx.model.FeedForward.create(
            surface_nets.ff_net(mx),
            gold["x"],
            gold["y"],
            num_epoch=1,
            numpy_batch_size=4,
            learning_rate=0.1,
            initializer=mx.init.Xavier(),
        )
    prefix = str(tmp_path / "ff")
    model.save(prefix)
    assert os.path.exists(prefix + "-0001.params") and os.path.exists(prefix + "-symbol.json")
    loaded = mx.model.FeedForward.load(prefix, 1)
    assert loaded.begin_epoch == 1
    np.testing.assert_allclose(loaded.predict(gold["x"]), model.predict(gold["x"]), rtol=1e-6)


def test_symbol_generator_and_extra_params(gold):
    extra = dict(_init(gold), unused_weight=mx.nd.ones((2,)))
    model = mx.model.FeedForward(
        lambda key: surface_nets.ff_net(mx),
        num_epoch=1,
        arg_params=extra,
        allow_extra_params=True,
        numpy_batch_size=5,
    )
    with pytest.raises(TypeError, match="default_bucket_key"):
        model.fit(mx.io.NDArrayIter(gold["x"], gold["y"], 5))
    data = mx.io.NDArrayIter(gold["x"], gold["y"], 5, shuffle=False)
    data.default_bucket_key = 10
    model.fit(data)
    assert "unused_weight" not in model.arg_params
    assert model.predict(gold["x"]).shape == (20, 3)


def test_errors(tmp_path, gold):
    net = surface_nets.ff_net(mx)
    with pytest.raises(NotImplementedError, match="epoch_size"):
        mx.model.FeedForward(net, epoch_size=10)
    model = mx.model.FeedForward(net, num_epoch=1)
    with pytest.raises(ValueError, match="y must be specified"):
        model.fit(gold["x"])
    with pytest.raises(ValueError, match="numbers of data points and labels not equal"):
        model.fit(gold["x"], gold["y"][:5])
    with pytest.raises(TypeError, match="X must be DataIter, NDArray or numpy.ndarray"):
        model.fit([[1, 2, 3]], gold["y"])
    with pytest.raises(mx.MXNetError, match="call fit\\(\\) first"):
        model.predict(gold["x"])
    with pytest.raises(ValueError, match="needs an epoch"):
        mx.model.FeedForward(net).save(str(tmp_path / "x"))
    dup = mx.sym.FullyConnected(
        mx.sym.Variable("data"), weight=mx.sym.Variable("w"), num_hidden=3, name="a"
    )
    dup = mx.sym.FullyConnected(dup, weight=mx.sym.Variable("w"), num_hidden=3, name="b")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="duplicated argument name \"w\""):
            mx.model.FeedForward(dup)


def test_create_passes_fit_arguments_by_position_or_name(monkeypatch):
    seen = {}
    monkeypatch.setattr(
        mx.model.FeedForward, "fit", lambda self, X, y=None, **kw: seen.update(kw, X=X, y=y)
    )
    net = surface_nets.ff_net(mx)
    x, y = np.zeros((4, 3), "float32"), np.zeros(4, "float32")
    model = mx.model.FeedForward.create(
        net, x, y, None, 2, None, "sgd", None, "val", "mse", kvstore="dev", learning_rate=0.5
    )
    assert seen["eval_data"] == "val" and seen["eval_metric"] == "mse"
    assert seen["kvstore"] == "dev" and seen["X"] is x and seen["y"] is y
    assert model.kwargs == {"learning_rate": 0.5} and model.num_epoch == 2
    with pytest.raises(TypeError, match="multiple values for 'eval_data'"):
        mx.model.FeedForward.create(net, x, y, None, 1, None, "sgd", None, "val", eval_data=2)
    with pytest.raises(TypeError, match="at most 17 positional"):
        mx.model.FeedForward.create(net, x, y, None, 1, None, "sgd", None, *range(10))
