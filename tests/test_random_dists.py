"""mx.nd.random / mx.sym.random beyond uniform and normal: exponential, gamma, poisson,
(generalized) negative binomial, multinomial, randn, the *_like samplers, the flat
random_*/sample_* names; moments, shapes, dtypes, seeds, errors, graphs and compiles."""

import json

import numpy as np
import pytest

import mxmod as mx
from compile_counts import count_compiles
from mxmod.base import MXNetError

N = 20000


def _moments(x):
    a = x.asnumpy().astype(np.float64)
    return a.mean(), a.var()


# (function, args, mean, variance) for N draws; the standard error of the mean is
# sqrt(var / N), below 0.03 for all of these
MOMENTS = [
    (mx.nd.random.exponential, (2.0,), 2.0, 4.0),
    (mx.nd.random.gamma, (3.0, 2.0), 6.0, 12.0),  # beta is the scale
    (mx.nd.random.gamma, (0.5, 1.0), 0.5, 0.5),  # alpha < 1
    (mx.nd.random.poisson, (4.0,), 4.0, 4.0),
    (mx.nd.random.poisson, (30.0,), 30.0, 30.0),  # JAX's other Poisson algorithm
    (mx.nd.random.negative_binomial, (3, 0.4), 4.5, 11.25),  # k(1-p)/p, k(1-p)/p^2
    (mx.nd.random.generalized_negative_binomial, (2.0, 0.3), 2.0, 3.2),  # mu + alpha mu^2
    (mx.nd.random.generalized_negative_binomial, (2.0, 0.0), 2.0, 2.0),  # Poisson(mu)
    (mx.nd.random.randn, (), 0.0, 1.0),
]


@pytest.mark.parametrize("fn, args, mean, var", MOMENTS, ids=lambda v: getattr(v, "__name__", ""))
def test_moments_shape_and_dtype(fn, args, mean, var):
    mx.random.seed(11)
    x = fn(N) if fn is mx.nd.random.randn else fn(*args, shape=(N,))
    assert x.shape == (N,) and x.dtype == np.float32  # counts are floats too, as in MXNet
    m, v = _moments(x)
    assert abs(m - mean) < 5 * np.sqrt(var / N) + 1e-3, (m, mean)
    assert abs(v - var) < 0.08 * var, (v, var)
    if fn in (mx.nd.random.poisson, mx.nd.random.negative_binomial):
        a = x.asnumpy()
        assert (a >= 0).all() and (a == np.round(a)).all()


def test_defaults_and_dtypes():
    mx.random.seed(0)
    assert mx.nd.random.gamma().shape == (1,)  # MXNet's shape when none is given
    assert mx.nd.random.poisson(shape=(2, 3)).shape == (2, 3)
    assert mx.nd.random.exponential(shape=4, dtype="float16").dtype == np.float16
    assert mx.nd.random.negative_binomial(shape=(5,)).asnumpy().tolist() == [0.0] * 5  # p=1
    assert mx.nd.random.randn(2, 3).shape == (2, 3) and mx.nd.random.randn().shape == (1,)
    r = mx.nd.random.randn(4000, loc=5, scale=2).asnumpy()
    assert abs(r.mean() - 5) < 0.15 and abs(r.std() - 2) < 0.15
    out = mx.nd.zeros((2, 2), dtype="float16")
    assert mx.nd.random.gamma(2.0, 1.0, out=out) is out and out.dtype == np.float16
    with pytest.raises(ValueError, match="poisson: distribution parameters must be NDArrays or"):
        mx.nd.random.poisson("4")
    with pytest.raises(ValueError, match="gamma: dtype must be a float type, got int32"):
        mx.nd.random.gamma(shape=(2,), dtype="int32")


def test_ndarray_parameters_give_param_shape_plus_shape():
    mx.random.seed(1)
    alpha, beta = mx.nd.array([1.0, 20.0, 3.0]), mx.nd.array([2.0, 0.5, 4.0])
    g = mx.nd.random.gamma(alpha, beta, shape=(N // 4,))
    assert g.shape == (3, N // 4) and g.dtype == np.float32
    np.testing.assert_allclose(g.asnumpy().mean(axis=1), [2.0, 10.0, 12.0], rtol=0.06)
    assert mx.nd.random.gamma(alpha, beta).shape == (3,)  # no shape: one per element
    assert mx.nd.random.uniform(alpha, alpha + 1).shape == (3,)
    lam = mx.nd.array([[1.0, 10.0], [0.0, 4.0]])
    p = mx.nd.random.poisson(lam, shape=(2, 3000)).asnumpy()
    assert p.shape == (2, 2, 2, 3000)
    np.testing.assert_allclose(p.mean(axis=(2, 3)), [[1, 10], [0, 4]], atol=0.25)
    scale = mx.nd.array([1.0, 3.0])
    e = mx.nd.random.exponential(scale, shape=(N // 2,)).asnumpy()
    np.testing.assert_allclose(e.mean(axis=1), [1.0, 3.0], rtol=0.06)
    nb = mx.nd.random.negative_binomial(mx.nd.array([3.0]), mx.nd.array([0.4]), shape=(N,))
    assert abs(nb.asnumpy().mean() - 4.5) < 0.15
    gnb = mx.nd.random.generalized_negative_binomial(
        mx.nd.array([2.0, 2.0]), mx.nd.array([0.3, 0.0]), shape=(N,)
    ).asnumpy()
    np.testing.assert_allclose(gnb.var(axis=1), [3.2, 2.0], rtol=0.08)
    out = mx.nd.zeros((3, 5))
    assert mx.nd.random.gamma(alpha, beta, shape=5, out=out) is out and out.asnumpy().min() > 0
    msg = r"Provided = \[3, 4\], inferred shape=\[3\] .*; pass shape=\(4,\)"
    with pytest.raises(MXNetError, match=msg):
        mx.nd.random.gamma(alpha, beta, out=mx.nd.zeros((3, 4)))
    with pytest.raises(MXNetError, match=r"gamma: NDArray parameters must have one shape"):
        mx.nd.random.gamma(alpha, mx.nd.array([1.0, 2.0]))


def test_flat_names_and_sample_ops():
    mx.random.seed(2)
    assert mx.nd.sample_multinomial is mx.nd.random.multinomial
    # MXNet's operators: their attributes in its order, by position or name
    assert mx.nd.random_gamma(9, 0.5, (2, 2)).shape == (2, 2)
    assert abs(mx.nd.random_gamma(alpha=3, beta=2, shape=(N,)).asnumpy().mean() - 6) < 0.15
    assert mx.nd.random_poisson(4, (3,), None, "float16").dtype == np.float16
    assert abs(mx.nd.random_negative_binomial(3, 0.4, N).asnumpy().mean() - 4.5) < 0.15
    gnb = mx.nd.random_generalized_negative_binomial(mu=2, alpha=0.3, shape=N)
    assert abs(gnb.asnumpy().var() - 3.2) < 0.25
    # the operator's exponential takes the rate lam, mx.nd.random.exponential the scale
    assert abs(mx.nd.random_exponential(4, shape=(N,)).asnumpy().mean() - 0.25) < 0.01
    with pytest.raises(TypeError, match="random_gamma got multiple values for 'shape'"):
        mx.nd.random_gamma(1, 1, (2,), shape=(2,))
    lam = mx.nd.array([0.5, 4.0])
    se = mx.nd.sample_exponential(lam, shape=(N // 2,)).asnumpy()
    np.testing.assert_allclose(se.mean(axis=1), [2.0, 0.25], rtol=0.06)
    lo, hi = mx.nd.array([0.0, 10.0]), mx.nd.array([1.0, 11.0])
    u = mx.nd.sample_uniform(lo, hi, (2, 3))
    assert u.shape == (2, 2, 3) and u.asnumpy()[1].min() >= 10
    n = mx.nd.sample_normal(mu=mx.nd.array([5.0]), sigma=mx.nd.array([0.1]), shape=100)
    assert n.shape == (1, 100) and abs(n.asnumpy().mean() - 5) < 0.05
    for fn, k in [
        (mx.nd.sample_gamma, 2),
        (mx.nd.sample_poisson, 1),
        (mx.nd.sample_negative_binomial, 2),
        (mx.nd.sample_generalized_negative_binomial, 2),
    ]:
        assert fn(*[mx.nd.array([1.0, 0.5])] * k).shape == (2,)
    with pytest.raises(TypeError, match=r"sample_gamma: alpha must be an NDArray.*random.gamma"):
        mx.nd.sample_gamma(2.0, 1.0)


def test_like_samplers_take_datas_shape_and_dtype():
    mx.random.seed(3)
    data = mx.nd.zeros((40, 500))
    for fn, kwargs, mean in [
        (mx.nd.random.uniform_like, dict(low=2, high=4), 3.0),
        (mx.nd.random.normal_like, dict(loc=-1, scale=0.5), -1.0),
        (mx.nd.random.exponential_like, dict(lam=4), 0.25),  # a rate, as MXNet's operator
        (mx.nd.random.gamma_like, dict(alpha=3, beta=2), 6.0),
        (mx.nd.random.poisson_like, dict(lam=4), 4.0),
        (mx.nd.random.negative_binomial_like, dict(k=3, p=0.4), 4.5),
        (mx.nd.random.generalized_negative_binomial_like, dict(mu=2, alpha=0.3), 2.0),
    ]:
        x = fn(data, **kwargs)
        assert x.shape == (40, 500) and x.dtype == np.float32, fn.__name__
        assert abs(x.asnumpy().mean() - mean) < 0.03 * max(1, mean) + 0.02, fn.__name__
    assert mx.nd.random.gamma_like(mx.nd.ones((3,), dtype="float16")).dtype == np.float16
    with pytest.raises(MXNetError, match="gamma_like: data must be a float array"):
        mx.nd.random.gamma_like(mx.nd.ones((3,), dtype="int32"))


def test_seed_makes_every_sampler_reproducible():
    p = mx.nd.array([[0.1, 0.2, 0.7]])

    def draws():
        return [
            mx.nd.random.exponential(2.0, shape=(6,)),
            mx.nd.random.gamma(mx.nd.array([1.0, 2.0]), mx.nd.array([1.0, 1.0]), shape=3),
            mx.nd.random.poisson(3.0, shape=(6,)),
            mx.nd.random.negative_binomial(3, 0.4, shape=(6,)),
            mx.nd.random.generalized_negative_binomial(2.0, 0.3, shape=(6,)),
            mx.nd.random.multinomial(p, shape=8),
            mx.nd.random.poisson_like(mx.nd.zeros((2, 3)), lam=5),
        ]

    mx.random.seed(42)
    a = [x.asnumpy() for x in draws()]
    mx.random.seed(42)
    for x, y in zip(a, draws()):
        np.testing.assert_array_equal(y.asnumpy(), x)
    mx.random.seed(43)
    assert not np.array_equal(mx.nd.random.exponential(2.0, shape=(6,)).asnumpy(), a[0])


def test_multinomial_frequencies_and_log_probs():
    mx.random.seed(4)
    probs = np.array([[0.0, 0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1, 0.0]], np.float32)
    s, logp = mx.nd.random.multinomial(mx.nd.array(probs), shape=(N,), get_prob=True)
    assert s.shape == logp.shape == (2, N) and s.dtype == np.int32 and logp.dtype == np.float32
    s = s.asnumpy()
    for row in range(2):
        freq = np.bincount(s[row], minlength=5) / N
        np.testing.assert_allclose(freq, probs[row], atol=0.015)
        assert freq[probs[row] == 0].sum() == 0  # never an impossible outcome
    np.testing.assert_allclose(logp.asnumpy(), np.log(np.take_along_axis(probs, s, axis=1)))
    p = mx.nd.array(probs)
    assert mx.nd.random.multinomial(p).shape == (2,)  # one sample per distribution
    assert mx.nd.random.multinomial(mx.nd.array([0.5, 0.5])).shape == (1,)  # MXNet's 1-d rule
    assert mx.nd.random.multinomial(mx.nd.array([0.5, 0.5]), shape=(2, 3)).shape == (2, 3)
    assert mx.nd.random.multinomial(p, dtype="float32").dtype == np.float32
    out = mx.nd.zeros((2, 3), dtype="int32")
    assert mx.nd.random.multinomial(p, shape=3, out=out) is out
    with pytest.raises(MXNetError, match=r"Shape inconsistent, Provided = \[2\]"):
        mx.nd.random.multinomial(p, shape=3, out=mx.nd.zeros((2,), dtype="int32"))
    with pytest.raises(MXNetError, match="multinomial: data must be float probabilities"):
        mx.nd.random.multinomial(mx.nd.array([1, 2], dtype="int32"))
    with pytest.raises(MXNetError, match="multinomial: dtype must be one of"):
        mx.nd.random.multinomial(p, dtype="int64")


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: mx.nd.random.gamma(-1, 1), "alpha parameter in gamma distribution has to be "),
        (lambda: mx.nd.random.gamma(1, 0), "beta parameter in gamma distribution has to be posi"),
        (lambda: mx.nd.random.exponential(-2.0), r"scale \(1/lambda\).*positive, got -2.0"),
        (lambda: mx.nd.random_exponential(lam=0), "lambda parameter in exponential distribution"),
        (lambda: mx.nd.random.poisson(-0.5), "lambda .* poisson .* non-negative, got -0.5"),
        (lambda: mx.nd.random.negative_binomial(-1, 0.5), "k parameter .* non-negative, got -1"),
        (lambda: mx.nd.random.negative_binomial(2, 1.5), r"p parameter .* in \(0, 1\]"),
        (lambda: mx.nd.random.negative_binomial(2.5, 0.5), "k must be an integer.*NDArray"),
        (lambda: mx.nd.random.generalized_negative_binomial(-1, 1), "mu parameter .* got -1"),
        (lambda: mx.nd.random.generalized_negative_binomial(1, -1), "alpha parameter .* -1"),
        (lambda: mx.nd.random.gamma_like(mx.nd.ones(2), alpha=0), "alpha parameter in gamma"),
    ],
)
def test_bad_parameters_raise_mxnets_errors(call, message):
    with pytest.raises(MXNetError, match=message):
        call()


def test_new_parameter_values_compile_nothing():
    x = mx.nd.ones((3, 3))
    mx.nd.random.uniform(shape=(2,)).wait_to_read()  # what any first draw compiles
    alpha, beta = mx.nd.array([1.0, 2.0]), mx.nd.array([1.0, 3.0])
    (alpha + 1).wait_to_read()
    probs = mx.nd.array([[0.2, 0.8], [0.5, 0.5]])
    cases = {  # name: (call, the same call with other values)
        "gamma": (
            lambda: mx.nd.random.gamma(2.0, 1.0, shape=(7, 3)),
            lambda: mx.nd.random.gamma(3.0, 0.5, shape=(7, 3)),
        ),
        "exponential": (
            lambda: mx.nd.random.exponential(2.0, shape=(7, 3)),
            lambda: mx.nd.random.exponential(0.5, shape=(7, 3)),
        ),
        "poisson": (
            lambda: mx.nd.random.poisson(2.0, shape=(7, 3)),
            lambda: mx.nd.random.poisson(40.0, shape=(7, 3)),
        ),
        "negative_binomial": (
            lambda: mx.nd.random.negative_binomial(3, 0.4, shape=(7, 3)),
            lambda: mx.nd.random.negative_binomial(5, 0.9, shape=(7, 3)),
        ),
        "generalized_negative_binomial": (
            lambda: mx.nd.random.generalized_negative_binomial(2.0, 0.3, shape=(7, 3)),
            lambda: mx.nd.random.generalized_negative_binomial(4.0, 0.0, shape=(7, 3)),
        ),
        "sample_gamma": (
            lambda: mx.nd.random.gamma(alpha, beta, shape=(4,)),
            lambda: mx.nd.random.gamma(beta, alpha, shape=(4,)),
        ),
        "gamma_like": (
            lambda: mx.nd.random.gamma_like(x, alpha=2.0),
            lambda: mx.nd.random.gamma_like(x, alpha=5.0, beta=2.0),
        ),
        "multinomial": (
            lambda: mx.nd.random.multinomial(probs, shape=3),
            lambda: mx.nd.random.multinomial(mx.nd.array([[0.1, 0.9], [0.3, 0.7]]), shape=3),
        ),
    }
    for name, (first, again) in cases.items():
        assert count_compiles(lambda: first().wait_to_read()) == 1, name
        assert count_compiles(lambda: again().wait_to_read()) == 0, name


# --- symbols


def _forward(sym, **shapes):
    return [o.asnumpy() for o in sym.simple_bind(mx.cpu(), **shapes).forward()]


def test_symbol_samplers_bind_with_mxnets_ops_and_attrs():
    mx.random.seed(5)
    cases = [  # symbol, MXNet's op, its attributes in the JSON, mean
        (mx.sym.random.exponential(scale=2, shape=(4000,)), "_random_exponential", "lam", 2.0),
        (mx.sym.random.gamma(alpha=3, beta=2, shape=(4000,)), "_random_gamma", "alpha", 6.0),
        (mx.sym.random.poisson(lam=4, shape=(4000,)), "_random_poisson", "lam", 4.0),
        (
            mx.sym.random.negative_binomial(k=3, p=0.4, shape=(4000,)),
            "_random_negative_binomial",
            "k",
            4.5,
        ),
        (
            mx.sym.random.generalized_negative_binomial(mu=2, alpha=0.3, shape=(4000,)),
            "_random_generalized_negative_binomial",
            "mu",
            2.0,
        ),
        (mx.sym.random_gamma(alpha=3, beta=2, shape=(4000,)), "_random_gamma", "beta", 6.0),
        (mx.sym.random_poisson(lam=4, shape=(4000,)), "_random_poisson", "lam", 4.0),
    ]
    for sym, op, attr, mean in cases:
        node = json.loads(sym.tojson())["nodes"][-1]
        assert node["op"] == op and attr in node["attrs"], node
        assert sym.infer_shape()[1] == [(4000,)] and sym.infer_type()[1] == [np.float32]
        (out,) = _forward(sym)
        assert out.shape == (4000,) and out.dtype == np.float32
        assert abs(out.mean() - mean) < 0.1 * mean, (op, out.mean())
    assert json.loads(cases[0][0].tojson())["nodes"][0]["attrs"]["lam"] == "0.5"  # 1/scale
    half = mx.sym.random.gamma(alpha=2, shape=(3,), dtype="float16")
    assert _forward(half)[0].dtype == np.float16


def test_symbol_json_from_mxnet_loads_and_runs():
    nodes = [
        {
            "op": "_random_gamma",
            "name": "g",
            "attrs": {"alpha": "9", "beta": "0.5", "shape": "(2, 2)"},
        },
        {"op": "_random_negative_binomial", "name": "nb", "attrs": {"k": "3", "shape": "(5,)"}},
        {"op": "null", "name": "p", "inputs": []},
        {
            "op": "_sample_multinomial",
            "name": "m",
            "attrs": {"shape": "(3,)", "get_prob": "True", "dtype": "int32"},
            "inputs": [[2, 0, 0]],
        },
    ]
    for n in nodes:
        n.setdefault("inputs", [])
    graph = {
        "nodes": nodes,
        "arg_nodes": [2],
        "node_row_ptr": [0, 1, 2, 3, 5],
        "heads": [[0, 0, 0], [1, 0, 0], [3, 0, 0], [3, 1, 0]],
        "attrs": {"mxnet_version": ["int", 10901]},
    }
    sym = mx.sym.load_json(json.dumps(graph))
    assert sym.list_outputs() == ["g_output", "nb_output", "m_output0", "m_output1"]
    g, nb, s, logp = _forward(sym, p=(2, 4))
    assert g.shape == (2, 2) and nb.shape == (5,) and s.shape == logp.shape == (2, 3)
    assert nb.tolist() == [0.0] * 5  # p defaults to 1: no failures
    assert s.dtype == np.int32


def test_symbol_multinomial_and_its_gradient():
    probs = np.array([[0.0, 0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1, 0.0]], np.float32)
    m = mx.sym.random.multinomial(mx.sym.var("p"), shape=(3,))  # get_prob=True by default
    assert m.list_outputs() == ["_sample_multinomial0_output0", "_sample_multinomial0_output1"]
    _, out_shapes, _ = m.infer_shape(p=(2, 5))
    assert out_shapes == [(2, 3), (2, 3)]
    assert m.infer_type(p=np.float32)[1] == [np.int32, np.float32]
    ex = m.simple_bind(mx.cpu(), p=(2, 5))
    ex.arg_dict["p"][:] = probs
    s, logp = (o.asnumpy() for o in ex.forward(is_train=True))
    np.testing.assert_allclose(logp, np.log(np.take_along_axis(probs, s, axis=1)))
    ex.backward([mx.nd.zeros((2, 3), dtype="int32"), mx.nd.ones((2, 3))])
    want = np.zeros_like(probs)  # MXNet's gradient: 1/p at each drawn outcome
    for row in range(2):
        np.add.at(want[row], s[row], 1 / probs[row, s[row]])
    np.testing.assert_allclose(ex.grad_dict["p"].asnumpy(), want, rtol=1e-6)
    one = mx.sym.random.multinomial(mx.sym.var("p"), get_prob=False, dtype="uint8")
    assert one.list_outputs() == ["_sample_multinomial1_output"]
    assert _forward(one, p=(4, 3))[0].dtype == np.uint8


def test_symbol_like_ops():
    x = mx.sym.var("x")
    for fn, op in [
        (mx.sym.random.uniform_like, "_random_uniform_like"),
        (mx.sym.random.normal_like, "_random_normal_like"),
        (mx.sym.random.exponential_like, "_random_exponential_like"),
        (mx.sym.random.gamma_like, "_random_gamma_like"),
        (mx.sym.random.poisson_like, "_random_poisson_like"),
        (mx.sym.random.negative_binomial_like, "_random_negative_binomial_like"),
        (
            mx.sym.random.generalized_negative_binomial_like,
            "_random_generalized_negative_binomial_like",
        ),
    ]:
        sym = fn(x)
        assert json.loads(sym.tojson())["nodes"][-1]["op"] == op
        assert _forward(sym, x=(3, 4))[0].shape == (3, 4)


def test_symbol_errors():
    with pytest.raises(MXNetError, match="alpha parameter in gamma distribution has to be"):
        _forward(mx.sym.random.gamma(alpha=-1, shape=(2,)))
    with pytest.raises(MXNetError, match="exponential: scale has to be positive, got 0"):
        mx.sym.random.exponential(scale=0)
    with pytest.raises(MXNetError, match="all Symbols or all numbers, got alpha=Symbol, beta=int"):
        mx.sym.random.gamma(alpha=mx.sym.var("a"))
    with pytest.raises(MXNetError, match="attribute k=.* is invalid"):
        mx.sym.random.negative_binomial(k=1.5, shape=(2,))


def test_symbol_randint_and_shuffle():
    draws = mx.sym.random.randint(2, 7, shape=(2000,)).bind(mx.cpu(), {}).forward()[0]
    values = draws.asnumpy()
    assert draws.dtype == np.int32 and sorted(set(values.tolist())) == [2, 3, 4, 5, 6]
    data = mx.sym.var("d")
    x = np.arange(20.0).reshape(10, 2)
    out = mx.sym.random.shuffle(data).bind(mx.cpu(), {"d": mx.nd.array(x)}).forward()[0]
    rows = out.asnumpy()
    assert sorted(rows[:, 0].tolist()) == x[:, 0].tolist()  # a permutation of the rows
    np.testing.assert_array_equal(rows[:, 1] - rows[:, 0], 1.0)  # rows kept whole
    with pytest.raises(mx.base.MXNetError, match="low=5 must be at most high=4"):
        mx.sym.random.randint(5, 4, shape=(2,)).bind(mx.cpu(), {}).forward()


@pytest.mark.parametrize(
    "fn,params,mean",
    [
        ("normal", {"loc": [0.0, 10.0], "scale": [1.0, 0.5]}, [0.0, 10.0]),
        ("uniform", {"low": [0.0, 2.0], "high": [1.0, 4.0]}, [0.5, 3.0]),
        ("gamma", {"alpha": [2.0, 5.0], "beta": [1.0, 0.5]}, [2.0, 2.5]),
        ("exponential", {"scale": [2.0, 0.5]}, [2.0, 0.5]),
        ("poisson", {"lam": [1.0, 6.0]}, [1.0, 6.0]),
        ("generalized_negative_binomial", {"mu": [2.0, 4.0], "alpha": [0.5, 0.0]}, [2.0, 4.0]),
    ],
)
def test_symbol_parameters_make_sample_nodes(fn, params, mean):
    names = {k: mx.sym.var(k) for k in params}
    sym = getattr(mx.sym.random, fn)(**names, shape=(20000,))
    assert sym.infer_shape(**{k: (2,) for k in params})[1] == [(2, 20000)]
    args = {k: mx.nd.array(v) for k, v in params.items()}
    out = mx.sym.load_json(sym.tojson()).bind(mx.cpu(), args).forward()[0].asnumpy()
    np.testing.assert_allclose(out.mean(axis=1), mean, rtol=0.05, atol=0.03)


def test_sample_operator_shapes_must_agree():
    sym = mx.sym.random.normal(mx.sym.var("m"), mx.sym.var("s"))
    with pytest.raises(MXNetError, match="one shape"):
        sym.infer_shape(m=(2,), s=(3,))
