"""Shared pieces of the adaptive optimizers (no MXNet namesake).

* :class:`AdaptiveOptimizer`: validates hyperparameters (``ValueError`` naming the bad one)
  at construction and again whenever an update is traced (attributes can be set later).
* MXNet's two gradient-clipping rules: the C++ kernels (``adam_update``, ``rmsprop_update``,
  ``ftrl_update``, ...) clip only when ``clip_gradient`` is truthy and ``>= 0``; the optimizers
  written in Python (AdaGrad, AdaDelta, Adamax, Nadam, GroupAdaGrad) call
  ``nd.clip(g, -c, c)`` whenever ``clip_gradient is not None`` (so ``0`` zeroes the gradient
  and a negative value swaps the bounds, as ``nd.clip`` does).
* ``ema``: the exponential moving average of optax (``tree_update_moment``).
* ``one_minus_pow``: the bias-correction ``1 - beta**t`` without float32 cancellation.
"""

from __future__ import annotations

import math
from typing import Any

import jax.numpy as jnp
from optax import tree_utils as otu

from .optimizer import Optimizer

UNIT = "unit"  # 0 <= x < 1
NONNEG = "nonneg"  # x >= 0


def check_hyper(owner: str, name: str, value: Any, kind: str) -> None:
    """Raise ``ValueError``/``TypeError`` naming ``name`` when ``value`` is out of range."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise TypeError(
            f"{owner}: hyperparameter {name} must be a number, got {value!r}"
        ) from None
    if kind == UNIT and not 0.0 <= x < 1.0:
        raise ValueError(f"{owner}: {name} must be in [0, 1), got {name}={value!r}")
    if kind == NONNEG and not x >= 0.0:
        raise ValueError(f"{owner}: {name} must be >= 0, got {name}={value!r}")


class AdaptiveOptimizer(Optimizer):
    """Base of the adaptive optimizers: hyperparameter checks and MXNet's clip rules.

    Subclasses list ``_checks = ((attr, UNIT | NONNEG), ...)``.
    """

    _checks: tuple = ()

    def _validate(self) -> None:
        owner = type(self).__name__
        for attr, kind in self._checks:
            check_hyper(owner, attr, getattr(self, attr), kind)

    def _static_key(self) -> tuple:
        self._validate()  # attributes may have been changed since construction
        return super()._static_key()

    def _clip_kernel(self, x):
        """Clip as the C++ kernels do: when ``clip_gradient`` is truthy and ``>= 0``."""
        cg = self.clip_gradient
        if cg and cg >= 0:
            x = jnp.clip(x, -float(cg), float(cg))
        return x

    def _clip_python(self, x):
        """``nd.clip(x, -c, c)`` whenever ``clip_gradient is not None`` (MXNet's Python
        optimizers): ``x > hi -> hi``, then ``x < lo -> lo`` (bounds swap for ``c < 0``)."""
        cg = self.clip_gradient
        if cg is None:
            return x
        lo, hi = -float(cg), float(cg)
        return jnp.where(x > hi, hi, jnp.where(x < lo, lo, x)).astype(x.dtype)


def rewrite_caller_grads(weight, grad, multi_precision: bool, opt, fn) -> None:
    """MXNet quirk: some updates overwrite the caller's gradient NDArray (``grad *= rs`` in
    Python, or a kernel writing its rescaled gradient back). Apply ``fn`` to each gradient
    whose weight was not updated through a float32 master copy (MXNet updates a copy then)."""
    from .optimizer import _as_list

    for w, g in zip(_as_list(weight), _as_list(grad)):
        if not (multi_precision and opt._use_mp(w.dtype)):
            g._set_data(fn(g._data).astype(g._data.dtype))


def ema(x, m, decay, order: int = 1):
    """``(1 - decay) * x**order + decay * m`` (optax's moment update)."""
    return otu.tree_update_moment(x, m, decay, order)


def one_minus_pow(beta: float, t) -> Any:
    """``1 - beta**t`` in float32 for a traced count ``t >= 1``, as ``-expm1(t log beta)``
    (``1 - 0.999**t`` loses most digits when computed directly in float32)."""
    t = jnp.asarray(t, jnp.float32)
    beta = float(beta)
    if beta == 0.0:
        return jnp.ones_like(t)
    if beta < 0.0:
        return 1.0 - jnp.power(jnp.float32(beta), t)
    return -jnp.expm1(t * math.log(beta))


def dtype_const(x: float, like) -> Any:
    """``x`` as a scalar of ``like``'s dtype (a C++ kernel's ``DType`` parameter)."""
    return jnp.asarray(x, like.dtype)
