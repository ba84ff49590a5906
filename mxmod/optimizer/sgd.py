"""SGD (and its deprecated alias ccSGD): MXNet's ``sgd_update``/``sgd_mom_update`` kernels."""

from __future__ import annotations

import os

import jax.numpy as jnp
import optax

from .optimizer import Optimizer, register

__all__ = ["SGD", "ccSGD"]


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
        lazy_update: MXNet's row_sparse option; gradients are dense in mxmod, so it has no
            effect (kept for compatibility).
        **kwargs: see :class:`Optimizer`.
    """

    _rule_attrs = ("momentum",)
    _mp_master_first = False

    def __init__(self, momentum: float = 0.0, lazy_update: bool = True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update
        self.aggregate_num = int(os.getenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", "4"))

    def _init_leaf(self, w):
        return jnp.zeros_like(w) if self.momentum != 0.0 else None

    def _rule(self, w, g, s, lr, wd, t):
        g = self._rescale_clip(g)
        if s is None or not self.momentum > 0:
            return (1 - lr * wd) * w - lr * g, s
        step = -lr * (g + wd * w)
        m, _ = optax.trace(decay=self.momentum).update(step, optax.TraceState(trace=s))
        return w + m, m


@register
class ccSGD(SGD):  # noqa: N801  (MXNet's name)
    """Deprecated MXNet alias of :class:`SGD` (same behaviour)."""
