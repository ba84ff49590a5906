"""Contrib optimizers (MXNet ``mx.optimizer.contrib``): ``GroupAdaGrad``."""

from __future__ import annotations

import jax.numpy as jnp

from ._base import Optimizer, register
from ._mults import name_mults
from .rules import NONNEG, clip_nd

__all__ = ["GroupAdaGrad"]


def _check_no_wd(wds) -> None:
    if any(float(wd) != 0.0 for wd in wds):
        raise ValueError(
            "GroupAdaGrad does not support weight decay: create it with wd=0 (or set "
            "wd_mult 0 for every parameter)"
        )


@register
class GroupAdaGrad(Optimizer):
    """AdaGrad with one learning rate per row (MXNet ``mx.optimizer.contrib.GroupAdaGrad``,
    dense path), for 2-D weights::

        g = clip(rescale_grad * g, clip_gradient)        # when clip_gradient is not None
        history += mean(g**2, axis=1, keepdims=True)     # state shape (rows, 1), float32
        w -= lr * g / sqrt(history + eps)

    Args:
        eps: added inside the square root (stored as ``float_stable_eps``).

    Raises:
        ValueError: ``eps < 0``; a weight that is not 2-D (MXNet: ``AssertionError``);
            a non-zero weight decay at update time (MXNet: ``AssertionError``).
    """

    _rule_attrs = ("float_stable_eps",)
    _checks = (("float_stable_eps", NONNEG),)
    _lazy_kernel = "always"  # a row_sparse gradient takes group_adagrad_update (lazy.py)
    _state_stype = "weight"

    def __init__(self, eps=1e-5, **kwargs):
        super().__init__(**kwargs)
        self._set_hypers(float_stable_eps=eps)

    def _init_leaf(self, w):
        if w.ndim != 2:
            raise ValueError(
                f"GroupAdaGrad needs 2-D weights (one rate per row), got shape {tuple(w.shape)}"
            )
        return jnp.zeros((w.shape[0], 1), jnp.float32)

    def _rule(self, w, g, s, leaf):
        g = clip_nd(g * float(self.rescale_grad), self.clip_gradient)
        h = s + jnp.mean(jnp.square(g), axis=1, keepdims=True)
        return w - leaf.lr * g / jnp.sqrt(h + float(self.float_stable_eps)), h

    def _update_impl(self, index, weight, grad, state, multi_precision):
        indices = list(index) if isinstance(index, (list, tuple)) else [index]
        _check_no_wd(self._get_wds(indices))
        super()._update_impl(index, weight, grad, state, multi_precision)

    def fused_init(self, params):
        _check_no_wd(wd for _, wd in name_mults(self, params).values())
        return super().fused_init(params)

    def fused_update(self, params, grads, state, hyper):
        _check_no_wd(wd for _, wd in name_mults(self, params).values())
        return super().fused_update(params, grads, state, hyper)
