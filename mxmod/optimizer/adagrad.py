"""The AdaGrad family (per-coordinate accumulated squares): MXNet 1.9.1's ``AdaGrad``,
``RMSProp``, ``AdaDelta`` and ``Ftrl`` with their exact update rules (``GroupAdaGrad`` is in
:mod:`.contrib`, MXNet's path).

States of these four are float32 whatever the weight's dtype, as MXNet's ``create_state``
(``zeros`` without a dtype) makes them.
"""

from __future__ import annotations

import jax.numpy as jnp

from ._base import Optimizer, register
from .rules import NONNEG, UNIT, clip_kernel, clip_nd, dtype_const, rewrite_caller_grads
from ..ndarray._device import zeros_like

__all__ = ["AdaGrad", "RMSProp", "AdaDelta", "Ftrl"]


def _zeros32(w):
    return zeros_like(w, jnp.float32)


@register
class AdaGrad(Optimizer):
    """AdaGrad (MXNet ``mx.optimizer.AdaGrad``, dense path)::

        g = clip(rescale_grad * g, clip_gradient)        # when clip_gradient is not None
        history += g**2
        w += (g / sqrt(history + eps) + wd * w) * -lr

    Args:
        eps: added inside the square root (stored as ``float_stable_eps`` like MXNet).

    Raises:
        ValueError: ``eps < 0``.
    """

    _rule_attrs = ("float_stable_eps",)
    _checks = (("float_stable_eps", NONNEG),)
    _lazy_kernel = "always"  # a row_sparse gradient takes _sparse_adagrad_update (lazy.py)
    _state_stype = "weight"  # create_state gives states the weight's storage type
    _lazy_no_wd = True

    def __init__(self, eps=1e-7, **kwargs):
        super().__init__(**kwargs)
        self._set_hypers(float_stable_eps=eps)

    def _init_leaf(self, w):
        return _zeros32(w)

    def _rule(self, w, g, s, leaf):
        lr, wd = leaf.lr, leaf.wd
        g = clip_nd(g * float(self.rescale_grad), self.clip_gradient)
        h = s + jnp.square(g)
        div = g / jnp.sqrt(h + float(self.float_stable_eps))
        return w + (div + w * wd) * -lr, h

    def _lazy_rule(self, w, g, s, leaf):
        # _sparse_adagrad_update: the kernels' clipping rule (clip only when truthy), no wd
        g = clip_kernel(g * float(self.rescale_grad), self.clip_gradient)
        h = s + jnp.square(g)
        return w - leaf.lr * g / jnp.sqrt(h + float(self.float_stable_eps)), h


@register
class RMSProp(Optimizer):
    """RMSProp (MXNet ``mx.optimizer.RMSProp``; kernels ``rmsprop_update`` and, with
    ``centered=True``, Graves' ``rmspropalex_update``). With
    ``g = clip(rescale_grad * g + wd * w, clip_gradient)``:

    * not centered, state ``(n,)``: ``n = (1-gamma1) g**2 + gamma1 n``;
      ``w = w - lr * g / sqrt(n + epsilon)``;
    * centered, state ``(n, g_avg, delta)``: ``n`` as above,
      ``g_avg = (1-gamma1) g + gamma1 g_avg``,
      ``delta = gamma2 delta - lr * g / sqrt(n - g_avg**2 + epsilon)``; ``w = w + delta``;
    * ``clip_weights`` (when truthy and > 0) clamps the new weight to ``[-cw, cw]``.

    Raises:
        ValueError: ``gamma1``/``gamma2`` outside ``[0, 1)`` or ``epsilon < 0``.
    """

    _rule_attrs = ("gamma1", "gamma2", "epsilon", "centered", "clip_weights")
    _state_stype = "weight"  # create_state gives states the weight's storage type
    _checks = (("gamma1", UNIT), ("gamma2", UNIT), ("epsilon", NONNEG))

    def __init__(
        self,
        learning_rate=0.001,
        gamma1=0.9,
        gamma2=0.9,
        epsilon=1e-8,
        centered=False,
        clip_weights=None,
        **kwargs,
    ):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self._set_hypers(gamma1=gamma1, gamma2=gamma2, centered=centered, epsilon=epsilon,
                         clip_weights=clip_weights)  # fmt: skip

    def _init_leaf(self, w):
        if self.centered:
            return (_zeros32(w), _zeros32(w), _zeros32(w))
        return (_zeros32(w),)

    def _rule(self, w, g, s, leaf):
        lr, wd = leaf.lr, leaf.wd
        g = clip_kernel(float(self.rescale_grad) * g + wd * w, self.clip_gradient)
        g1 = dtype_const(self.gamma1, g)
        eps = dtype_const(self.epsilon, g)
        n = (1 - g1) * g * g + g1 * s[0]
        if self.centered:
            g_avg = (1 - g1) * g + g1 * s[1]
            delta = dtype_const(self.gamma2, g) * s[2] - lr * (
                g / jnp.sqrt(n - g_avg * g_avg + eps)
            )
            w, s = w + delta, (n, g_avg, delta)
        else:
            w, s = w - lr * (g / jnp.sqrt(n + eps)), (n,)
        cw = self.clip_weights
        if cw and cw >= 0:
            w = jnp.clip(w, -float(cw), float(cw))
        return w, s


@register
class AdaDelta(Optimizer):
    """AdaDelta (MXNet ``mx.optimizer.AdaDelta``); **ignores the learning rate**::

        g = clip(rescale_grad * g, clip_gradient)        # when clip_gradient is not None
        acc_g = rho * acc_g + (1 - rho) * g**2
        delta = sqrt(acc_delta + epsilon) / sqrt(acc_g + epsilon) * g
        acc_delta = rho * acc_delta + (1 - rho) * delta**2
        w -= delta + wd * w

    MXNet quirk kept by the imperative ``update``: ``grad *= rescale_grad`` scales the
    caller's gradient NDArray in place (not with ``multi_precision``, where MXNet scales a
    float32 copy). The fused/optax paths are pure.

    Raises:
        ValueError: ``rho`` outside ``[0, 1)`` or ``epsilon < 0``.
    """

    _rule_attrs = ("rho", "epsilon")
    _checks = (("rho", UNIT), ("epsilon", NONNEG))

    def __init__(self, rho=0.90, epsilon=1e-5, **kwargs):
        super().__init__(**kwargs)
        self._set_hypers(rho=rho, epsilon=epsilon)

    def _init_leaf(self, w):
        return (_zeros32(w), _zeros32(w))

    def _rule(self, w, g, s, leaf):
        rho, eps = float(self.rho), float(self.epsilon)
        g = clip_nd(g * float(self.rescale_grad), self.clip_gradient)
        acc_g = rho * s[0] + (1.0 - rho) * g * g
        delta = jnp.sqrt(s[1] + eps) / jnp.sqrt(acc_g + eps) * g
        acc_delta = rho * s[1] + (1.0 - rho) * delta * delta
        return w - (delta + leaf.wd * w), (acc_g, acc_delta)

    def _update_impl(self, index, weight, grad, state, multi_precision):
        super()._update_impl(index, weight, grad, state, multi_precision)
        rs = float(self.rescale_grad)
        if rs != 1.0:  # MXNet's ``grad *= self.rescale_grad``
            rewrite_caller_grads(
                weight, grad, multi_precision, self, lambda g: g * jnp.asarray(rs, g.dtype)
            )


@register
class Ftrl(Optimizer):
    """FTRL-proximal (MXNet ``mx.optimizer.Ftrl``, kernel ``ftrl_update``)::

        g = clip(rescale_grad * g, clip_gradient)
        z += g - (sqrt(n + g**2) - sqrt(n)) * w / lr
        n += g**2
        w = (sign(z) * lamda1 - z) / ((beta + sqrt(n)) / lr + wd) * (|z| > lamda1)

    State ``(z, n)``. As in MXNet, ``learning_rate`` (default 0.1) is set after the base
    constructor, so with an ``lr_scheduler`` the scheduler's own ``base_lr`` is kept.

    Raises:
        ValueError: ``lamda1 < 0`` or ``beta < 0``.
    """

    _rule_attrs = ("lamda1", "beta")
    _checks = (("lamda1", NONNEG), ("beta", NONNEG))
    _lazy_kernel = "row_sparse_weight"  # ftrl_update is lazy on row_sparse weight/states
    _state_stype = "weight"

    def __init__(self, lamda1=0.01, learning_rate=0.1, beta=1, **kwargs):
        super().__init__(**kwargs)
        self._set_hypers(lamda1=lamda1, beta=beta, lr=learning_rate)

    def _init_leaf(self, w):
        return (_zeros32(w), _zeros32(w))

    def _rule(self, w, g, s, leaf):
        lr, wd = leaf.lr, leaf.wd
        z, n = s
        g = clip_kernel(g * float(self.rescale_grad), self.clip_gradient)
        l1, beta = dtype_const(self.lamda1, g), dtype_const(self.beta, g)
        z = z + (g - (jnp.sqrt(n + g * g) - jnp.sqrt(n)) * w / lr)
        n = n + g * g
        w = (jnp.sign(z) * l1 - z) / ((beta + jnp.sqrt(n)) / lr + wd) * (jnp.abs(z) > l1)
        return w, (z, n)
