"""Sampling operators, as MXNet 1.9.1 names them:

* ``_random_<dist>`` (no inputs; ``mx.sym.random_gamma``, ``mx.sym.random.gamma``) for
  uniform, normal, gamma, exponential, poisson, negative_binomial and
  generalized_negative_binomial, with MXNet's attribute names and defaults;
* ``_random_<dist>_like`` (the shape and dtype of ``data``; ``mx.sym.random.gamma_like``);
* ``_sample_multinomial`` (indices drawn from the probabilities in ``data``'s last axis).

``SAMPLERS`` (the JAX draw of each distribution) and :func:`multinomial_draw` are shared with
``mx.nd.random``. Each node draws from its own ``ctx.key()``, a fresh key per forward (as the
Dropout mask), so results are reproducible under ``mx.random.seed`` but are not the values of
MXNet's generator. MXNet checks the parameters when it draws; so do these lowerings.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ..base import MXNetError
from ._attrs import REQUIRED, Param, choice, p_bool, p_float, p_int, p_shape, p_str
from ._def import OpDef, fail, register

# --- the draws: (key, shape, *params) -> float32 samples; params broadcast against shape


def _uniform(key, shape, low, high):
    return jax.random.uniform(key, shape, minval=low, maxval=high)


def _normal(key, shape, loc, scale):
    return loc + scale * jax.random.normal(key, shape)


def _gamma(key, shape, alpha, beta):  # beta is the scale
    return jax.random.gamma(key, alpha, shape) * beta


def _exponential(key, shape, lam):  # lam is the rate
    return jax.random.exponential(key, shape) / lam


def _exponential_scale(key, shape, scale):  # mx.nd.random.exponential's parameter
    return jax.random.exponential(key, shape) * scale


def _poisson(key, shape, lam):
    return jax.random.poisson(key, lam, shape).astype(jnp.float32)


def _negative_binomial(key, shape, k, p):
    """Failures before the k-th success: Poisson(Gamma(k, (1 - p) / p))."""
    kg, kp = jax.random.split(key)
    return _poisson(kp, shape, jax.random.gamma(kg, k, shape) * ((1 - p) / p))


def _generalized_negative_binomial(key, shape, mu, alpha):
    """Poisson(Gamma(1 / alpha, alpha * mu)): mean mu, variance mu + alpha * mu**2;
    alpha = 0 is Poisson(mu)."""
    kg, kp = jax.random.split(key)
    spread = alpha > 0
    a = jnp.where(spread, alpha, 1.0)
    lam = jnp.where(spread, jax.random.gamma(kg, 1.0 / a, shape) * (a * mu), mu)
    return _poisson(kp, shape, jnp.broadcast_to(lam, shape))


SAMPLERS = {
    "uniform": _uniform,
    "normal": _normal,
    "gamma": _gamma,
    "exponential": _exponential,
    "exponential_scale": _exponential_scale,
    "poisson": _poisson,
    "negative_binomial": _negative_binomial,
    "generalized_negative_binomial": _generalized_negative_binomial,
}


def _need(ok: bool, what: str, rule: str, value) -> str | None:
    return None if ok else f"{what} has to be {rule}, got {value}"


_NB = "parameter in negative binomial distribution"
_GNB = "parameter in generalized negative binomial distribution"

# distribution: MXNet's check of its scalar parameters -> the problem, or None
CHECKS = {
    "uniform": lambda low, high: (
        None
        if low <= high
        else f"low must be less or equal to high in uniform distribution (low={low}, high={high})"
    ),
    "normal": lambda loc, scale: _need(scale > 0, "scale parameter in gaussian", "positive", scale),
    "gamma": lambda alpha, beta: (
        _need(alpha > 0, "alpha parameter in gamma distribution", "positive", alpha)
        or _need(beta > 0, "beta parameter in gamma distribution", "positive", beta)
    ),
    "exponential": lambda lam: _need(
        lam > 0, "lambda parameter in exponential distribution", "positive", lam
    ),
    "exponential_scale": lambda scale: _need(
        scale > 0, "scale (1/lambda) of the exponential distribution", "positive", scale
    ),
    "poisson": lambda lam: _need(
        lam >= 0, "lambda parameter in poisson distribution", "non-negative", lam
    ),
    "negative_binomial": lambda k, p: (
        _need(k >= 0, f"k {_NB}", "non-negative", k)
        or _need(0 < p <= 1, f"p {_NB}", "in (0, 1] (p=0 has no finite samples)", p)
    ),
    "generalized_negative_binomial": lambda mu, alpha: (
        _need(mu >= 0, f"mu {_GNB}", "non-negative", mu)
        or _need(alpha >= 0, f"alpha {_GNB}", "non-negative", alpha)
    ),
}


# --- _random_<dist> and _random_<dist>_like

# distribution: its attributes in MXNet's order, with MXNet's defaults
DISTS = {
    "uniform": {"low": Param(p_float, 0.0), "high": Param(p_float, 1.0)},
    "normal": {"loc": Param(p_float, 0.0), "scale": Param(p_float, 1.0)},
    "gamma": {"alpha": Param(p_float, 1.0), "beta": Param(p_float, 1.0)},
    "exponential": {"lam": Param(p_float, 1.0)},
    "poisson": {"lam": Param(p_float, 1.0)},
    "negative_binomial": {"k": Param(p_int, 1), "p": Param(p_float, 1.0)},
    "generalized_negative_binomial": {"mu": Param(p_float, 1.0), "alpha": Param(p_float, 1.0)},
}
_OLD_ALIASES = {"uniform": ("uniform",), "normal": ("normal",)}  # MXNet's deprecated names


def _dtype_or_float32(name: str):
    return np.dtype("float32" if name == "None" else name)


def _draw(kind: str, a, key, shape: tuple, node: str):
    values = [a[name] for name in DISTS[kind]]
    problem = CHECKS[kind](*values)
    if problem:
        raise MXNetError(f"_random_{kind} {node!r}: {problem}")
    return SAMPLERS[kind](key, shape, *values)


def _random_op(kind: str) -> OpDef:
    def lower(a, ins, aux, ctx):
        shape = tuple(a.shape)
        if not all(shape):
            shape = tuple(ctx.out_shapes[0]) if ctx.out_shapes and ctx.out_shapes[0] else shape
        return [_draw(kind, a, ctx.key(), shape, ctx.node_name).astype(_dtype_or_float32(a.dtype))]

    return OpDef(
        name=f"_random_{kind}",
        aliases=(f"random_{kind}",) + _OLD_ALIASES.get(kind, ()),
        params={
            **DISTS[kind],
            "shape": Param(p_shape, ()),
            "ctx": Param(p_str, ""),
            "dtype": Param(choice("None", "float16", "float32", "float64"), "None"),
        },
        inputs=(),
        random=True,
        infer_shape=lambda a, s: (s, [tuple(a.shape) if all(a.shape) else None]),
        infer_type=lambda a, t: (t, [_dtype_or_float32(a.dtype)]),
        lower=lower,
    )


def _like_op(kind: str) -> OpDef:
    def lower(a, ins, aux, ctx):
        data = ins[0]
        if not jnp.issubdtype(data.dtype, jnp.floating):
            raise MXNetError(
                f"_random_{kind}_like {ctx.node_name!r}: data must be a float array (its "
                f"shape and dtype are the output's), got {data.dtype}; cast it first"
            )
        return [_draw(kind, a, ctx.key(), data.shape, ctx.node_name).astype(data.dtype)]

    return OpDef(
        name=f"_random_{kind}_like",
        params=dict(DISTS[kind]),
        inputs=("data",),
        random=True,
        infer_shape=lambda a, s: (s, [s[0]]),
        lower=lower,
    )


for _kind in DISTS:
    register(_random_op(_kind))
    register(_like_op(_kind))


# --- _sample_multinomial


def multinomial_shape(data_shape: tuple, shape: tuple) -> tuple:
    """MXNet's output shape: ``data_shape[:-1] + shape``; ``(1,)`` for 1-d data and no shape."""
    if len(data_shape) == 1 and not shape:
        return (1,)
    return tuple(data_shape[:-1]) + tuple(shape)


def multinomial_draw(key, probs, *, shape: tuple, get_prob: bool, dtype: str):
    """Indices drawn from the distributions along ``probs``' last axis (MXNet's inverse CDF:
    the first index whose cumulative probability exceeds a uniform draw), and with
    ``get_prob`` their log-probabilities in ``probs``' dtype (whose gradient is MXNet's
    ``1 / p`` at the drawn index)."""
    k = probs.shape[-1]
    rows = probs.reshape(-1, k)
    cdf = jnp.cumsum(rows.astype(jnp.float32), axis=-1)
    u = jax.random.uniform(key, (rows.shape[0], max(1, math.prod(shape))))
    idx = jax.vmap(lambda c, x: jnp.searchsorted(c, x, side="right"))(cdf, u)
    idx = jnp.minimum(idx, k - 1)  # probabilities summing below 1
    out_shape = multinomial_shape(probs.shape, shape)
    outs = [idx.reshape(out_shape).astype(np.dtype(dtype))]
    if get_prob:
        outs.append(jnp.log(jnp.take_along_axis(rows, idx, axis=1)).reshape(out_shape))
    return outs


def _multinomial_shapes(a, s):
    n_out = 2 if a.get_prob else 1
    if s[0] is None:
        return s, [None] * n_out
    if len(s[0]) == 0:
        fail("data must have at least one axis (the probabilities of each outcome)")
    return s, [multinomial_shape(s[0], a.shape)] * n_out


register(
    OpDef(
        name="_sample_multinomial",
        aliases=("sample_multinomial",),
        params={
            "shape": Param(p_shape, ()),
            "get_prob": Param(p_bool, False),
            "dtype": Param(choice("uint8", "int32", "float16", "float32", "float64"), "int32"),
        },
        inputs=("data",),
        outputs=lambda a: ["output0", "output1"] if a.get_prob else ["output"],
        random=True,
        infer_shape=_multinomial_shapes,
        infer_type=lambda a, t: (t, [np.dtype(a.dtype)] + ([t[0]] if a.get_prob else [])),
        lower=lambda a, ins, aux, ctx: multinomial_draw(
            ctx.key(), ins[0], shape=tuple(a.shape), get_prob=a.get_prob, dtype=a.dtype
        ),
    )
)


# --- _random_randint, _shuffle


def _randint_lower(a, ins, aux, ctx):
    if a.high < a.low:
        raise MXNetError(
            f"_random_randint {ctx.node_name!r}: low={a.low} must be at most high={a.high}"
        )
    shape = tuple(a.shape) or tuple((ctx.out_shapes or [()])[0] or ())
    dtype = np.dtype("int32" if a.dtype == "None" else a.dtype)
    return [jax.random.randint(ctx.key(), shape, a.low, a.high, jnp.int32).astype(dtype)]


register(
    OpDef(
        name="_random_randint",
        aliases=("random_randint",),
        params={
            "low": Param(p_int, REQUIRED),
            "high": Param(p_int, REQUIRED),
            "shape": Param(p_shape, ()),
            "ctx": Param(p_str, ""),
            "dtype": Param(choice("None", "int32", "int64"), "None"),
        },
        inputs=(),
        random=True,
        infer_shape=lambda a, s: (s, [tuple(a.shape) if all(a.shape) else None]),
        infer_type=lambda a, t: (t, [np.dtype("int32" if a.dtype == "None" else a.dtype)]),
        lower=_randint_lower,
    )
)


def _shuffle_lower(a, ins, aux, ctx):
    x = ins[0]
    if x.ndim == 0:
        raise MXNetError(f"_shuffle {ctx.node_name!r}: data must have at least one dimension")
    return [jnp.take(x, jax.random.permutation(ctx.key(), x.shape[0]), axis=0)]


register(
    OpDef(
        name="_shuffle",
        aliases=("shuffle",),
        random=True,
        infer_shape=lambda a, s: (s, [s[0]]),
        lower=_shuffle_lower,
    )
)


# --- _sample_<dist>: one draw per element of array parameters


SAMPLE_INPUTS = {  # MXNet's input names, in the order SAMPLERS takes the parameters
    "uniform": ("low", "high"),
    "normal": ("mu", "sigma"),
    "gamma": ("alpha", "beta"),
    "exponential": ("lam",),
    "poisson": ("lam",),
    "negative_binomial": ("k", "p"),
    "generalized_negative_binomial": ("mu", "alpha"),
}


def _sample_op(kind: str) -> OpDef:
    def shapes(a, s):
        known = [x for x in s if x is not None]
        if known and any(tuple(x) != tuple(known[0]) for x in known):
            fail(f"_sample_{kind}: the parameter arrays need one shape, got {s}")
        if not known:
            return s, [None]
        return [tuple(known[0])] * len(s), [tuple(known[0]) + tuple(a.shape)]

    def lower(a, ins, aux, ctx):
        shapes(a, [tuple(x.shape) for x in ins])  # mx.nd calls skip shape inference
        extra = tuple(a.shape)
        params = [p.astype(jnp.float32).reshape(p.shape + (1,) * len(extra)) for p in ins]
        draws = SAMPLERS[kind](ctx.key(), ins[0].shape + extra, *params)
        return [draws.astype(_dtype_or_float32(a.dtype))]

    return OpDef(
        name=f"_sample_{kind}",
        aliases=(f"sample_{kind}",),
        params={
            "shape": Param(p_shape, ()),
            "dtype": Param(choice("None", "float16", "float32", "float64"), "None"),
        },
        inputs=SAMPLE_INPUTS[kind],
        random=True,
        infer_shape=shapes,
        infer_type=lambda a, t: (
            [np.dtype("float32") if x is None else x for x in t],
            [_dtype_or_float32(a.dtype)],
        ),
        lower=lower,
    )


for _kind in SAMPLE_INPUTS:
    register(_sample_op(_kind))
