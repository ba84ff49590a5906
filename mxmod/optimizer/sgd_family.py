"""SGD-family optimizers: MXNet 1.9.1's NAG, Signum, FTML, DCASGD, SGLD (this file) and
LARS, LAMB, LBSGD (``sgd_family2.py``).

Each is one pure per-parameter rule (``_init_leaf``/``_rule``) that follows the MXNet kernel
(``src/operator/optimizer_op-inl.h``) or Python update, quirks included; the imperative
``update``, the fused core and ``to_optax`` derive from it (see ``README.md``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .optimizer import Optimizer, register
from .sgd_family2 import LAMB, LARS, LBSGD
from .sgd_family_ctx import LeafContextMixin, check_momentum, check_range

__all__ = ["NAG", "Signum", "FTML", "LARS", "LAMB", "LBSGD", "DCASGD", "SGLD"]


def _nd_clip(g, c):
    """MXNet's ``nd.clip(g, -c, c)`` for any ``c`` (a negative ``c`` gives ``c`` or ``-c``)."""
    c = float(c)
    return jnp.where(g > c, c, jnp.where(g < -c, -c, g)).astype(g.dtype)


def _rescale_clip_not_none(opt, g):
    """DCASGD/SGLD's Python preprocessing: clip whenever ``clip_gradient is not None``."""
    g = g * float(opt.rescale_grad)
    if opt.clip_gradient is not None:
        g = _nd_clip(g, opt.clip_gradient)
    return g


@register
class NAG(Optimizer):
    """Nesterov accelerated gradient (MXNet ``mx.optimizer.NAG``, ``nag_mom_update``).

    With ``g' = clip(rescale_grad * g, clip_gradient)`` and ``momentum > 0``:
    ``w_new = w + momentum**2 * m - (1 + momentum) * lr * (g' + wd * w)``, then (MXNet's
    in-place kernel quirk, spec Appendix B #7) ``m = momentum * m - lr * (g' + wd * w_new)``.
    ``momentum == 0`` is plain SGD. Multi-precision state: ``(momentum, weight32)``.

    Args:
        momentum: in [0, 1).
        **kwargs: see :class:`Optimizer`.

    Raises:
        ValueError: momentum out of range.
    """

    _rule_attrs = ("momentum",)
    _mp_master_first = False

    def __init__(self, momentum: float = 0.0, **kwargs):
        check_momentum("NAG", momentum)
        super().__init__(**kwargs)
        self.momentum = momentum

    def _init_leaf(self, w):
        return jnp.zeros_like(w) if self.momentum != 0.0 else None

    def _rule(self, w, g, s, lr, wd, t):
        g = self._rescale_clip(g)
        if s is None:
            return (1 - lr * wd) * w - lr * g, s
        mu = self.momentum if self.momentum > 0 else 0.0
        m = mu * s
        new_w = w - m + (mu + 1) * (m - lr * (g + wd * w))
        return new_w, m - lr * (g + wd * new_w)


@register
class Signum(Optimizer):
    """signSGD / Signum (MXNet ``mx.optimizer.Signum``, ``signum_update``/``signsgd_update``).

    * ``momentum > 0``: ``m = momentum*m - (1-momentum)*(wd*w + clip(rescale_grad*g, c))``;
      ``w = (1 - lr*wd_lh)*w + lr*sign(m)``.
    * ``momentum == 0``: ``w = (1 - lr*wd)*w - lr*sign(g)`` (rescale/clip have no effect).

    Args:
        learning_rate: default 0.01.
        momentum: in [0, 1); default 0.9.
        wd_lh: decoupled weight decay (>= 0).
        **kwargs: see :class:`Optimizer`.

    Raises:
        ValueError: momentum or wd_lh out of range.
    """

    _rule_attrs = ("momentum", "wd_lh")

    def __init__(self, learning_rate: float = 0.01, momentum: float = 0.9, wd_lh: float = 0.0,
                 **kwargs):
        check_momentum("Signum", momentum)
        check_range("Signum", "wd_lh", wd_lh, 0.0)
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = momentum
        self.wd_lh = wd_lh

    def _init_leaf(self, w):
        return jnp.zeros_like(w) if self.momentum != 0.0 else None

    def _rule(self, w, g, s, lr, wd, t):
        if s is None:
            return (1 - lr * wd) * w - lr * jnp.sign(g), s
        g = self._rescale_clip(g)
        mu = self.momentum
        m = mu * s - (1 - mu) * wd * w - (1 - mu) * g
        return (1 - lr * float(self.wd_lh or 0.0)) * w + lr * jnp.sign(m), m


@register
class FTML(Optimizer):
    """Follow the Moving Leader (MXNet ``mx.optimizer.FTML``, ``ftml_update``).

    ``g' = clip(rescale_grad*g + wd*w, clip_gradient)``; ``v = beta2*v + (1-beta2)*g'^2``;
    ``d_t = (1-beta1^t)/lr * (sqrt(v/(1-beta2^t)) + epsilon)``;
    ``z = beta1*z + (1-beta1)*g' - (d_t - beta1*d)*w``; ``d = d_t``; ``w = -z/d_t``.
    State ``(d, v, z)``.

    Args:
        beta1: in [0, 1). beta2: in [0, 1). epsilon: >= 0.
        **kwargs: see :class:`Optimizer`.

    Raises:
        ValueError: a hyperparameter out of range.
    """

    _rule_attrs = ("beta1", "beta2", "epsilon")

    def __init__(self, beta1: float = 0.6, beta2: float = 0.999, epsilon: float = 1e-8,
                 **kwargs):
        check_range("FTML", "beta1", beta1, 0.0, 1.0)
        check_range("FTML", "beta2", beta2, 0.0, 1.0)
        check_range("FTML", "epsilon", epsilon, 0.0)
        super().__init__(**kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon

    def _init_leaf(self, w):
        return (jnp.zeros_like(w), jnp.zeros_like(w), jnp.zeros_like(w))

    def _rule(self, w, g, s, lr, wd, t):
        d, v, z = s
        dt = w.dtype
        gi = float(self.rescale_grad) * g + wd * w
        cg = self.clip_gradient
        if cg and cg > 0:
            gi = jnp.clip(gi, -float(cg), float(cg))
        b1, b2 = jnp.asarray(self.beta1, dt), jnp.asarray(self.beta2, dt)
        tf = jnp.asarray(t).astype(dt)
        v = b2 * v + (1 - b2) * jnp.square(gi)
        d_t = (1 - b1**tf) / lr * (jnp.sqrt(v / (1 - b2**tf)) + jnp.asarray(self.epsilon, dt))
        z = b1 * z + (1 - b1) * gi - (d_t - b1 * d) * w
        return -z / d_t, (d_t, v, z)


@register
class DCASGD(Optimizer):
    """Delay-compensated async SGD (MXNet ``mx.optimizer.DCASGD``).

    ``g' = clip(rescale_grad*g, clip_gradient)`` (clipped whenever ``clip_gradient`` is not
    None, as MXNet's Python code does); ``step = -lr*(g' + wd*w + lamda*g'^2*(w - w_prev))``;
    ``w_prev = w``; ``w = w + step``. State ``(None, previous_weight)``.

    MXNet 1.9.1 fails on the first update when ``momentum != 0`` (spec Appendix B #8: it
    evaluates an NDArray's truth value); mxmod raises that ``ValueError`` up front.

    Args:
        momentum: must be 0.
        lamda: the delay-compensation scale.
        **kwargs: see :class:`Optimizer`.

    Raises:
        ValueError: ``momentum != 0`` or a non-numeric lamda.
    """

    _rule_attrs = ("momentum", "lamda")

    def __init__(self, momentum: float = 0.0, lamda: float = 0.04, **kwargs):
        self._check_momentum(momentum)
        check_range("DCASGD", "lamda", lamda, float("-inf"))
        super().__init__(**kwargs)
        self.momentum = momentum
        self.weight_previous: dict = {}
        self.lamda = lamda

    @staticmethod
    def _check_momentum(momentum) -> None:
        if momentum != 0.0:
            raise ValueError(
                f"DCASGD: momentum={momentum!r} is not supported: MXNet 1.9.1's DCASGD raises "
                f"ValueError on the first update when momentum != 0; use momentum=0"
            )

    def _init_leaf(self, w):
        return (None, jnp.array(w, copy=True))

    def _rule(self, w, g, s, lr, wd, t):
        self._check_momentum(self.momentum)
        _, prev = s
        g = _rescale_clip_not_none(self, g)
        step = -lr * (g + wd * w + float(self.lamda) * g * g * (w - prev))
        return w + step, (None, w)



@register
class SGLD(LeafContextMixin, Optimizer):
    """Stochastic gradient Langevin dynamics (MXNet ``mx.optimizer.SGLD``).

    ``g' = clip(rescale_grad*g, clip_gradient)`` (whenever ``clip_gradient`` is not None);
    ``w = w - lr/2*(g' + wd*w) + N(0, sqrt(lr))``. No state.

    Randomness: MXNet draws from its global generator; mxmod draws one key per update call
    (imperative) or per step (``fused_hyper()['key']``) from ``mx.random`` (so
    ``mx.random.seed`` makes runs repeatable), folded with the parameter's position. Without
    a ``'key'`` in ``hyper`` (``to_optax``) the key is a base key drawn when ``to_optax`` is
    called, folded with the update count.
    """

    _extra_keys = ("key",)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    def _host_extras(self) -> dict:
        from ..random import next_key

        return {"key": next_key()}

    def _optax_static(self):
        from ..random import next_key

        return next_key()

    def _traced_extras(self, hyper, sched):
        info = self.__dict__.get("_optax_sched")
        base = info[1] if info and info[1] is not None else jax.random.PRNGKey(0)
        return {"key": jax.random.fold_in(base, jnp.asarray(hyper["t"], jnp.uint32))}

    def _rule(self, w, g, s, lr, wd, t):
        ctx = self._leaf
        g = _rescale_clip_not_none(self, g)
        w = w + (-lr / 2) * (g + wd * w)
        key = jax.random.fold_in(ctx.extra["key"], ctx.pos)
        noise = jax.random.normal(key, w.shape, w.dtype) * jnp.sqrt(lr).astype(w.dtype)
        return w + noise, s
