"""Large-batch optimizers: MXNet 1.9.1's ``LARS``, ``LAMB`` and ``LBSGD`` (layer-wise rates:
the per-layer norms are computed inside the per-parameter rule)."""

from __future__ import annotations

import logging

import jax.numpy as jnp
import numpy as np

from ..ndarray._device import zeros_like
from ._base import Optimizer, register
from ._mults import index_mults
from .rules import (
    NONNEG,
    UNIT,
    aggregation_size,
    check_int,
    check_momentum,
    low,
    rescale_clip,
    sum_sq,
)

__all__ = ["LARS", "LAMB", "LBSGD"]

_NO_LARS = ("gamma", "beta", "bias")


def _sgd(opt, w, g, mom, lr, wd, momentum):
    """MXNet's multi-tensor SGD kernel: ``g' = clip(rs*g) + wd*w``; momentum or plain step."""
    g = rescale_clip(opt, g) + wd * w
    if mom is None:
        return w - lr * g, None
    mom = momentum * mom - lr * g
    return w + mom, mom


@register
class LARS(Optimizer):
    """Layer-wise adaptive rate scaling (MXNet ``mx.optimizer.LARS``).

    SGD (with momentum) where each parameter whose name does not end in ``gamma``, ``beta``
    or ``bias`` uses ``lr * eta * |w| / (|g| * rescale_grad + wd * |w| + eps)`` when both
    L2 norms are positive (``|g|`` of the raw gradient; with float16 weights the norm is of
    the float16 weight, as in MXNet). Only names ending in ``_weight`` keep weight decay.
    ``momentum_correction`` scales the momentum by ``cur_lr / last_lr`` (the base rates of
    this and the previous update call: in the fused path, of this and the previous step).
    Multi-precision state: ``(momentum, weight32)``.

    Args:
        momentum: in [0, 1).
        lazy_update: MXNet's lazy row_sparse update is not implemented (a row_sparse
            gradient raises NotImplementedError); False applies it densely (standard update).
        eta: the LARS coefficient (>= 0).
        eps: added to the denominator (>= 0).
        momentum_correction: see above.
        **kwargs: see :class:`Optimizer`.

    Raises:
        ValueError: a hyperparameter out of range.
    """

    _rate_hooks = "many"  # MXNet's update reads _get_lrs/_get_wds
    _rule_attrs = ("momentum", "eta", "eps", "momentum_correction")
    _state_stype = "lazy_update"  # create_state: the weight's stype when lazy_update
    _lazy_kernel = "not_implemented"  # MXNet's lazy LARS (row_sparse gradient): see lazy.py
    _mp_master_first = False
    _extra_keys = ("momentum",)
    _uses_names = True
    _checks = (("momentum", UNIT), ("eta", NONNEG), ("eps", NONNEG))
    _step_attrs = frozenset({"last_lr", "cur_lr", "skip"})
    _wd_suffixes = ("_weight",)  # LARS also exempts gamma from weight decay

    def __init__(
        self,
        momentum: float = 0.0,
        lazy_update: bool = True,
        eta: float = 0.001,
        eps: float = 0,
        momentum_correction: bool = True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.aggregate_num = aggregation_size(4)
        self.skip = 0
        self.last_lr = self.cur_lr = None
        self._set_hypers(momentum=momentum, momentum_correction=momentum_correction,
                         lazy_update=lazy_update, eta=eta, eps=eps)  # fmt: skip

    def _track_lr(self) -> float:
        """MXNet's ``_get_lrs`` bookkeeping of ``cur_lr``/``last_lr``; returns the base rate."""
        if self.cur_lr is not None:
            self.last_lr = self.cur_lr
        lr = self._base_lr()
        if self.cur_lr is None:
            self.last_lr = lr
        self.cur_lr = lr
        return lr

    def _get_lrs(self, indices: list) -> list:
        lr = self._track_lr()
        return [lr * m for m in index_mults(self, indices, self.lr_mult, "lr_mult")]

    def _momentum_now(self) -> float:
        if self.momentum_correction and self.last_lr != 0:
            return self.momentum * (self.cur_lr / self.last_lr)
        return self.momentum

    def _host_extras(self, indices, ts) -> dict:
        return {"momentum": np.float32(self._momentum_now())}

    def _fused_extras(self, names, hyper) -> dict:
        self._track_lr()
        return self._host_extras(None, None)

    def _traced_extras(self, hyper, sched, static):
        mom = jnp.asarray(self.momentum, jnp.float32)
        if sched is None or not self.momentum_correction:
            return {"momentum": mom}
        t = jnp.asarray(hyper["t"])
        cur = jnp.asarray(sched(t), jnp.float32)
        last = jnp.where(t > self.begin_num_update + 1, sched(t - 1), cur).astype(jnp.float32)
        return {"momentum": jnp.where(last != 0, mom * (cur / last), mom)}

    def _init_leaf(self, w):
        return zeros_like(w) if self.momentum != 0.0 else None

    def _rule(self, w, g, s, leaf):
        lr, wd = leaf.lr, leaf.wd
        name = leaf.name if leaf.name is not None else ""
        if not name.endswith(_NO_LARS):
            w_norm = jnp.sqrt(sum_sq(low(w, leaf)))
            g_sq = sum_sq(low(g, leaf))
            scaled = (
                lr
                * float(self.eta)
                * w_norm
                / (jnp.sqrt(g_sq) * float(self.rescale_grad) + wd * w_norm + float(self.eps))
            )
            lr = jnp.where((w_norm > 0) & (g_sq > 0), scaled, lr).astype(lr.dtype)
        if s is None or not self.momentum > 0:
            return _sgd(self, w, g, None, lr, wd, 0.0)[0], s
        momentum = jnp.asarray(leaf.extra.get("momentum", self.momentum), w.dtype)
        return _sgd(self, w, g, s, lr, wd, momentum)


@register
class LAMB(Optimizer):
    """Layer-wise adaptive moments for large batches (MXNet ``mx.optimizer.LAMB``).

    ``g' = clip(rescale_grad*g, clip_gradient)``; ``m = beta1*m + (1-beta1)*g'``;
    ``v = beta2*v + (1-beta2)*g'^2``; with bias correction ``m/(1-beta1^t)``,
    ``v/(1-beta2^t)``; ``r = m_hat/(sqrt(v_hat) + epsilon) + wd*w``; ``r1 = |w|`` clamped to
    ``[lower_bound, upper_bound]`` (each when truthy); ``r2 = |r|``;
    ``w = w - lr * (r1/r2) * r`` (``lr * r`` when either norm is 0). State ``(mean, var)``.

    Args:
        learning_rate: default 0.001.
        beta1, beta2: in [0, 1). epsilon: >= 0.
        lower_bound, upper_bound: optional bounds of ``|w|``.
        bias_correction: see above.
        **kwargs: see :class:`Optimizer`.

    Raises:
        ValueError: a hyperparameter out of range, or ``lower_bound > upper_bound``.
    """

    _rate_hooks = "many"  # MXNet's update reads _get_lrs/_get_wds
    _rule_attrs = ("beta1", "beta2", "epsilon", "lower_bound", "upper_bound", "bias_correction")
    _state_stype = "weight"
    _checks = (("beta1", UNIT), ("beta2", UNIT), ("epsilon", NONNEG))

    def __init__(
        self,
        learning_rate: float = 0.001,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-6,
        lower_bound: float | None = None,
        upper_bound: float | None = None,
        bias_correction: bool = True,
        **kwargs,
    ):
        if lower_bound and upper_bound and 0 <= upper_bound < lower_bound:
            raise ValueError(
                f"LAMB: lower_bound={lower_bound!r} must not exceed upper_bound={upper_bound!r}"
            )
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.aggregate_num = aggregation_size(45, most=45)
        self._set_hypers(beta1=beta1, beta2=beta2, epsilon=epsilon, lower_bound=lower_bound,
                         upper_bound=upper_bound, bias_correction=bias_correction)  # fmt: skip

    def _init_leaf(self, w):
        return (zeros_like(w), zeros_like(w))

    def _rule(self, w, g, s, leaf):
        lr, wd, t = leaf.lr, leaf.wd, leaf.t
        mean, var = s
        dt = w.dtype
        b1, b2 = jnp.asarray(self.beta1, dt), jnp.asarray(self.beta2, dt)
        eps = jnp.asarray(self.epsilon, dt)
        g = rescale_clip(self, g)
        mean = b1 * mean + (1 - b1) * g
        var = b2 * var + (1 - b2) * g * g
        if self.bias_correction:
            tf = jnp.asarray(t).astype(dt)
            r = (mean / (1 - b1**tf)) / (jnp.sqrt(var / (1 - b2**tf)) + eps) + wd * w
        else:
            r = mean / (jnp.sqrt(var) + eps) + wd * w
        r1 = jnp.sqrt(sum_sq(low(w, leaf)))
        if self.lower_bound and self.lower_bound >= 0:
            r1 = jnp.maximum(r1, float(self.lower_bound))
        if self.upper_bound and self.upper_bound >= 0:
            r1 = jnp.minimum(r1, float(self.upper_bound))
        r2 = jnp.sqrt(sum_sq(r))
        ratio = jnp.where((r1 == 0) | (r2 == 0), 1.0, r1 / r2)
        return w - (lr * ratio.astype(dt)) * r, (mean, var)


_STRATEGIES = ("linear", "power2", "sqrt", "lars")


@register
class LBSGD(Optimizer):
    """Large-batch SGD with warm-up (MXNet ``mx.optimizer.LBSGD``).

    Gradients are accumulated per parameter; every ``batch_scale``-th update (counted from
    ``begin_epoch * updates_per_epoch + 1``) applies SGD (with momentum) to
    ``sum / batch_scale`` with ``lr * mult``: ``mult`` ramps from 1 to ``batch_scale`` over
    ``warmup_epochs * updates_per_epoch`` updates (``linear``, ``power2``, ``sqrt``) or is
    ``clip(sqrt(|w|^2 / (|g|^2 + wd*|w|^2 + 1e-18)), 0.01, 100)`` (``lars``). Other updates
    leave the weight as is. As in MXNet, the learning rate is read *before* the update is
    counted (fused path: the first parameter MXNet updates in a step, the lowest index of
    ``param_idx2name``, gets the scheduler's rate before the step's count, the others the
    rate after it, as MXNet's one-index-at-a-time Updater does).

    State: the momentum (``None`` when 0); mxmod difference: with ``batch_scale > 1`` the
    accumulated gradient is part of the state, ``(momentum, cum_grad)`` (MXNet keeps it in
    ``self.cumgrads``), so the update stays a pure function.

    Args:
        momentum: in [0, 1).
        multi_precision: float32 master copies of float16/bfloat16 weights.
        warmup_strategy: 'linear', 'power2', 'sqrt' or 'lars'.
        warmup_epochs, updates_per_epoch, begin_epoch, num_epochs: the warm-up schedule.
        batch_scale: integer >= 1.
        **kwargs: see :class:`Optimizer`.

    Raises:
        ValueError: a hyperparameter out of range or an unknown warmup_strategy.
    """

    _state_stype = "weight"
    _lazy_kernel = "not_implemented"  # MXNet's lazy LBSGD (row_sparse gradient)
    lazy_update = True  # MXNet's LBSGD always calls sgd_update's lazy default
    _rule_attrs = ("momentum", "warmup_strategy", "warmup_epochs", "batch_scale",
                   "updates_per_epoch", "init_updates", "begin_num_update")  # fmt: skip
    _extra_keys = ("lr_pre",)
    _lr_before_count = True  # MXNet's LBSGD reads the rate, then counts
    _checks = (("momentum", UNIT),)
    _step_attrs = frozenset({"lbmult", "cumgrads", "admult"})

    def __init__(
        self,
        momentum: float = 0.0,
        multi_precision: bool = False,
        warmup_strategy: str = "linear",
        warmup_epochs: int = 5,
        batch_scale: int = 1,
        updates_per_epoch: int = 32,
        begin_epoch: int = 0,
        num_epochs: int = 60,
        **kwargs,
    ):
        check_momentum("LBSGD", momentum)
        if warmup_strategy not in _STRATEGIES:
            raise ValueError(
                f"LBSGD: unknown warmup_strategy {warmup_strategy!r}; known: "
                f"{', '.join(_STRATEGIES)}"
            )
        for name, value, lo in (("warmup_epochs", warmup_epochs, 0),
                                ("batch_scale", batch_scale, 1),
                                ("updates_per_epoch", updates_per_epoch, 0),
                                ("begin_epoch", begin_epoch, 0)):  # fmt: skip
            check_int("LBSGD", name, value, lo)
        super().__init__(**kwargs)
        logging.info("Running Large-Batch SGD Algorithm")
        logging.info("(Batch_scale=%f, warmup_epochs=%d, warmup_strategy=%s, updates_per_epoch=%d)",
                     batch_scale, warmup_epochs, warmup_strategy, updates_per_epoch)  # fmt: skip
        self.momentum = momentum
        self.multi_precision = multi_precision
        self.warmup_strategy = warmup_strategy
        self.warmup_epochs = warmup_epochs
        self.batch_scale = batch_scale
        self.updates_per_epoch = updates_per_epoch
        self.init_updates = begin_epoch * updates_per_epoch
        self.num_epochs = num_epochs
        self.lbmult = 1
        self.cumgrads: dict = {}
        self.adaptive = False
        self.admult = 1

    def _traced_extras(self, hyper, sched, static):
        lr = jnp.asarray(hyper["lr"], jnp.float32)
        pre = lr if sched is None else jnp.asarray(sched(jnp.asarray(hyper["t"]) - 1), jnp.float32)
        return {"lr_pre": pre}

    def _init_leaf(self, w):
        mom = zeros_like(w) if self.momentum != 0.0 else None
        return (mom, zeros_like(w)) if int(self.batch_scale) > 1 else mom

    def _lbmult(self, n):
        nwup = int(self.warmup_epochs) * int(self.updates_per_epoch)
        maxmult = float(self.batch_scale)
        if nwup <= 1:
            return jnp.where(n >= nwup, maxmult, 1.0)
        x = n.astype(jnp.float32) / nwup
        strategy = self.warmup_strategy
        if strategy == "linear":
            mult = 1.0 + (maxmult - 1) * x
        elif strategy == "power2":
            mult = 1.0 + (maxmult - 1) * (x * x)
        else:  # sqrt
            mult = 1.0 + (maxmult - 1) * jnp.sqrt(x)
        return jnp.where(n >= nwup, maxmult, mult)

    def _rule(self, w, g, s, leaf):
        lr, wd, t = leaf.lr, leaf.wd, leaf.t
        if leaf.first and "lr_pre" in leaf.extra:  # fused: see the class docstring
            lr = (leaf.extra["lr_pre"] * leaf.lr_mult).astype(lr.dtype)
        scale = int(self.batch_scale)
        n = jnp.asarray(t) - self.begin_num_update + self.init_updates  # MXNet's num_cums
        mom, cum = (s[0], s[1] + g) if scale > 1 else (s, g)
        grad = cum / scale if scale > 1 else cum
        if self.warmup_strategy == "lars":
            w2, g2 = sum_sq(w), sum_sq(grad)
            mult = jnp.clip(jnp.sqrt(w2 / (g2 + wd * w2 + 1e-18)), 0.01, 100.0)
        else:
            mult = self._lbmult(n)
        lr = lr * mult.astype(lr.dtype)
        gr = rescale_clip(self, grad)
        if mom is None or not self.momentum > 0:
            new_w, new_mom = (1 - lr * wd) * w - lr * gr, mom
        else:
            new_mom = self.momentum * mom - lr * wd * w - lr * gr
            new_w = w + new_mom
        if scale == 1:
            return new_w, new_mom
        apply = n % scale == 0
        new_w = jnp.where(apply, new_w, w - 0.0 * g)  # MXNet: sgd_update with lr=0
        if new_mom is not None:
            new_mom = jnp.where(apply, new_mom, mom)
        return new_w, (new_mom, jnp.where(apply, jnp.zeros_like(cum), cum))
