"""FTML: MXNet 1.9.1's ``mx.optimizer.FTML`` (kernel ``ftml_update``)."""

from __future__ import annotations

import jax.numpy as jnp

from ._base import Optimizer, register
from .rules import NONNEG, UNIT, clip_kernel
from ..ndarray._device import zeros_like

__all__ = ["FTML"]


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
    _checks = (("beta1", UNIT), ("beta2", UNIT), ("epsilon", NONNEG))

    def __init__(self, beta1: float = 0.6, beta2: float = 0.999, epsilon: float = 1e-8, **kwargs):
        super().__init__(**kwargs)
        self._set_hypers(beta1=beta1, beta2=beta2, epsilon=epsilon)

    def _init_leaf(self, w):
        return (zeros_like(w), zeros_like(w), zeros_like(w))

    def _rule(self, w, g, s, leaf):
        d, v, z = s
        dt = w.dtype
        gi = clip_kernel(float(self.rescale_grad) * g + leaf.wd * w, self.clip_gradient)
        b1, b2 = jnp.asarray(self.beta1, dt), jnp.asarray(self.beta2, dt)
        tf = jnp.asarray(leaf.t).astype(dt)
        v = b2 * v + (1 - b2) * jnp.square(gi)
        d_t = (1 - b1**tf) / leaf.lr * (jnp.sqrt(v / (1 - b2**tf)) + jnp.asarray(self.epsilon, dt))
        z = b1 * z + (1 - b1) * gi - (d_t - b1 * d) * w
        return -z / d_t, (d_t, v, z)
