"""The Adam family: MXNet 1.9.1's ``Adam``, ``Adamax``, ``Nadam`` and MXNet 2.0's ``AdamW``.

Each is one pure per-parameter rule (``_init_leaf``/``_rule``, see ``README.md``) with
MXNet's exact arithmetic: the order of operations and where constants are rounded to
float32 follow the C++ kernel (``adam_update``: ``1 - beta1`` in float32) or the Python code
(Adamax/Nadam: ``1 - beta1`` in float64, then rounded) that MXNet runs.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from ..ndarray._device import zeros_like
from ._base import Optimizer, register
from .rules import (
    NONNEG,
    UNIT,
    aggregation_size,
    clip_kernel,
    clip_nd,
    dtype_const,
    ema,
    one_minus_pow,
    rewrite_caller_grads,
)

__all__ = ["Adam", "AdamW", "Adamax", "Nadam"]


def _adam_moments(opt, g, mean, var):
    """MXNet kernels' moments: ``m = b1 m + (1-b1) g``, ``v = b2 v + (1-b2) g^2`` with the
    betas (and ``1 - beta``) in the weight's dtype."""
    b1, b2 = dtype_const(opt.beta1, g), dtype_const(opt.beta2, g)
    return ema(g, mean, b1), b2 * var + (1 - b2) * g * g


@register
class Adam(Optimizer):
    """Adam (MXNet ``mx.optimizer.Adam``, kernel ``adam_update``).

    With ``t`` this parameter's update count::

        lr_t = lr * sqrt(1 - beta2**t) / (1 - beta1**t)
        g = clip(rescale_grad * g + wd * w, clip_gradient)     # decay inside the clip
        m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g**2
        w = w - lr_t * m / (sqrt(v) + epsilon)

    State ``(mean, var)`` in the weight's dtype. ``lazy_update`` (default True): a row_sparse
    gradient updates only its rows of the weight, mean and var (MXNet's lazy kernel, see
    ``lazy.py``); False: the standard update (the densified gradient).

    Raises:
        ValueError: ``beta1``/``beta2`` outside ``[0, 1)`` or ``epsilon < 0``.
    """

    _rule_attrs = ("beta1", "beta2", "epsilon")
    _checks = (("beta1", UNIT), ("beta2", UNIT), ("epsilon", NONNEG))

    _lazy_kernel = "lazy_update"  # see lazy.py
    _state_stype = "lazy_update"  # create_state: the weight's stype when lazy_update

    def __init__(
        self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, lazy_update=True, **kwargs
    ):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self._set_hypers(beta1=beta1, beta2=beta2, epsilon=epsilon, lazy_update=lazy_update)

    def _init_leaf(self, w):
        return (zeros_like(w), zeros_like(w))

    def _rule(self, w, g, s, leaf):
        lr, wd, t = leaf.lr, leaf.wd, leaf.t
        lr_t = lr * jnp.sqrt(one_minus_pow(self.beta2, t)) / one_minus_pow(self.beta1, t)
        g = clip_kernel(g * float(self.rescale_grad) + w * wd, self.clip_gradient)
        mean, var = _adam_moments(self, g, *s)
        w = w - lr_t.astype(w.dtype) * mean / (jnp.sqrt(var) + dtype_const(self.epsilon, w))
        return w, (mean, var)


@register
class AdamW(Optimizer):
    """AdamW, decoupled weight decay (MXNet 2.0's ``mx.optimizer.AdamW``, registered as
    ``'adamw'``; MXNet 1.9.1 has only its kernels ``mx.nd.contrib.adamw_update``).

    Default (``use_fused_step=True``, MXNet 2.0's fused step through ``adamw_update``)::

        eta = lr * sqrt(1 - beta2**t) / (1 - beta1**t)   # lr when correct_bias=False
        g = clip(rescale_grad * g, clip_gradient)
        m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g**2
        w = w - eta * (m / (sqrt(v) + epsilon) + wd * w)

    As in the kernel, a ``rescale_grad`` of 0, inf or NaN skips the update, and the
    imperative ``update`` writes ``clip(rescale_grad * g)`` back into the caller's gradient
    NDArray (``adamw_update`` overwrites its input; not with ``multi_precision``).
    ``use_fused_step=False`` is MXNet 2.0's ``step``: ``clip_gradient`` applies whenever it
    is not None, the decay ``w -= eta * wd * w`` follows the Adam step (when ``wd > 0``),
    and ``grad *= rescale_grad`` scales the caller's gradient.
    State ``(mean, var)``; with ``multi_precision`` it is ``((mean, var), weight32)`` (MXNet
    2.0's layout, unlike 1.x's ``(weight32, state)``).

    Raises:
        ValueError: ``beta1``/``beta2`` outside ``[0, 1)`` or ``epsilon < 0``.
    """

    _rule_attrs = ("beta1", "beta2", "epsilon", "correct_bias", "use_fused_step")
    _checks = (("beta1", UNIT), ("beta2", UNIT), ("epsilon", NONNEG))
    _mp_master_first = False

    def __init__(
        self,
        learning_rate=0.001,
        beta1=0.9,
        beta2=0.999,
        epsilon=1e-6,
        correct_bias=True,
        use_fused_step=True,
        **kwargs,
    ):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.aggregate_num = aggregation_size(4, most=50)
        self._set_hypers(beta1=beta1, beta2=beta2, epsilon=epsilon, correct_bias=correct_bias,
                         use_fused_step=use_fused_step)  # fmt: skip

    def _init_leaf(self, w):
        return (zeros_like(w), zeros_like(w))

    def _update_impl(self, index, weight, grad, state, multi_precision):
        super()._update_impl(index, weight, grad, state, multi_precision)
        rs = float(self.rescale_grad)
        if not self.use_fused_step:  # 2.0's ``grad *= self.rescale_grad``
            rewrite_caller_grads(weight, grad, multi_precision, self, lambda g: g * rs)
        elif rs != 0.0 and math.isfinite(rs):  # adamw_update writes clip(rs * g) back
            rewrite_caller_grads(
                weight,
                grad,
                multi_precision,
                self,
                lambda g: clip_kernel(g * rs, self.clip_gradient),
            )

    def _rule(self, w, g, s, leaf):
        lr, wd, t = leaf.lr, leaf.wd, leaf.t
        if self.correct_bias:
            lr = (
                lr * jnp.sqrt(one_minus_pow(self.beta2, t)) / one_minus_pow(self.beta1, t)
            ).astype(w.dtype)
        rs = float(self.rescale_grad)
        eps = dtype_const(self.epsilon, w)
        if self.use_fused_step:
            if rs == 0.0 or not math.isfinite(rs):
                return w, s  # adamw_update skips the step
            g = clip_kernel(g * rs, self.clip_gradient)
            mean, var = _adam_moments(self, g, *s)
            return w - lr * (mean / (jnp.sqrt(var) + eps) + wd * w), (mean, var)
        g = clip_nd(g * rs, self.clip_gradient)
        mean, var = ema(g, s[0], self.beta1), ema(g, s[1], self.beta2, 2)
        w = w - lr * (mean / (jnp.sqrt(var) + eps))
        w = jnp.where(wd > 0, w - (lr * wd) * w, w)
        return w, (mean, var)


@register
class Adamax(Optimizer):
    """AdaMax, Adam with the infinity norm (MXNet ``mx.optimizer.Adamax``)::

        g = clip(rescale_grad * g + wd * w, clip_gradient)   # when clip_gradient is not None
        m = beta1 * m + (1 - beta1) * g;  u = maximum(beta2 * u, |g|)
        w = w - lr / (1 - beta1**t) * m / u                 # no epsilon (0/0 stays NaN)

    State ``(m, u)`` in the weight's dtype.

    Raises:
        ValueError: ``beta1``/``beta2`` outside ``[0, 1)``.
    """

    _rule_attrs = ("beta1", "beta2")
    _checks = (("beta1", UNIT), ("beta2", UNIT))

    def __init__(self, learning_rate=0.002, beta1=0.9, beta2=0.999, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self._set_hypers(beta1=beta1, beta2=beta2)

    def _init_leaf(self, w):
        return (zeros_like(w), zeros_like(w))

    def _rule(self, w, g, s, leaf):
        lr, wd = leaf.lr, leaf.wd
        lr_t = (lr / one_minus_pow(self.beta1, leaf.t)).astype(w.dtype)
        g = clip_nd(g * float(self.rescale_grad) + wd * w, self.clip_gradient)
        m = ema(g, s[0], self.beta1)
        u = jnp.maximum(float(self.beta2) * s[1], jnp.abs(g))
        return w - lr_t * m / u, (m, u)


@register
class Nadam(Optimizer):
    """Nesterov Adam (MXNet ``mx.optimizer.Nadam``).

    ``m_schedule`` (initially 1.0) lives on the optimizer and is **shared by all
    parameters**: MXNet multiplies it by ``mu_t = beta1 (1 - 0.5 * 0.96**(t sd))`` once per
    parameter update, so with N parameters it decays N times per step. With
    ``ms = m_schedule`` after that multiplication and ``mu_t1`` the same at ``t + 1``::

        g = clip(rescale_grad * g + wd * w, clip_gradient)   # when clip_gradient is not None
        m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g**2
        m_bar = (1 - mu_t) g / (1 - ms) + mu_t1 m / (1 - ms mu_t1)
        w = w - lr * m_bar / (sqrt(v / (1 - beta2**t)) + epsilon)

    mxmod keeps ``m_schedule`` where MXNet does, on the host: the imperative update and
    :meth:`fused_hyper` advance it parameter by parameter (in float64, in the order of the
    indices / names) and hand each rule its coefficients (``hyper['coeffs']``, one row per
    parameter);
    :meth:`to_optax` carries it in ``OptaxState.extra`` and advances it in the pytree's
    leaf order (a dict flattens by sorted key; an ``OrderedDict`` keeps MXNet's index order).

    Raises:
        ValueError: ``beta1``/``beta2`` outside ``[0, 1)``, ``epsilon`` or
            ``schedule_decay`` negative.
    """

    _rule_attrs = ("beta1", "beta2", "epsilon", "schedule_decay")
    _extra_keys = ("coeffs",)
    _step_attrs = frozenset({"m_schedule"})
    _checks = (("beta1", UNIT), ("beta2", UNIT), ("epsilon", NONNEG), ("schedule_decay", NONNEG))

    def __init__(
        self,
        learning_rate=0.001,
        beta1=0.9,
        beta2=0.999,
        epsilon=1e-8,
        schedule_decay=0.004,
        **kwargs,
    ):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.m_schedule = 1.0
        self._set_hypers(beta1=beta1, beta2=beta2, epsilon=epsilon, schedule_decay=schedule_decay)

    def _init_leaf(self, w):
        return (zeros_like(w), zeros_like(w))

    def _coeffs(self, t: int) -> list:
        """Advance ``m_schedule`` for one parameter update at count ``t`` (MXNet's float64
        host arithmetic); the rule's coefficients."""
        b1, sd = self.beta1, self.schedule_decay
        mu_t = b1 * (1.0 - 0.5 * pow(0.96, t * sd))
        mu_t1 = b1 * (1.0 - 0.5 * pow(0.96, (t + 1) * sd))
        self.m_schedule = self.m_schedule * mu_t
        ms_next = self.m_schedule * mu_t1
        return [1.0 - mu_t, mu_t1, 1.0 - self.m_schedule, 1.0 - ms_next, 1.0 - pow(self.beta2, t)]

    def _host_extras(self, indices, ts) -> dict:
        rows = [self._coeffs(int(t)) for t in ts]
        return {"coeffs": np.asarray(rows, np.float32).reshape(-1, 5)}

    def _fused_extras(self, names, hyper) -> dict:
        """Advance the shared ``m_schedule`` once per parameter (vectorised: the running
        product is the same sequence of float64 multiplications) and return one coefficient
        row per parameter, in ``fused_init`` order."""
        fused = self._counts.names
        if names is not None and tuple(names) != fused:
            raise ValueError(
                "Nadam.fused_hyper(names=...) must list the fused_init parameters in their "
                "order (the shared m_schedule advances in that order)"
            )
        t, n = int(hyper["t"]), len(fused)
        b1, sd = self.beta1, self.schedule_decay
        mu_t = b1 * (1.0 - 0.5 * pow(0.96, t * sd))
        mu_t1 = b1 * (1.0 - 0.5 * pow(0.96, (t + 1) * sd))
        ms = np.multiply.accumulate(np.r_[self.m_schedule, np.full(n, mu_t)])[1:]
        if n:
            self.m_schedule = float(ms[-1])
        rows = np.empty((n, 5), np.float64)
        rows[:, 0], rows[:, 1] = 1.0 - mu_t, mu_t1
        rows[:, 2], rows[:, 3] = 1.0 - ms, 1.0 - ms * mu_t1
        rows[:, 4] = 1.0 - pow(self.beta2, t)
        return {"coeffs": rows.astype(np.float32)}

    def _traced_extras(self, hyper, sched, static):
        if "coeffs" not in hyper:
            raise ValueError(
                "Nadam.fused_update needs the hyper returned by Nadam.fused_hyper(): its "
                "'coeffs' entry carries the shared m_schedule"
            )
        return {}

    def _optax_extra_init(self):
        return jnp.asarray(self.m_schedule, jnp.float32)

    def _optax_hyper(self, hyper, names, ms):
        t = jnp.asarray(hyper["t"], jnp.float32)
        b1, sd = float(self.beta1), float(self.schedule_decay)
        mu_t = b1 * (1.0 - 0.5 * jnp.power(0.96, t * sd))
        mu_t1 = b1 * (1.0 - 0.5 * jnp.power(0.96, (t + 1.0) * sd))
        c2 = one_minus_pow(self.beta2, t)
        rows = []
        for _ in names:
            ms = ms * mu_t
            rows.append(jnp.stack([1.0 - mu_t, mu_t1, 1.0 - ms, 1.0 - ms * mu_t1, c2]))
        coeffs = jnp.stack(rows) if rows else jnp.zeros((0, 5), jnp.float32)
        return {**hyper, "coeffs": coeffs}, ms

    def _rule(self, w, g, s, leaf):
        c = jnp.asarray(leaf.extra["coeffs"])[leaf.pos].astype(w.dtype)
        one_mu_t, mu_t1, one_ms, one_ms_next, c2 = (c[i] for i in range(5))
        g = clip_nd(g * float(self.rescale_grad) + leaf.wd * w, self.clip_gradient)
        m = ema(g, s[0], self.beta1)
        v = float(self.beta2) * s[1] + (1.0 - float(self.beta2)) * g * g
        m_bar = one_mu_t * (g / one_ms) + mu_t1 * (m / one_ms_next)
        w = w - leaf.lr * m_bar / (jnp.sqrt(v / c2) + dtype_const(self.epsilon, w))
        return w, (m, v)
