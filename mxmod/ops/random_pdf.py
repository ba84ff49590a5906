"""``random_pdf_<dist>``: the density (or mass) of samples under array parameters, MXNet
1.9.1's ``_random_pdf_*`` operators (``is_log``: its logarithm).

``sample`` has shape ``param.shape + extra``: each sample is scored under the parameters of
its leading index, as ``sample_<dist>`` draws them (Dirichlet: ``sample`` ``(..., extra, k)``
against ``alpha`` ``(..., k)``). Parameterisations are MXNet's pdf operators': gamma's and
exponential's ``beta``/``lam`` are rates here (the samplers' gamma ``beta`` is a scale);
``generalized_negative_binomial(mu, alpha)`` is a negative binomial with ``k = 1 / alpha``,
``p = k / (k + mu)`` (Poisson(mu) at ``alpha = 0``). Gradients flow to the samples and the
parameters (JAX's derivative of the log density).
"""

from __future__ import annotations

import math

import jax.numpy as jnp
from jax.scipy.special import gammaln, xlog1py, xlogy

from ._attrs import Param, p_bool
from ._def import OpDef, fail, register


def _uniform(x, low, high):
    inside = (x >= low) & (x <= high)
    return jnp.where(inside, -jnp.log(high - low), -jnp.inf)


def _normal(x, mu, sigma):
    return -0.5 * jnp.square((x - mu) / sigma) - jnp.log(sigma) - 0.5 * math.log(2 * math.pi)


def _gamma(x, alpha, beta):  # beta: the rate
    return xlogy(alpha, beta) + xlogy(alpha - 1, x) - beta * x - gammaln(alpha)


def _exponential(x, lam):
    return jnp.log(lam) - lam * x


def _poisson(x, lam):
    return xlogy(x, lam) - lam - gammaln(x + 1)


def _negative_binomial(x, k, p):
    return gammaln(x + k) - gammaln(x + 1) - gammaln(k) + xlogy(k, p) + xlog1py(x, -p)


def _generalized_negative_binomial(x, mu, alpha):
    spread = alpha > 0
    k = 1.0 / jnp.where(spread, alpha, 1.0)
    nb = _negative_binomial(x, k, k / (k + mu))
    return jnp.where(spread, nb, _poisson(x, mu))


LOG_DENSITIES = {
    "uniform": (("low", "high"), _uniform),
    "normal": (("mu", "sigma"), _normal),
    "gamma": (("alpha", "beta"), _gamma),
    "exponential": (("lam",), _exponential),
    "poisson": (("lam",), _poisson),
    "negative_binomial": (("k", "p"), _negative_binomial),
    "generalized_negative_binomial": (("mu", "alpha"), _generalized_negative_binomial),
}


def _check(kind: str, sample, params) -> None:
    if sample is None or any(p is None for p in params):
        return
    lead = tuple(params[0])
    if any(tuple(p) != lead for p in params):
        fail(f"random_pdf_{kind}: the parameter arrays need one shape, got {params}")
    if kind == "dirichlet":
        if not lead or tuple(sample[:-1])[: len(lead) - 1] != lead[:-1] or sample[-1] != lead[-1]:
            fail(f"random_pdf_dirichlet: sample {sample} must be alpha's {lead} batch, then the "
                 f"samples, then alpha's last dimension {lead[-1] if lead else '?'}")  # fmt: skip
    elif tuple(sample[: len(lead)]) != lead:
        fail(f"random_pdf_{kind}: sample {sample} must start with the parameters' shape {lead}")


def _op(kind: str, names: tuple, log_density) -> OpDef:
    def shapes(a, s):
        _check(kind, s[0], s[1:])
        if s[0] is None:
            return s, [None]
        return s, [tuple(s[0][:-1]) if kind == "dirichlet" else tuple(s[0])]

    def lower(a, ins, aux, ctx):
        x, *params = ins
        _check(kind, x.shape, [p.shape for p in params])  # mx.nd calls skip inference
        xf = x.astype(jnp.float32)
        if kind == "dirichlet":
            alpha = params[0].astype(jnp.float32)
            alpha = alpha.reshape(
                alpha.shape[:-1] + (1,) * (x.ndim - alpha.ndim) + alpha.shape[-1:]
            )
            norm = gammaln(alpha.sum(-1)) - gammaln(alpha).sum(-1)
            out = norm + xlogy(alpha - 1, xf).sum(-1)
        else:
            ps = [p.astype(jnp.float32) for p in params]
            ps = [p.reshape(p.shape + (1,) * (x.ndim - p.ndim)) for p in ps]
            out = log_density(xf, *ps)
        return [(out if a.is_log else jnp.exp(out)).astype(x.dtype)]

    return OpDef(
        name=f"_random_pdf_{kind}",
        aliases=(f"random_pdf_{kind}",),
        params={"is_log": Param(p_bool, False)},
        inputs=("sample", *names),
        infer_shape=shapes,
        lower=lower,
    )


for _kind, (_names, _density) in LOG_DENSITIES.items():
    register(_op(_kind, _names, _density))
register(_op("dirichlet", ("alpha",), None))
