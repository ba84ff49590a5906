"""Small helpers of ``mx.test_utils`` that MXNet's own test files import.

``np_reduce`` and ``random_sample`` behave as MXNet 1.9.1's; ``discard_stderr``
silences the process's file descriptor 2 for a block; ``use_np`` marks code that
needs MXNet's NumPy semantics (``mx.np``), which mxmod does not provide.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from typing import Any, Callable

import numpy as np

__all__ = ["np_reduce", "random_sample", "discard_stderr", "use_np", "is_op_runnable"]


def np_reduce(dat: np.ndarray, axis: Any, keepdims: bool, numpy_reduce_func: Callable):
    """Apply a one-axis NumPy reduction over each axis in ``axis`` (all if None)."""
    if isinstance(axis, int):
        axes = [axis]
    else:
        axes = list(axis) if axis is not None else list(range(dat.ndim))
    ret = dat
    for i in sorted(axes, reverse=True):
        ret = numpy_reduce_func(ret, axis=i)
    if keepdims:
        shape = list(dat.shape)
        for i in axes:
            shape[i] = 1
        ret = ret.reshape(tuple(shape))
    return ret


def random_sample(population: list, k: int) -> list:
    """``k`` distinct items of ``population``, drawn with NumPy's global RNG."""
    if not 0 <= k <= len(population):
        raise ValueError(
            f"random_sample: k={k} must be between 0 and len(population)={len(population)}"
        )
    shuffled = list(population)
    np.random.shuffle(shuffled)
    return shuffled[:k]


@contextlib.contextmanager
def discard_stderr():
    """Send everything written to stderr (fd 2, native code too) to the null device."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


def use_np(func: Any) -> Any:
    """Decorator for MXNet NumPy-semantics code: the decorated callable raises when used."""

    @functools.wraps(func)
    def unavailable(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"{getattr(func, '__name__', func)!s} needs mx.np (MXNet's NumPy semantics), which "
            "mxmod does not provide; use mx.nd / mx.sym"
        )

    return unavailable


def is_op_runnable() -> bool:
    """True: every mxmod operator runs on the default context."""
    return True
