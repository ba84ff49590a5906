"""mx.init: MXNet 1.9.1 dispatch (spec 5.1), every initializer (spec 5.2), errors."""

import json
import logging
import os

import numpy as np
import pytest

import mxmod as mx
from mxmod.initializer import InitDesc


def arr(shape, dtype="float32", ctx=None):
    return mx.nd.zeros(shape, ctx=ctx, dtype=dtype)


def run(init, name, shape, attrs=None):
    a = arr(shape)
    init(InitDesc(name, attrs), a)
    return a.asnumpy()


# ----------------------------------------------------------------------------- InitDesc / dispatch
def test_initdesc_is_str():
    d = InitDesc("fc_weight", {"a": "1"})
    assert d == "fc_weight" and isinstance(d, str) and d.attrs == {"a": "1"}
    assert d.global_init is None and InitDesc("x").attrs == {}


@pytest.mark.parametrize(
    "name, value",
    [
        ("fc_weight", 3.0),
        ("fc_bias", 0.0),
        ("bn_gamma", 1.0),
        ("bn_beta", 0.0),
        ("q_min", 0.0),
        ("q_max", 1.0),
        ("fc_bias_quantize", 0.0),
        # mxmod fallbacks where MXNet relies on BatchNorm's __init__ attribute
        ("bn_moving_mean", 0.0),
        ("bn_moving_var", 1.0),
        ("bn_moving_inv_var", 0.0),
        ("kl_moving_avg", 0.0),
    ],
)
def test_suffix_dispatch(name, value):
    a = arr((2, 3))
    a[:] = 7.0
    mx.init.Constant(3.0)(InitDesc(name), a)
    np.testing.assert_array_equal(a.asnumpy(), value)


def test_weight_quantize_is_one_int8_broadcast():
    a = arr((200,), dtype="int8")
    mx.init.Zero()(InitDesc("fc_weight_quantize"), a)
    v = a.asnumpy()  # MXNet 1.9.1 draws a single randint(-127, 127) for the whole array
    assert a.dtype == np.int8 and -127 <= v[0] <= 126 and len(set(v.tolist())) == 1


def test_unknown_suffix_error_names_param_and_fix():
    with pytest.raises(
        ValueError,
        match=r"Unknown initialization pattern for rnn_state\..*"
        r"mx\.sym\.Variable\('rnn_state', init=mx\.init",
    ):
        mx.init.Uniform()(InitDesc("rnn_state"), arr((2,)))


@pytest.mark.parametrize(
    "name, init, expect",
    [
        ("bn_moving_var", '["one", {}]', 1.0),
        ("bn_moving_mean", '["zero", {}]', 0.0),
        ("prelu_gamma", '["Constant", {"value": 0.25}]', 0.25),
        ("anything", '["constant", {"value": 2}]', 2.0),
        ("fc_bias", '["constant", {"value": 5}]', 5.0),
    ],
)
def test_init_attr_overrides_name(name, init, expect):
    np.testing.assert_allclose(run(mx.init.Xavier(), name, (4,), {"__init__": init}), expect)


def test_init_attr_lstmbias_and_global_init_set():
    d = InitDesc("lstm_i2h_bias", {"__init__": '["lstmbias", {"forget_bias": 1.0}]'})
    a = arr((8,))
    g = mx.init.Uniform()
    g(d, a)
    np.testing.assert_array_equal(a.asnumpy(), [0, 0, 1, 1, 0, 0, 0, 0])
    assert d.global_init is g


@pytest.mark.parametrize(
    "name, expect",
    [
        ("fc_bias", 0.0),
        ("bn_gamma", 1.0),
        ("bn_beta", 0.0),
        ("fc_weight", 3.0),
        ("bn_moving_mean", 0.0),
        ("bn_moving_var", 1.0),
        ("x_moving_inv_var", 0.0),
        ("x_moving_avg", 0.0),
        ("q_min", 0.0),
        ("q_max", 1.0),
        ("stn_loc_weight", 0.0),
    ],
)
def test_legacy_string_path(name, expect):
    a = arr((6,))
    with pytest.warns(DeprecationWarning, match="init\\(str, NDArray\\) has been deprecated"):
        mx.init.Constant(3.0)(name, a)
    np.testing.assert_array_equal(a.asnumpy(), expect)


def test_legacy_special_names_and_errors():
    a = arr((6,))
    with pytest.warns(DeprecationWarning):
        mx.init.Zero()("stn_loc_bias", a)
    np.testing.assert_array_equal(a.asnumpy(), [1, 0, 0, 0, 1, 0])
    b = arr((1, 1, 4, 4))
    with pytest.warns(DeprecationWarning):
        mx.init.Zero()("upsampling0_weight", b)
    np.testing.assert_allclose(b.asnumpy(), bilinear_ref((1, 1, 4, 4)))
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="shape \\(6,\\)"):
        mx.init.Zero()("stn_loc_bias", arr((5,)))
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="Unknown init"):
        mx.init.Zero()("foo", arr((2,)))
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match="name must be string"):
        mx.init.Zero()(3, arr((2,)))


def test_target_must_be_ndarray():
    with pytest.raises(TypeError, match="must be an mxmod NDArray"):
        mx.init.Zero()(InitDesc("w_weight"), np.zeros(3))


def test_base_init_weight_abstract():
    with pytest.raises(NotImplementedError, match="Must override it"):
        mx.init.Initializer()(InitDesc("fc_weight"), arr((2,)))


# ----------------------------------------------------------------------------- dumps / registry
@pytest.mark.parametrize(
    "init, text",
    [
        (
            mx.init.Xavier(),
            '["xavier", {"rnd_type": "uniform", "factor_type": "avg", "magnitude": 3}]',
        ),
        (mx.init.Uniform(), '["uniform", {"scale": 0.07}]'),
        (mx.init.Normal(), '["normal", {"sigma": 0.01}]'),
        (mx.init.Zero(), '["zero", {}]'),
        (mx.init.MSRAPrelu(), '["msraprelu", {"factor_type": "avg", "slope": 0.25}]'),
        (mx.init.Constant(3), '["constant", {"value": 3}]'),
        (mx.init.LSTMBias(), '["lstmbias", {"forget_bias": 1.0}]'),
    ],
)
def test_dumps_verified_strings(init, text):
    assert init.dumps() == text
    assert mx.init.create(text) == init


def test_constant_array_dumps_to_list():
    c = mx.init.Constant(np.array([1.0, 2.0]))
    assert json.loads(c.dumps()) == ["constant", {"value": [1.0, 2.0]}]
    np.testing.assert_array_equal(run(c, "w_weight", (3, 2)), [[1, 2]] * 3)


def test_registry_names():
    from mxmod.initializer._base import _REGISTRY

    assert _REGISTRY.names() == [
        "bilinear",
        "constant",
        "fusedrnn",
        "lstmbias",
        "msraprelu",
        "normal",
        "one",
        "ones",
        "orthogonal",
        "uniform",
        "xavier",
        "zero",
        "zeros",
    ]


def test_create_forms():
    x = mx.init.Xavier(magnitude=2)
    assert mx.init.create(x) is x
    assert mx.init.create("XAVIER", magnitude=2) == x
    assert mx.init.create('{"initializer": "xavier", "magnitude": 2}') == x
    assert mx.init.create({"initializer": "xavier", "magnitude": 2}) == x
    assert mx.init.create(initializer="zeros") == mx.init.Zero()
    assert isinstance(mx.init.create("ones"), mx.init.One)
    m = mx.init.Mixed([".*"], [mx.init.Zero()])
    assert mx.init.create(m) is m
    assert mx.init.Xavier() != mx.init.Xavier(magnitude=2) and mx.init.Zero() != mx.init.One()


def test_create_errors():
    with pytest.raises(ValueError, match=r"unknown initializer 'nope'.*xavier"):
        mx.init.create("nope")
    with pytest.raises(ValueError, match="already an instance"):
        mx.init.create(mx.init.Zero(), 1)
    with pytest.raises(ValueError, match="no extra arguments"):
        mx.init.create('["zero", {}]', 1)
    with pytest.raises(TypeError, match="string type"):
        mx.init.create(3)
    with pytest.raises(TypeError, match="needs an initializer name"):
        mx.init.create()


@pytest.fixture
def restore_init_registry(monkeypatch):
    """Registrations made by a test vanish after it (the registry is process-wide)."""
    from mxmod.initializer._base import _REGISTRY

    monkeypatch.setattr(_REGISTRY, "_items", dict(_REGISTRY._items))
    return _REGISTRY


def test_register_and_alias(restore_init_registry):
    before = restore_init_registry.names()

    @mx.init.register
    @mx.init.alias("myinit_alias")
    class MyInit(mx.init.Initializer):
        def _init_weight(self, _, a):
            a[:] = 9

    np.testing.assert_array_equal(run(mx.init.create("myinit_alias"), "w_weight", (2,)), 9)
    assert isinstance(mx.init.create("MyInit"), MyInit)
    with pytest.warns(UserWarning, match="overrides 'myinit'"):
        mx.init.register(type("MyInit", (mx.init.Initializer,), {}))
    with pytest.raises(TypeError, match="Initializer subclasses"):
        mx.init.register(int)
    assert restore_init_registry.names() == sorted(before + ["myinit", "myinit_alias"])


# ----------------------------------------------------------------------------- distributions
def test_uniform_normal():
    mx.random.seed(0)
    u = run(mx.init.Uniform(0.5), "w_weight", (200, 100))
    assert -0.5 <= u.min() and u.max() < 0.5 and abs(u.std() - 0.5 / np.sqrt(3)) < 0.01
    assert abs(u.mean()) < 0.01
    n = run(mx.init.Normal(2.0), "w_weight", (200, 100))
    assert abs(n.std() - 2.0) < 0.05 and abs(n.mean()) < 0.05


def test_seed_reproducible():
    mx.random.seed(42)
    a = run(mx.init.Uniform(), "w_weight", (5,))
    mx.random.seed(42)
    b = run(mx.init.Uniform(), "w_weight", (5,))
    c = run(mx.init.Uniform(), "w_weight", (5,))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(b, c)


@pytest.mark.parametrize(
    "shape, factor_type, factor",
    [
        ((64, 32), "avg", (32 + 64) / 2),
        ((64, 32), "in", 32),
        ((64, 32), "out", 64),
        ((16, 8, 3, 3), "avg", (8 * 9 + 16 * 9) / 2),
    ],
)
def test_xavier_uniform_bounds(shape, factor_type, factor):
    scale = np.sqrt(3.0 / factor)
    v = run(mx.init.Xavier(factor_type=factor_type), "c_weight", shape)
    assert np.abs(v).max() <= scale and np.abs(v).max() > 0.9 * scale
    assert abs(v.std() - scale / np.sqrt(3)) < 0.1 * scale


def test_xavier_gaussian_and_msra():
    v = run(mx.init.Xavier("gaussian", "in", 2), "c_weight", (300, 200))
    assert abs(v.std() - np.sqrt(2 / 200)) < 0.003
    m = run(mx.init.MSRAPrelu("avg", 0.25), "c_weight", (300, 200))
    assert abs(m.std() - np.sqrt(2 / (1 + 0.0625) / 250)) < 0.003


def test_xavier_errors():
    with pytest.raises(ValueError, match="cannot be applied to vector fc_bias2_weight"):
        run(mx.init.Xavier(), "fc_bias2_weight", (4,))
    with pytest.raises(ValueError, match="Incorrect factor type 'sum'"):
        run(mx.init.Xavier(factor_type="sum"), "w_weight", (4, 4))
    with pytest.raises(ValueError, match="Unknown random type 'cauchy'"):
        run(mx.init.Xavier(rnd_type="cauchy"), "w_weight", (4, 4))


@pytest.mark.parametrize("shape", [(4, 12), (12, 4), (6, 2, 3)])
@pytest.mark.parametrize("rand_type", ["uniform", "normal"])
def test_orthogonal(shape, rand_type):
    v = run(mx.init.Orthogonal(scale=1.5, rand_type=rand_type), "w_weight", shape)
    m = v.reshape(shape[0], -1)
    gram = m @ m.T if m.shape[0] <= m.shape[1] else m.T @ m
    np.testing.assert_allclose(gram, 2.25 * np.eye(len(gram)), atol=1e-4)


def test_orthogonal_bad_rand_type():
    with pytest.raises(ValueError, match="rand_type must be 'uniform' or 'normal'"):
        mx.init.Orthogonal(rand_type="x")


def bilinear_ref(shape):
    """MXNet 1.9.1's loop, verbatim."""
    weight = np.zeros(np.prod(shape), dtype="float32")
    f = np.ceil(shape[3] / 2.0)
    c = (2 * f - 1 - f % 2) / (2.0 * f)
    for i in range(np.prod(shape)):
        x = i % shape[3]
        y = (i // shape[3]) % shape[2]
        weight[i] = (1 - abs(x / f - c)) * (1 - abs(y / f - c))
    return weight.reshape(shape)


@pytest.mark.parametrize("shape", [(1, 1, 4, 4), (2, 3, 3, 5)])
def test_bilinear_exact(shape):
    np.testing.assert_allclose(
        run(mx.init.Bilinear(), "up_weight", shape), bilinear_ref(shape), rtol=1e-6
    )


def test_bilinear_needs_4d():
    with pytest.raises(ValueError, match="4-D"):
        run(mx.init.Bilinear(), "up_weight", (4, 4))


def test_constants_and_lstmbias():
    np.testing.assert_array_equal(run(mx.init.One(), "w_weight", (2, 2)), 1)
    np.testing.assert_array_equal(run(mx.init.create("zeros"), "w_weight", (2, 2)), 0)
    np.testing.assert_array_equal(
        run(mx.init.LSTMBias(2.5), "w_weight", (12,)), [0, 0, 0, 2.5, 2.5, 2.5, 0, 0, 0, 0, 0, 0]
    )


def test_keeps_dtype_and_context():
    a = mx.nd.zeros((3, 4), ctx=mx.cpu(1), dtype="float16")
    mx.init.Xavier()(InitDesc("w_weight"), a)
    assert a.dtype == np.float16 and a.context == mx.cpu(1)
    assert list(a._data.devices())[0] == mx.cpu(1).jax_device


def test_set_verbosity_logs(caplog):
    init = mx.init.One().set_verbosity(True)
    with caplog.at_level(logging.INFO):
        init(InitDesc("fc_bias"), arr((4,)))
        init(InitDesc("fc_weight"), arr((4,)))
    assert "Initialized fc_bias as bias: 0.0" in caplog.text
    assert "Initialized fc_weight as weight: 1.0" in caplog.text


# ----------------------------------------------------------------------------- Mixed / Load
def test_mixed():
    m = mx.init.Mixed(["fc1.*", ".*"], [mx.init.Constant(2), mx.init.Constant(5)])
    a, b = arr((2,)), arr((2,))
    m(InitDesc("fc1_weight"), a)
    m(InitDesc("xfc1_weight"), b)  # re.match is anchored at the start
    np.testing.assert_array_equal(a.asnumpy(), 2)
    np.testing.assert_array_equal(b.asnumpy(), 5)
    with pytest.raises(ValueError, match="Parameter name conv_weight did not match any pattern"):
        mx.init.Mixed(["fc.*"], [mx.init.Zero()])(InitDesc("conv_weight"), arr((2,)))
    with pytest.raises(ValueError, match="one initializer per pattern"):
        mx.init.Mixed(["a", "b"], [mx.init.Zero()])


def test_load(tmp_path, caplog):
    src = {"arg:fc_weight": mx.nd.array([[1.0, 2.0]]), "aux:bn_moving_mean": np.array([3.0])}
    ld = mx.init.Load(src, default_init=mx.init.One(), verbose=True)
    a, b, c = arr((1, 2)), arr((1,)), arr((2,))
    with caplog.at_level(logging.INFO):
        ld(InitDesc("fc_weight"), a)
        ld(InitDesc("bn_moving_mean"), b)
        ld(InitDesc("other_weight"), c)
    np.testing.assert_array_equal(a.asnumpy(), [[1, 2]])
    np.testing.assert_array_equal(b.asnumpy(), [3])
    np.testing.assert_array_equal(c.asnumpy(), [1, 1])
    assert "Initialized fc_weight by loading" in caplog.text
    assert "Initialized other_weight by default" in caplog.text
    with pytest.raises(
        ValueError,
        match=r"fc_weight cannot be initialized from loading\. Shape "
        r"mismatch, target \(2, 2\) vs loaded \(1, 2\)",
    ):
        ld(InitDesc("fc_weight"), arr((2, 2)))
    with pytest.raises(ValueError, match="Cannot Initialize x_weight. Not found"):
        mx.init.Load({})(InitDesc("x_weight"), arr((2,)))
    with pytest.raises(TypeError, match="dict of name -> array"):
        mx.init.Load([1, 2])
    if hasattr(mx.nd, "save"):
        fname = os.path.join(tmp_path, "p.params")
        mx.nd.save(fname, {"arg:fc_weight": mx.nd.array([[4.0, 5.0]])})
        mx.init.Load(fname)(InitDesc("fc_weight"), a)
        np.testing.assert_array_equal(a.asnumpy(), [[4, 5]])


# ----------------------------------------------------------------------------- FusedRNN
def fused_size(mode, ni, h, layers, bidir):
    m = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}[mode]
    b = 2 if bidir else 1
    size = 0
    for layer in range(layers):
        inp = ni if layer == 0 else b * h
        size += b * m * h * (inp + h + 2)
    return size


@pytest.mark.parametrize(
    "mode, layers, bidir",
    [
        ("lstm", 2, False),
        ("gru", 1, True),
        ("rnn_tanh", 2, True),
    ],
)
def test_fused_rnn_layout(mode, layers, bidir):
    h, ni = 3, 5
    m = {"lstm": 4, "gru": 3, "rnn_tanh": 1}[mode]
    b = 2 if bidir else 1
    size = fused_size(mode, ni, h, layers, bidir)
    fused = mx.init.FusedRNN(mx.init.One(), h, layers, mode, bidir, forget_bias=7.0)
    v = run(mx.init.Uniform(), "rnn_parameters", (size,), {"__init__": fused.dumps()})
    n_bias = layers * b * 2 * m * h
    np.testing.assert_array_equal(v[: size - n_bias], 1.0)  # all weights first
    bias = v[size - n_bias :].reshape(layers * b * 2, m, h)
    if mode == "lstm":  # i2h and h2h forget gates both get forget_bias (MXNet)
        np.testing.assert_array_equal(bias[:, 1], 7.0)
        np.testing.assert_array_equal(bias[:, [0, 2, 3]], 0.0)
    else:
        np.testing.assert_array_equal(bias, 0.0)


def test_fused_rnn_global_init_json_and_errors():
    size = fused_size("lstm", 2, 2, 1, False)
    a = arr((size,))
    mx.init.Constant(4.0)(
        InitDesc("rnn_parameters", {"__init__": mx.init.FusedRNN(None, 2, 1, "lstm").dumps()}), a
    )
    assert (a.asnumpy() == 4.0).sum() == 4 * 2 * (2 + 2)  # weights from the global init
    f = mx.init.FusedRNN('["constant", {"value": 2}]', 2, 1, "lstm")
    assert json.loads(f.dumps())[1]["init"] == '["constant", {"value": 2}]'
    with pytest.raises(ValueError, match="does not fit mode='lstm'"):
        f._init_weight(InitDesc("rnn_parameters"), arr((size + 1,)))
    with pytest.raises(ValueError, match="no init given and no global initializer"):
        mx.init.FusedRNN(None, 2, 1, "lstm")._init_weight(InitDesc("p"), arr((size,)))
    with pytest.raises(ValueError, match="mode must be one of"):
        mx.init.FusedRNN(None, 2, 1, "lstmx")
