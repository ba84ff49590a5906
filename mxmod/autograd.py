"""``mx.autograd`` stand-in: imperative gradient recording is outside mxmod.

MXNet test files and scripts often ``import mxnet.autograd`` at the top, or wrap
inference in ``autograd.predict_mode()``/``autograd.pause()``. Those load and run:
mxmod never records, so the queries answer "not recording"/"not training" and the
scopes that keep that state are no-ops. Anything that would record a tape or train
imperatively (``record``, ``train_mode``, ``backward``, ``grad``, ``mark_variables``)
raises NotImplementedError naming the Module-API replacement.
"""

from __future__ import annotations

import contextlib
from typing import Any

__all__ = [
    "is_recording",
    "is_training",
    "set_recording",
    "set_training",
    "record",
    "pause",
    "train_mode",
    "predict_mode",
    "mark_variables",
    "backward",
    "grad",
    "get_symbol",
    "Function",
]

_ADVICE = (
    "mxmod has no imperative autograd; compute gradients with mx.mod.Module "
    "(forward_backward) or an executor from Symbol.simple_bind (forward(is_train=True), backward)"
)


def unsupported_error(what: str, prefix: str = "mx.autograd.") -> NotImplementedError:
    return NotImplementedError(f"{prefix}{what} is not available in mxmod: {_ADVICE}")


def is_recording() -> bool:
    """Always False: mxmod never records an imperative tape."""
    return False


def is_training() -> bool:
    """Always False: imperative NDArray operators run in inference mode."""
    return False


def set_recording(is_recording: bool) -> bool:  # noqa: A002 (MXNet's parameter name)
    """Returns the previous state (False); turning recording on raises NotImplementedError."""
    if is_recording:
        raise unsupported_error("set_recording(True)")
    return False


def set_training(train_mode: bool) -> bool:
    """Returns the previous state (False); turning training mode on raises NotImplementedError."""
    if train_mode:
        raise unsupported_error("set_training(True)")
    return False


def record(train_mode: bool = True):
    """Raises NotImplementedError: there is no tape to record."""
    raise unsupported_error("record()")


@contextlib.contextmanager
def pause(train_mode: bool = False):
    """No-op scope (nothing is recorded); ``train_mode=True`` raises NotImplementedError."""
    if train_mode:
        raise unsupported_error("pause(train_mode=True)")
    yield


@contextlib.contextmanager
def predict_mode():
    """No-op scope: imperative operators already run in inference mode."""
    yield


def train_mode():
    """Raises NotImplementedError: imperative operators cannot run in training mode."""
    raise unsupported_error("train_mode()")


def mark_variables(*args: Any, **kwargs: Any) -> None:
    raise unsupported_error("mark_variables()")


def backward(*args: Any, **kwargs: Any) -> None:
    raise unsupported_error("backward()")


def grad(*args: Any, **kwargs: Any) -> Any:
    raise unsupported_error("grad()")


def get_symbol(*args: Any, **kwargs: Any) -> Any:
    raise unsupported_error("get_symbol()")


class Function:
    """Custom imperative differentiable function: creating one raises NotImplementedError."""

    def __init__(self) -> None:
        raise unsupported_error("Function")
