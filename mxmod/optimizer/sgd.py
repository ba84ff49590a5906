"""The SGD family: MXNet 1.9.1's ``SGD`` (and its alias ``ccSGD``), ``NAG``, ``Signum``,
``DCASGD`` and ``SGLD``.

Each is one pure per-parameter rule (``_init_leaf``/``_rule``) that follows the MXNet kernel
(``src/operator/optimizer_op-inl.h``) or Python update, quirks included; the imperative
``update``, the fused core and ``to_optax`` derive from it (see ``README.md``).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import optax

from ..ndarray._random import draw_size
from ..random import next_key
from ._base import Optimizer, register
from .rules import NONNEG, UNIT, aggregation_size, rescale_clip, rescale_clip_nd
from ..ndarray._device import zeros_like

__all__ = ["SGD", "ccSGD", "NAG", "Signum", "DCASGD", "SGLD"]


def _momentum_state(opt, w):
    return zeros_like(w) if opt.momentum != 0.0 else None


@register
class SGD(Optimizer):
    """Stochastic gradient descent with momentum (MXNet ``mx.optimizer.SGD``).

    With ``g' = clip(rescale_grad * g, clip_gradient)``:

    * ``momentum > 0``: ``m = momentum * m - lr * (g' + wd * w)``; ``w = w + m``
      (the momentum step is ``optax.trace``);
    * ``momentum == 0``: ``w = (1 - lr * wd) * w - lr * g'``.

    State: the momentum buffer (``None`` when ``momentum == 0``). With ``multi_precision``
    and float16 weights the state is ``(momentum, weight32)`` as in MXNet.

    Args:
        momentum: the momentum factor.
        lazy_update: with a row_sparse gradient, update only its rows of the weight and
            momentum (MXNet's lazy kernel, see ``lazy.py``; not through a float16 master
            copy, where MXNet's ``mp_sgd_*`` kernels are dense); False: the standard update.
        **kwargs: see :class:`Optimizer`.
    """

    _rate_hooks = "many"  # MXNet's update reads _get_lrs/_get_wds
    _rule_attrs = ("momentum",)
    _mp_master_first = False
    _lazy_kernel = "lazy_update"  # see lazy.py
    _lazy_mp = False  # mp_sgd_update/mp_sgd_mom_update have no row_sparse kernel
    _state_stype = "lazy_update"  # create_state: the weight's stype when lazy_update

    def __init__(self, momentum: float = 0.0, lazy_update: bool = True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update
        self.aggregate_num = aggregation_size(4)

    def _init_leaf(self, w):
        return _momentum_state(self, w)

    def _rule(self, w, g, s, leaf):
        lr, wd = leaf.lr, leaf.wd
        g = rescale_clip(self, g)
        if s is None or not self.momentum > 0:
            return (1 - lr * wd) * w - lr * g, s
        step = -lr * (g + wd * w)
        m, _ = optax.trace(decay=self.momentum).update(step, optax.TraceState(trace=s))
        return w + m, m


@register
class ccSGD(SGD):  # noqa: N801  (MXNet's name)
    """Deprecated MXNet alias of :class:`SGD` (same behaviour)."""


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
    _checks = (("momentum", UNIT),)
    _mp_master_first = False

    def __init__(self, momentum: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        self._set_hypers(momentum=momentum)

    def _init_leaf(self, w):
        return _momentum_state(self, w)

    def _rule(self, w, g, s, leaf):
        lr, wd = leaf.lr, leaf.wd
        g = rescale_clip(self, g)
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
    _state_stype = "weight"  # create_state gives the momentum the weight's storage type
    _checks = (("momentum", UNIT), ("wd_lh", NONNEG))

    def __init__(
        self, learning_rate: float = 0.01, momentum: float = 0.9, wd_lh: float = 0.0, **kwargs
    ):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self._set_hypers(momentum=momentum, wd_lh=wd_lh)

    def _init_leaf(self, w):
        return _momentum_state(self, w)

    def _rule(self, w, g, s, leaf):
        lr, wd = leaf.lr, leaf.wd
        if s is None:
            return (1 - lr * wd) * w - lr * jnp.sign(g), s
        g = rescale_clip(self, g)
        mu = self.momentum
        m = mu * s - (1 - mu) * wd * w - (1 - mu) * g
        return (1 - lr * float(self.wd_lh or 0.0)) * w + lr * jnp.sign(m), m


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
        ValueError: ``momentum != 0``. TypeError: a non-numeric lamda.
    """

    _rule_attrs = ("momentum", "lamda")
    _state_stype = "weight"  # the previous weight is weight.copy()
    _checks = (("lamda", (float("-inf"), None)),)

    def __init__(self, momentum: float = 0.0, lamda: float = 0.04, **kwargs):
        super().__init__(**kwargs)
        self.weight_previous: dict = {}
        self._set_hypers(momentum=momentum, lamda=lamda)

    def _validate(self) -> None:
        super()._validate()
        if self.momentum != 0.0:
            raise ValueError(
                f"DCASGD: momentum={self.momentum!r} is not supported: MXNet 1.9.1's DCASGD "
                f"raises ValueError on the first update when momentum != 0; use momentum=0"
            )

    def _init_leaf(self, w):
        return (None, jnp.array(w, copy=True))

    def _rule(self, w, g, s, leaf):
        _, prev = s
        g = rescale_clip_nd(self, g)
        step = -leaf.lr * (g + leaf.wd * w + float(self.lamda) * g * g * (w - prev))
        return w + step, (None, w)


@register
class SGLD(Optimizer):
    """Stochastic gradient Langevin dynamics (MXNet ``mx.optimizer.SGLD``).

    ``g' = clip(rescale_grad*g, clip_gradient)`` (whenever ``clip_gradient`` is not None);
    ``w = w - lr/2*(g' + wd*w) + N(0, sqrt(lr))``. No state.

    Randomness: MXNet draws from its global generator. Imperatively (``update``, the
    ``Updater``) mxmod does the same: each weight's noise is exactly the next
    ``mx.random.normal(0, sqrt(lr), shape=w.shape)`` draw, in order, so a reference written
    with ``mx.random`` after the same ``mx.random.seed`` sees the same noise. A fused step draws
    one key per step (``fused_hyper()['key']``) folded with the parameter's position. Without
    a ``'key'`` in ``hyper`` (``to_optax``) the key is a base key drawn when ``to_optax`` is
    called, folded with the update count.
    """

    _extra_keys = ("key",)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    def _host_extras(self, indices, ts) -> dict:
        if indices is None:  # fused step: one key, folded per parameter
            return {"key": next_key()}
        return {"key": jnp.stack([next_key() for _ in indices])}  # one mx.random draw each

    def _fused_extras(self, names, hyper) -> dict:
        return self._host_extras(None, None)

    def _optax_static(self):
        return next_key()

    def _traced_extras(self, hyper, sched, static):
        base = static if static is not None else jax.random.PRNGKey(0)
        return {"key": jax.random.fold_in(base, jnp.asarray(hyper["t"], jnp.uint32))}

    def _rule(self, w, g, s, leaf):
        lr = leaf.lr
        g = rescale_clip_nd(self, g)
        w = w + (-lr / 2) * (g + leaf.wd * w)
        key = leaf.extra["key"]
        if key.ndim == 2:  # imperative: the draw mx.random.normal would make with this key
            noise = _mx_normal(key[leaf.pos], jnp.sqrt(lr), w.shape).astype(w.dtype)
        else:
            key = jax.random.fold_in(key, leaf.pos)
            noise = jax.random.normal(key, w.shape, w.dtype) * jnp.sqrt(lr).astype(w.dtype)
        return w + noise, s


def _mx_normal(key, scale, shape):
    """``mx.random.normal(0, scale, shape)`` for a given key (its bucketed float32 draw)."""
    size = math.prod(shape)
    flat = scale * jax.random.normal(key, (draw_size(size),), jnp.float32)
    return flat[:size].reshape(shape)
