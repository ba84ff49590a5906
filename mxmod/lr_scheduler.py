"""Learning-rate schedules: MXNet's ``mx.lr_scheduler``.

Each scheduler is a **stateful** callable ``sched(num_update) -> lr`` with MXNet 1.9.1's exact
semantics: ``FactorScheduler``/``MultiFactorScheduler`` mutate ``base_lr`` as updates pass
their steps (calling with a smaller ``num_update`` does not undo a decay), and
``PolyScheduler``/``CosineScheduler`` use the ``base_lr`` captured at construction.
The optimizer calls the scheduler on the host once per step (``Optimizer.fused_hyper``) and
feeds the value to the compiled step as a traced scalar, so a changing rate never recompiles.

mxmod addition: :meth:`LRScheduler.jax_schedule` returns a pure, jittable closed form of a
built-in schedule (used by ``Optimizer.to_optax``).
"""

from __future__ import annotations

import logging
import math
from typing import Callable

import jax.numpy as jnp
import numpy as np

__all__ = [
    "LRScheduler",
    "FactorScheduler",
    "MultiFactorScheduler",
    "PolyScheduler",
    "CosineScheduler",
]


class LRScheduler:
    """Base class of learning-rate schedules (MXNet ``mx.lr_scheduler.LRScheduler``).

    Args:
        base_lr: the learning rate after warm-up.
        warmup_steps: number of warm-up updates (int >= 0).
        warmup_begin_lr: learning rate at update 0 of the warm-up (<= ``base_lr``).
        warmup_mode: ``'linear'`` (ramp from ``warmup_begin_lr`` to ``base_lr``) or
            ``'constant'`` (stay at ``warmup_begin_lr``).

    Raises:
        TypeError: ``warmup_steps`` is not an int.
        ValueError: a negative ``warmup_steps``, ``warmup_begin_lr > base_lr`` or an unknown
            ``warmup_mode``.
    """

    def __init__(
        self,
        base_lr: float = 0.01,
        warmup_steps: int = 0,
        warmup_begin_lr: float = 0,
        warmup_mode: str = "linear",
    ):
        _check_number("base_lr", base_lr)
        _check_number("warmup_begin_lr", warmup_begin_lr)
        self.base_lr = base_lr
        if isinstance(warmup_steps, bool) or not isinstance(warmup_steps, int):
            raise TypeError(f"warmup_steps must be an int, got {warmup_steps!r}")
        self.warmup_steps = warmup_steps
        self.warmup_final_lr = base_lr
        self.warmup_begin_lr = warmup_begin_lr
        if self.warmup_begin_lr > self.warmup_final_lr:
            raise ValueError(
                f"Base lr has to be higher than warmup_begin_lr: got base_lr={base_lr} < "
                f"warmup_begin_lr={warmup_begin_lr}"
            )
        if self.warmup_steps < 0:
            raise ValueError(
                f"Warmup steps has to be positive or 0, got warmup_steps={warmup_steps}"
            )
        if warmup_mode not in ("linear", "constant"):
            raise ValueError(
                f"Supports only linear and constant modes of warmup, got warmup_mode="
                f"{warmup_mode!r}"
            )
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update: int) -> float:
        """Learning rate during warm-up (``num_update < warmup_steps``)."""
        if num_update >= self.warmup_steps:
            raise ValueError(
                f"get_warmup_lr({num_update}) called after the warm-up "
                f"(warmup_steps={self.warmup_steps})"
            )
        if self.warmup_mode == "linear":
            increase = (
                (self.warmup_final_lr - self.warmup_begin_lr)
                * float(num_update)
                / float(self.warmup_steps)
            )
            return self.warmup_begin_lr + increase
        return self.warmup_begin_lr

    def __call__(self, num_update: int) -> float:
        raise NotImplementedError("must override this")

    # ------------------------------------------------------------------ mxmod additions
    def _jax_main(self, n):
        raise NotImplementedError(
            f"{type(self).__name__} has no jittable closed form; pass an explicit optax "
            f"schedule, e.g. opt.to_optax(learning_rate=optax.constant_schedule(0.1))"
        )

    def jax_schedule(self) -> Callable:
        """A pure jittable ``fn(num_update) -> lr`` equal to this schedule called in order.

        Uses the scheduler's current settings (e.g. a ``base_lr`` overridden by the
        optimizer); values match calling the stateful scheduler with increasing counts.

        Raises:
            NotImplementedError: for user subclasses without a closed form.
        """
        self._jax_main(jnp.asarray(1, jnp.int32))  # raise early for user subclasses
        warm, begin, final = self.warmup_steps, self.warmup_begin_lr, self.warmup_final_lr
        mode = self.warmup_mode

        def fn(num_update):
            n = jnp.asarray(num_update)
            nf = n.astype(jnp.float32)
            if mode == "linear" and warm > 0:
                wlr = begin + (final - begin) * nf / float(warm)
            else:
                wlr = jnp.asarray(begin, jnp.float32)
            return jnp.where(n < warm, wlr, self._jax_main(n)).astype(jnp.float32)

        return fn


def _check_number(name: str, value, whole: bool = False) -> None:
    """A schedule setting given as a string (``'0.1'``) or other non-number names the fix."""
    kinds = (int,) if whole else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds + (np.number,)):
        what = "a whole number" if whole else "a number"
        hint = f"; pass {value.strip()} without quotes" if isinstance(value, str) else ""
        raise TypeError(f"{name} must be {what}, got {value!r}{hint}")


def _check_factor(factor: float) -> None:
    _check_number("factor", factor)
    if factor > 1.0:
        raise ValueError(f"Factor must be no more than 1 to make lr reduce, got factor={factor}")


class FactorScheduler(LRScheduler):
    """Multiply the rate by ``factor`` every ``step`` updates (MXNet ``FactorScheduler``).

    After warm-up, while ``num_update > count + step``: ``count += step`` and
    ``base_lr *= factor``, floored at ``stop_factor_lr``. Closed form (no floor, no warm-up):
    ``base_lr * factor ** floor((num_update - 1) / step)``.

    Raises:
        ValueError: ``step < 1`` or ``factor > 1`` (plus the base-class checks).
    """

    def __init__(
        self,
        step: int,
        factor: float = 1,
        stop_factor_lr: float = 1e-8,
        base_lr: float = 0.01,
        warmup_steps: int = 0,
        warmup_begin_lr: float = 0,
        warmup_mode: str = "linear",
    ):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        _check_number("step", step, whole=True)
        if step < 1:
            raise ValueError(
                f"Schedule step must be greater or equal than 1 round, got step={step}"
            )
        _check_factor(factor)
        self.step = step
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.count = 0

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while num_update > self.count + self.step:
            self.count += self.step
            self.base_lr *= self.factor
            if self.base_lr < self.stop_factor_lr:
                self.base_lr = self.stop_factor_lr
                logging.info(
                    "Update[%d]: now learning rate arrived at %0.5e, will not change in the future",
                    num_update,
                    self.base_lr,
                )
            else:
                logging.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
        return self.base_lr

    def _jax_main(self, n):
        k = jnp.maximum(0, (n - self.count - 1) // self.step).astype(jnp.float32)
        lr = self.base_lr * jnp.power(jnp.float32(self.factor), k)
        return jnp.where(k > 0, jnp.maximum(lr, self.stop_factor_lr), self.base_lr)


class MultiFactorScheduler(LRScheduler):
    """Multiply the rate by ``factor`` once as each listed step is passed (MXNet namesake).

    Args:
        step: strictly increasing list of ints >= 1; after update ``step[i]`` the rate is
            multiplied by ``factor``.

    Raises:
        ValueError: ``step`` not a non-empty increasing list of ints >= 1, or ``factor > 1``.
    """

    def __init__(
        self,
        step: list,
        factor: float = 1,
        base_lr: float = 0.01,
        warmup_steps: int = 0,
        warmup_begin_lr: float = 0,
        warmup_mode: str = "linear",
    ):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(step, (list, tuple)) or len(step) < 1:
            raise ValueError(
                f"MultiFactorScheduler step must be a non-empty list of ints, got {step!r}"
            )
        for i, s in enumerate(step):
            _check_number(f"step[{i}]", s, whole=True)
            if i != 0 and step[i] <= step[i - 1]:
                raise ValueError(
                    f"Schedule step must be an increasing integer list, got step={step}"
                )
            if s < 1:
                raise ValueError(
                    f"Schedule step must be greater or equal than 1 round, got step={step}"
                )
        _check_factor(factor)
        self.step = list(step)
        self.cur_step_ind = 0
        self.factor = factor
        self.count = 0

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while self.cur_step_ind <= len(self.step) - 1:
            if num_update > self.step[self.cur_step_ind]:
                self.count = self.step[self.cur_step_ind]
                self.cur_step_ind += 1
                self.base_lr *= self.factor
                logging.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
            else:
                return self.base_lr
        return self.base_lr

    def _jax_main(self, n):
        rest = self.step[self.cur_step_ind :]
        k = sum((n > s).astype(jnp.float32) for s in rest) if rest else jnp.float32(0)
        return self.base_lr * jnp.power(jnp.float32(self.factor), k)


class _WindowScheduler(LRScheduler):
    """Shared part of Poly/Cosine: a shape over ``[warmup_steps, max_update]``.

    As in MXNet, ``max_update < warmup_steps`` is accepted: after the warm-up the rate stays
    at ``base_lr``. ``max_update == warmup_steps`` raises (MXNet divides by zero later).
    """

    def __init__(
        self,
        max_update: int,
        base_lr: float = 0.01,
        final_lr: float = 0,
        warmup_steps: int = 0,
        warmup_begin_lr: float = 0,
        warmup_mode: str = "linear",
    ):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if isinstance(max_update, bool) or not isinstance(max_update, int):
            raise TypeError(f"max_update must be an int, got {max_update!r}")
        if max_update < 1:
            raise ValueError(
                f"maximum number of updates must be strictly positive, got max_update={max_update}"
            )
        if max_update == warmup_steps:  # MXNet divides by zero at update max_update
            raise ValueError(
                f"max_update={max_update} equals warmup_steps={warmup_steps}: the decay window "
                "max_update - warmup_steps is empty; use max_update larger than warmup_steps"
            )
        _check_number("final_lr", final_lr)
        self.base_lr_orig = base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def _shape(self, frac):  # frac in [0, 1] -> multiplier in [0, 1]
        raise NotImplementedError

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            frac = float(num_update - self.warmup_steps) / float(self.max_steps)
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * self._shape(frac)
        return self.base_lr

    def _jax_main(self, n):
        if self.max_steps < 0:  # max_update < warmup_steps: base_lr is never recomputed
            return jnp.full(jnp.shape(n), self.base_lr, jnp.float32)
        m = jnp.minimum(n, self.max_update).astype(jnp.float32)
        frac = (m - self.warmup_steps) / float(self.max_steps)
        return self.final_lr + (self.base_lr_orig - self.final_lr) * self._shape(frac, jnp)


class PolyScheduler(_WindowScheduler):
    """Polynomial decay to ``final_lr`` at ``max_update`` (MXNet ``PolyScheduler``).

    ``lr = final_lr + (base_lr - final_lr) * (1 - (n - warmup_steps) / (max_update -
    warmup_steps)) ** pwr`` for ``warmup_steps <= n <= max_update``; afterwards the last value.

    Raises:
        TypeError/ValueError: ``max_update`` not an int >= 1, or equal to ``warmup_steps``.
    """

    def __init__(
        self,
        max_update: int,
        base_lr: float = 0.01,
        pwr: float = 2,
        final_lr: float = 0,
        warmup_steps: int = 0,
        warmup_begin_lr: float = 0,
        warmup_mode: str = "linear",
    ):
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        _check_number("pwr", pwr)
        self.power = pwr

    def _shape(self, frac, xp=math):
        if xp is math:
            return pow(1 - frac, self.power)
        return xp.power(1 - frac, self.power)


class CosineScheduler(_WindowScheduler):
    """Cosine decay to ``final_lr`` at ``max_update`` (MXNet ``CosineScheduler``).

    ``lr = final_lr + (base_lr - final_lr) * (1 + cos(pi * (n - warmup_steps) / (max_update -
    warmup_steps))) / 2`` for ``warmup_steps <= n <= max_update``; afterwards the last value.
    The constructor is ``_WindowScheduler``'s (MXNet's arguments and defaults).
    """

    def _shape(self, frac, xp=math):
        return (1 + xp.cos(math.pi * frac)) / 2
