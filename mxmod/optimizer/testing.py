"""MXNet's ``Test`` optimizer (registered as ``'test'``), used by MXNet's own tests."""

from __future__ import annotations

import jax.numpy as jnp

from ._base import Optimizer, register

__all__ = ["Test"]


@register
class Test(Optimizer):
    """MXNet's test optimizer: ``w += rescale_grad * g``; the state keeps a copy of ``w``."""

    _counts_updates = False

    def _init_leaf(self, w):
        return jnp.zeros(w.shape, jnp.float32)

    def _rule(self, w, g, s, leaf):
        nw = w + g * float(self.rescale_grad)
        return nw, nw
