"""``_contrib_hawkesll``: the log likelihood of K independent univariate Hawkes processes
with exponential kernels, per sequence of a batch (``mx.nd.contrib.hawkesll``).

For mark k, background intensity ``lda[n, k]``, branching ratio ``alpha[k]`` and decay
``beta[k]``, the intensity is ``lda + alpha * beta * s_k(t)`` with the memory
``s_k(t) = sum_{t_i < t, y_i = k} exp(-beta (t - t_i))`` (``state`` is ``s_k(0)``). Events
arrive at the cumulative sums of ``lags[n, :valid_length[n]]`` with marks ``marks``; the
log likelihood adds ``log intensity`` at each event and subtracts each mark's compensator
up to ``max_time[n]``. Outputs: the log likelihood (N,) and the memory at ``max_time``
(N, K). A ``lax.scan`` over the events; gradients by autodiff (MXNet's for ``lda``,
``alpha``, ``beta``, ``state``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._def import OpDef, fail, register


def _shape(a, s):
    lda, alpha, beta, state, lags, marks, valid, max_time = s
    if lda is None or lags is None:
        return s, [None, None]
    (n, k), t = lda, lags[1]
    want = [(n, k), (k,), (k,), (n, k), (n, t), (n, t), (n,), (n,)]
    names = ("lda", "alpha", "beta", "state", "lags", "marks", "valid_length", "max_time")
    for name, got, expected in zip(names, s, want):
        if got is not None and tuple(got) != expected:
            fail(f"hawkesll: {name} must have shape {expected} (from lda {lda}), got {got}")
    return want, [(n,), (n, k)]


def _type(a, t):
    out = t[0]
    return t, [out, out]


def _lower(a, ins, aux, ctx):
    lda, alpha, beta, state, lags, marks, valid, max_time = ins
    _shape(a, [tuple(x.shape) for x in ins])
    n, _ = lda.shape
    rows = jnp.arange(n)
    marks = marks.astype(jnp.int32)
    valid = valid.astype(jnp.int32)

    def event(carry, j):
        ll, s, last, t = carry
        k = marks[:, j]
        live = j < valid
        t = jnp.where(live, t + lags[:, j], t)
        a_k, b_k, s_k = alpha[k], beta[k], s[rows, k]
        gap = t - last[rows, k]
        decay = jnp.exp(-b_k * gap)
        intensity = lda[rows, k] + a_k * b_k * s_k * decay
        compensator = lda[rows, k] * gap + a_k * s_k * (1.0 - decay)
        ll = jnp.where(live, ll + jnp.log(intensity) - compensator, ll)
        s = s.at[rows, k].set(jnp.where(live, 1.0 + s_k * decay, s_k))
        last = last.at[rows, k].set(jnp.where(live, t, last[rows, k]))
        return (ll, s, last, t), None

    zeros = jnp.zeros((n,), lda.dtype)
    carry = (zeros, state, jnp.zeros_like(state), zeros)
    (ll, s, last, _), _ = jax.lax.scan(event, carry, jnp.arange(lags.shape[1]))
    gap = max_time[:, None] - last
    decay = jnp.exp(-beta[None, :] * gap)
    ll = ll - jnp.sum(lda * gap + alpha[None, :] * s * (1.0 - decay), axis=1)
    return [ll, s * decay]


register(
    OpDef(
        name="_contrib_hawkesll",
        inputs=("lda", "alpha", "beta", "state", "lags", "marks", "valid_length", "max_time"),
        outputs=("output", "out_state"),
        infer_shape=_shape,
        infer_type=_type,
        lower=_lower,
    )
)
