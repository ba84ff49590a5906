"""``mx.contrib.autograd``: MXNet's first autograd interface (``train_section``,
``compute_gradient``...), on the same tape as ``mx.autograd`` (``ndarray/tape.py``)."""

from __future__ import annotations

import functools
from typing import Any, Callable

from ..autograd import backward, mark_variables
from ..ndarray import NDArray, array, tape  # noqa: F401 (star-import names, as MXNet)
from ..ndarray.ops import zeros_like

# no __all__, as MXNet's module: ``import *`` also gives NDArray, array, zeros_like


def set_is_training(is_train: bool) -> bool:
    """Turn training (and recording) on or off; returns the previous training state."""
    prev = tape.set_training(is_train)
    tape.set_recording(is_train)
    return prev


class TrainingStateScope:
    """Scope with training and recording on (``True``) or off."""

    def __init__(self, enter_state: bool):
        self._enter, self._old = bool(enter_state), None

    def __enter__(self):
        self._old = (tape.is_recording(), tape.is_training())
        set_is_training(self._enter)

    def __exit__(self, *exc: Any) -> None:
        tape.set_recording(self._old[0])
        tape.set_training(self._old[1])


def train_section() -> TrainingStateScope:
    """Record operators (in training mode) for ``compute_gradient``."""
    return TrainingStateScope(True)


def test_section() -> TrainingStateScope:
    """Record nothing, inference mode."""
    return TrainingStateScope(False)


def compute_gradient(outputs: Any) -> None:
    """Gradients of ``outputs`` (ones as their head gradients) into the marked buffers."""
    backward(outputs)


def grad_and_loss(func: Callable, argnum: Any = None) -> Callable:
    """``func`` returning ``(gradients of its NDArray arguments, its outputs)``."""

    @functools.wraps(func)
    def wrapped(*args: NDArray):
        variables = list(args)
        if argnum is not None:
            picks = argnum if isinstance(argnum, (list, tuple)) else [argnum]
            variables = [args[i] for i in picks]
        for x in variables:
            if not isinstance(x, NDArray):
                raise TypeError(
                    f"grad_and_loss: arguments must be NDArrays, got {type(x).__name__}"
                )
        grads = [zeros_like(x) for x in variables]
        mark_variables(variables, grads)
        with train_section():
            outputs = func(*args)
        compute_gradient([outputs] if isinstance(outputs, NDArray) else outputs)
        return grads, outputs

    return wrapped


def grad(func: Callable, argnum: Any = None) -> Callable:
    """``func`` returning the gradients of its NDArray arguments."""
    with_loss = grad_and_loss(func, argnum)

    @functools.wraps(func)
    def wrapped(*args: NDArray):
        return with_loss(*args)[0]

    return wrapped
