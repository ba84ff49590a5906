"""``mx.sym.random``: sampling symbols with number parameters, as MXNet's (``_random_<dist>``
nodes), ``multinomial`` (``_sample_multinomial``) and the ``*_like`` operators."""

from ..base import MXNetError
from .creation import creator
from .symbol import Symbol


def _with_dtype(kwargs: dict, dtype) -> dict:
    return kwargs if dtype is None else {**kwargs, "dtype": dtype}


def _node(op: str, fn_name: str, params: dict, shape, dtype, kwargs: dict):
    """A ``_random_<dist>`` node for number parameters; Symbol parameters (all of them)
    make a ``_sample_<dist>`` node: ``param.shape + shape`` samples, as MXNet."""
    symbols = [isinstance(v, Symbol) for v in params.values()]
    if not any(symbols):
        return creator(op)(**params, shape=shape, **_with_dtype(kwargs, dtype))
    if not all(symbols):
        raise MXNetError(
            f"mx.sym.random.{fn_name}: distribution parameters must be all Symbols or all "
            f"numbers, got {', '.join(f'{k}={type(v).__name__}' for k, v in params.items())}"
        )
    return creator(f"_sample_{fn_name}")(
        *params.values(), shape=shape, **_with_dtype(kwargs, dtype)
    )


def uniform(low=0, high=1, shape=(), dtype=None, **kwargs):
    """Samples from U[low, high) of ``shape``, as ``mx.sym.random.uniform``."""
    return _node("_random_uniform", "uniform", dict(low=low, high=high), shape, dtype, kwargs)


def normal(loc=0, scale=1, shape=(), dtype=None, **kwargs):
    """Samples from N(loc, scale^2) of ``shape``, as ``mx.sym.random.normal``."""
    return _node("_random_normal", "normal", dict(loc=loc, scale=scale), shape, dtype, kwargs)


def randn(*shape, **kwargs):
    """``normal(loc, scale)`` with the shape as arguments: ``randn(2, 3, loc=1.0)``."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    loc, scale = kwargs.pop("loc", 0), kwargs.pop("scale", 1)
    return normal(loc, scale, shape, kwargs.pop("dtype", None), **kwargs)


def exponential(scale=1, shape=(), dtype=None, **kwargs):
    """Exponential samples of ``scale`` (a ``_random_exponential`` node of rate 1/scale)."""
    if isinstance(scale, Symbol):
        return _node(
            "_random_exponential", "exponential", dict(lam=1.0 / scale), shape, dtype, kwargs
        )
    if not scale > 0:
        raise MXNetError(f"mx.sym.random.exponential: scale has to be positive, got {scale}")
    return _node("_random_exponential", "exponential", dict(lam=1.0 / scale), shape, dtype, kwargs)


def gamma(alpha=1, beta=1, shape=(), dtype=None, **kwargs):
    """Gamma samples of shape ``alpha`` and scale ``beta``."""
    return _node("_random_gamma", "gamma", dict(alpha=alpha, beta=beta), shape, dtype, kwargs)


def poisson(lam=1, shape=(), dtype=None, **kwargs):
    """Poisson samples of rate ``lam`` (as floats)."""
    return _node("_random_poisson", "poisson", dict(lam=lam), shape, dtype, kwargs)


def negative_binomial(k=1, p=1, shape=(), dtype=None, **kwargs):
    """Negative binomial samples: failures (probability ``1 - p``) before ``k`` successes."""
    params = dict(k=k, p=p)
    return _node("_random_negative_binomial", "negative_binomial", params, shape, dtype, kwargs)


def generalized_negative_binomial(mu=1, alpha=1, shape=(), dtype=None, **kwargs):
    """Negative binomial samples of mean ``mu`` and dispersion ``alpha``."""
    name = "generalized_negative_binomial"
    return _node(f"_random_{name}", name, dict(mu=mu, alpha=alpha), shape, dtype, kwargs)


def multinomial(data, shape=(), get_prob=True, dtype="int32", **kwargs):
    """Outcomes drawn from the distributions on ``data``'s last axis, and with ``get_prob``
    (the default here, as in MXNet's ``mx.sym.random``) their log-probabilities."""
    return creator("_sample_multinomial")(
        data, shape=shape, get_prob=get_prob, dtype=dtype, **kwargs
    )


def randint(low, high, shape=(), dtype=None, **kwargs):
    """Integers drawn uniformly from [low, high) (int32 unless ``dtype`` says otherwise)."""
    return _node("_random_randint", "randint", dict(low=low, high=high), shape, dtype, kwargs)


def shuffle(data, **kwargs):
    """``data`` with its first axis randomly permuted (a ``_shuffle`` node)."""
    return creator("_shuffle")(data, **kwargs)


uniform_like = creator("_random_uniform_like")
normal_like = creator("_random_normal_like")
exponential_like = creator("_random_exponential_like")
gamma_like = creator("_random_gamma_like")
poisson_like = creator("_random_poisson_like")
negative_binomial_like = creator("_random_negative_binomial_like")
generalized_negative_binomial_like = creator("_random_generalized_negative_binomial_like")

__all__ = [
    "uniform",
    "normal",
    "randn",
    "exponential",
    "gamma",
    "poisson",
    "negative_binomial",
    "generalized_negative_binomial",
    "multinomial",
    "randint",
    "shuffle",
    "uniform_like",
    "normal_like",
    "exponential_like",
    "gamma_like",
    "poisson_like",
    "negative_binomial_like",
    "generalized_negative_binomial_like",
]
