"""``mx.misc``: MXNet's first learning-rate schedulers (kept by MXNet 1.x for old scripts;
``mx.lr_scheduler`` replaced them). ``scheduler(iteration)`` returns the rate."""

from __future__ import annotations

import logging
import math

__all__ = ["LearningRateScheduler", "FactorScheduler"]


class LearningRateScheduler:
    """Base class: ``base_lr`` (0.01 until set) and ``__call__(iteration) -> rate``."""

    def __init__(self) -> None:
        self.base_lr = 0.01

    def __call__(self, iteration: int) -> float:
        raise NotImplementedError(f"{type(self).__name__} must define __call__(iteration)")


class FactorScheduler(LearningRateScheduler):
    """``base_lr * factor ** (iteration // step)``; each change is logged."""

    def __init__(self, step: int, factor: float = 0.1) -> None:
        super().__init__()
        if step < 1:
            raise ValueError(f"step {step} must be at least 1 (iterations between reductions)")
        if factor >= 1.0:
            raise ValueError(f"factor {factor} must be below 1 (it reduces the rate)")
        self.step, self.factor = step, factor
        self.old_lr, self.init = self.base_lr, False

    def __call__(self, iteration: int) -> float:
        if not self.init:  # base_lr may have been set after construction
            self.init, self.old_lr = True, self.base_lr
        lr = self.base_lr * math.pow(self.factor, int(iteration / self.step))
        if lr != self.old_lr:
            self.old_lr = lr
            logging.info("At Iteration [%d]: Switch to new learning rate %.5f", iteration, lr)
        return lr
