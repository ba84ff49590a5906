"""``mx.nd.random``'s distributions, as MXNet 1.9.1's: ``uniform``, ``normal`` (numbers:
the bucket-sized draws of ``_random``), ``exponential``, ``gamma``,
``poisson``, ``negative_binomial``, ``generalized_negative_binomial``, ``randn``, the
``*_like`` samplers, and MXNet's operator names ``random_<dist>`` (its attribute order;
``random_exponential`` takes the rate ``lam``) and ``sample_<dist>`` (NDArray parameters).

A call is one compiled program per (distribution, shapes, dtype) whose parameters are
arguments, so a new value compiles nothing. Numbers are checked as MXNet checks them; NDArray
parameters (MXNet's ``_sample_*`` operators) give ``param.shape + shape`` samples and are not
checked (MXNet does not either; it would wait for the device). The JAX draws are
``mxmod.ops.random.SAMPLERS``, the lowering of the ``_random_*`` graph operators too.
"""

from __future__ import annotations

import numbers
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..base import MXNetError, named
from ..ops.random import CHECKS, DISTS, SAMPLERS
from ._device import shape_tuple
from ._programs import program
from ._random import _draw, _finish, _resolve, next_key
from .ndarray import NDArray

__all__ = [
    "uniform",
    "normal",
    "exponential",
    "gamma",
    "poisson",
    "negative_binomial",
    "generalized_negative_binomial",
    "randn",
    "random_exponential",
    "random_gamma",
    "random_poisson",
    "random_negative_binomial",
    "random_generalized_negative_binomial",
    "uniform_like",
    "normal_like",
    "exponential_like",
    "gamma_like",
    "poisson_like",
    "negative_binomial_like",
    "generalized_negative_binomial_like",
    "sample_uniform",
    "sample_normal",
    "sample_gamma",
    "sample_exponential",
    "sample_poisson",
    "sample_negative_binomial",
    "sample_generalized_negative_binomial",
]


def _draw_program(key, *params, kind: str, shape: tuple, dtype: str):
    """``shape`` samples; a parameter of shape ``s`` applies to ``shape[len(s):]`` samples."""
    ps = [jnp.asarray(p, jnp.float32) for p in params]
    ps = [p.reshape(p.shape + (1,) * (len(shape) - p.ndim)) for p in ps]
    return SAMPLERS[kind](key, shape, *ps).astype(dtype)


def _float_dtype(op: str, dt: np.dtype) -> None:
    if dt.kind != "f" and dt.name != "bfloat16":
        raise ValueError(f"{op}: dtype must be a float type, got {dt.name}")


def sample(kind: str, op: str, params: tuple, shape, dtype, ctx, out, kwargs: dict) -> NDArray:
    """Samples of distribution ``kind`` (``mxmod.ops.random.SAMPLERS``) with ``params``:
    numbers, or NDArrays of one shape (numbers among them apply to every element)."""
    arrays = [p for p in params if isinstance(p, NDArray)]
    odd = [p for p in params if not isinstance(p, (NDArray, numbers.Real))]
    if odd:
        got = type(odd[0]).__name__
        raise ValueError(f"{op}: distribution parameters must be NDArrays or numbers, got {got}")
    if not arrays:
        shape, dt, ctx = _resolve(shape, dtype, ctx, out, op, "float32", kwargs)
        _float_dtype(op, dt)
        problem = CHECKS[kind](*params)
        if problem:
            raise MXNetError(f"{op}: {problem}")
        args = [np.float32(p) for p in params]
    else:
        pshape = arrays[0].shape
        if any(a.shape != pshape for a in arrays):
            shapes = ", ".join(str(a.shape) for a in arrays)
            raise MXNetError(f"{op}: NDArray parameters must have one shape, got {shapes}")
        sshape = () if shape is None else shape_tuple(shape)
        if out is not None and out.shape != pshape + sshape:
            fits = out.shape[: len(pshape)] == pshape
            fix = f"shape={out.shape[len(pshape) :]}" if fits else f"out of shape {pshape + sshape}"
            raise MXNetError(
                f"{op}: Shape inconsistent, Provided = {list(out.shape)}, inferred shape="
                f"{list(pshape + sshape)} (the parameters' shape {pshape} + shape); pass {fix}"
            )
        ctx = arrays[0].context if ctx is None and out is None else ctx
        shape, dt, ctx = _resolve(pshape + sshape, dtype, ctx, out, op, "float32", kwargs)
        _float_dtype(op, dt)
        args = [
            jax.device_put(p._data, ctx.jax_device) if isinstance(p, NDArray) else np.float32(p)
            for p in params
        ]
    key = jax.device_put(next_key(ctx), ctx.jax_device)
    static = (("kind", kind), ("shape", shape), ("dtype", dt.name))
    return _finish(program(_draw_program, static)(key, *args), ctx, out)


def exponential(scale=1, shape=None, dtype=None, ctx=None, out=None, **kwargs: Any) -> NDArray:
    """Samples of an exponential distribution with ``scale`` = 1/rate (a number or NDArray)."""
    return sample("exponential_scale", "exponential", (scale,), shape, dtype, ctx, out, kwargs)


def gamma(alpha=1, beta=1, shape=None, dtype=None, ctx=None, out=None, **kwargs: Any) -> NDArray:
    """Samples of a gamma distribution of shape ``alpha`` and scale ``beta``."""
    return sample("gamma", "gamma", (alpha, beta), shape, dtype, ctx, out, kwargs)


def poisson(lam=1, shape=None, dtype=None, ctx=None, out=None, **kwargs: Any) -> NDArray:
    """Samples of a Poisson distribution of rate ``lam``, as floats (MXNet's rule)."""
    return sample("poisson", "poisson", (lam,), shape, dtype, ctx, out, kwargs)


def _whole_k(k: Any, op: str) -> None:
    if not isinstance(k, NDArray) and not float(k).is_integer():
        raise MXNetError(
            f"{op}: k must be an integer (MXNet's _random_negative_binomial takes an int k), "
            f"got {k}; give k as an NDArray for a real-valued k"
        )


def negative_binomial(k=1, p=1, shape=None, dtype=None, ctx=None, out=None, **kwargs: Any):
    """Samples of the number of failures (probability ``1 - p`` each) before ``k`` successes."""
    _whole_k(k, "negative_binomial")
    return sample("negative_binomial", "negative_binomial", (k, p), shape, dtype, ctx, out, kwargs)


def generalized_negative_binomial(
    mu=1, alpha=1, shape=None, dtype=None, ctx=None, out=None, **kwargs: Any
) -> NDArray:
    """Samples of a negative binomial of mean ``mu`` and dispersion ``alpha`` (variance
    ``mu + alpha * mu**2``; ``alpha=0`` is Poisson(mu))."""
    params = (mu, alpha)
    kind = "generalized_negative_binomial"
    return sample(kind, kind, params, shape, dtype, ctx, out, kwargs)


def randn(*shape: int, loc=0, scale=1, dtype=None, ctx=None, out=None, **kwargs: Any) -> NDArray:
    """``normal(loc, scale, shape)`` with the shape as arguments: ``randn(2, 3)``; ``(1,)``
    when none is given (MXNet's example)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return normal(loc, scale, shape or None, dtype, ctx, out, **kwargs)


def _args(op: str, order: tuple, args: tuple, kwargs: dict) -> dict:
    """The arguments of MXNet's generated function ``op``: ``order`` by position or name."""
    if len(args) > len(order):
        raise TypeError(f"{op} takes at most {len(order)} positional arguments {order}")
    given = dict(zip(order, args))
    for key in order:
        if key in kwargs:
            if key in given:
                raise TypeError(f"{op} got multiple values for {key!r}")
            given[key] = kwargs.pop(key)
    return given


def _operator(kind: str):
    """``mx.nd.random_<kind>``: MXNet's ``_random_<kind>`` (its attribute order and names)."""
    op, names = f"random_{kind}", tuple(DISTS[kind])

    def call(*args, out=None, name=None, **kwargs):
        a = _args(op, names + ("shape", "ctx", "dtype"), args, kwargs)
        params = tuple(a.get(n, p.default) for n, p in DISTS[kind].items())
        if kind == "negative_binomial":
            _whole_k(params[0], op)
        return sample(kind, op, params, a.get("shape"), a.get("dtype"), a.get("ctx"), out, kwargs)

    return named(call, op, f"MXNet's ``_random_{kind}`` ({', '.join(names)}).")


random_exponential = _operator("exponential")  # a rate lam, where random.exponential has scale
random_gamma = _operator("gamma")
random_poisson = _operator("poisson")
random_negative_binomial = _operator("negative_binomial")
random_generalized_negative_binomial = _operator("generalized_negative_binomial")


def _like(kind: str):
    """``mx.nd.random.<kind>_like``: MXNet's ``_random_<kind>_like``."""
    op, names = f"{kind}_like", tuple(DISTS[kind])

    def call(*args, out=None, name=None, **kwargs):
        a = _args(op, ("data",) + names, args, kwargs)
        data = a.get("data")
        if not isinstance(data, NDArray):
            raise TypeError(f"{op}: data must be an NDArray, got {type(data).__name__}")
        if not jnp.issubdtype(data.dtype, jnp.floating):
            got = np.dtype(data.dtype).name
            raise MXNetError(f"{op}: data must be a float array (the output's dtype), got {got}")
        params = tuple(a.get(n, p.default) for n, p in DISTS[kind].items())
        if kind == "negative_binomial":
            _whole_k(params[0], op)
        return sample(kind, op, params, data.shape, data.dtype, data.context, out, kwargs)

    return named(
        call, op, f"``{kind}`` samples of ``data``'s shape and dtype ({', '.join(names)})."
    )


uniform_like = _like("uniform")
normal_like = _like("normal")
exponential_like = _like("exponential")  # a rate lam, as MXNet's operator
gamma_like = _like("gamma")
poisson_like = _like("poisson")
negative_binomial_like = _like("negative_binomial")
generalized_negative_binomial_like = _like("generalized_negative_binomial")


def _of_arrays(kind: str, names: tuple):
    """``mx.nd.sample_<kind>``: MXNet's ``_sample_<kind>``, NDArray parameters ``names``."""
    op = f"sample_{kind}"

    def call(*args, out=None, name=None, **kwargs):
        a = _args(op, names + ("shape", "dtype"), args, kwargs)
        for n in names:
            if not isinstance(a.get(n), NDArray):
                raise TypeError(
                    f"{op}: {n} must be an NDArray (one distribution per element), got "
                    f"{type(a.get(n)).__name__}; for numbers use mx.nd.random.{kind}"
                )
        params = tuple(a[n] for n in names)
        return sample(kind, op, params, a.get("shape"), a.get("dtype"), None, out, kwargs)

    return named(call, op, f"MXNet's ``_sample_{kind}`` ({', '.join(names)}: NDArrays).")


sample_uniform = _of_arrays("uniform", ("low", "high"))
sample_normal = _of_arrays("normal", ("mu", "sigma"))
sample_gamma = _of_arrays("gamma", ("alpha", "beta"))
sample_exponential = _of_arrays("exponential", ("lam",))
sample_poisson = _of_arrays("poisson", ("lam",))
sample_negative_binomial = _of_arrays("negative_binomial", ("k", "p"))
sample_generalized_negative_binomial = _of_arrays("generalized_negative_binomial", ("mu", "alpha"))


def _float_samples(kind: str, p0, p1, shape, dtype, ctx, out, kwargs: dict, problem) -> NDArray:
    """``uniform``/``normal`` draws; ``problem``: the message of a bad parameter, else falsy.

    NDArray parameters (MXNet's ``_sample_*``) draw ``param.shape + shape`` samples, as the
    other distributions do (``_random_dists``)."""
    if isinstance(p0, NDArray) or isinstance(p1, NDArray):
        return sample(kind, kind, (p0, p1), shape, dtype, ctx, out, kwargs)
    shape, dt, ctx = _resolve(shape, dtype, ctx, out, kind, "float32", kwargs)
    if dt.kind != "f" and dt.name != "bfloat16":
        raise ValueError(f"{kind}: dtype must be a float type, got {dt.name}")
    if problem:
        raise MXNetError(problem)
    data = _draw(kind, ctx, shape, np.float32(p0), np.float32(p1))
    return _finish(data.astype(dt), ctx, out)


def uniform(
    low: Any = 0,
    high: Any = 1,
    shape: Any = None,
    dtype: Any = None,
    ctx: Any = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Samples from ``U[low, high)`` (``mx.nd.random.uniform``); shape defaults to ``(1,)``.

    Raises:
        MXNetError: if ``high < low`` or ``out`` has another shape.
    """
    bad = not isinstance(low, NDArray) and not isinstance(high, NDArray) and high < low
    problem = (
        f"uniform: low must be less or equal to high in uniform distribution "
        f"(low={low}, high={high})"
    )
    return _float_samples("uniform", low, high, shape, dtype, ctx, out, kwargs, bad and problem)


def normal(
    loc: Any = 0,
    scale: Any = 1,
    shape: Any = None,
    dtype: Any = None,
    ctx: Any = None,
    out: NDArray | None = None,
    **kwargs: Any,
) -> NDArray:
    """Samples from ``N(loc, scale**2)`` (``mx.nd.random.normal``); shape defaults to ``(1,)``.

    Raises:
        MXNetError: if ``scale <= 0`` or ``out`` has another shape.
    """
    bad = not isinstance(scale, NDArray) and not scale > 0
    problem = f"normal: scale parameter in gaussian has to be positive, got {scale}"
    return _float_samples("normal", loc, scale, shape, dtype, ctx, out, kwargs, bad and problem)
