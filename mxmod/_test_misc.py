"""Small helpers of ``mx.test_utils`` that MXNet's own test files import.

``np_reduce`` and ``random_sample`` behave as MXNet 1.9.1's; ``discard_stderr``
silences the process's file descriptor 2 for a block; ``use_np`` marks code that
needs MXNet's NumPy semantics (``mx.np``), which mxmod does not provide; the
``is_*``/``has_*`` predicates and ``effective_dtype`` describe where the tests run.
"""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import sys
from typing import Any, Callable

import jax
import numpy as np

from .ndarray import waitall
from .util import get_cuda_compute_capability

__all__ = [
    "np_reduce",
    "random_sample",
    "discard_stderr",
    "use_np",
    "is_op_runnable",
    "is_cd_run",
    "is_aarch64_run",
    "has_tvm_ops",
    "effective_dtype",
    "check_gluon_hybridize_consistency",
    "retry",
    "environment",
]


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


def is_cd_run() -> bool:
    """Whether this runs as part of a Continuous Delivery job (``CD_JOB=1``)."""
    return os.environ.get("CD_JOB", "0") == "1"


def is_aarch64_run() -> bool:
    """Whether this machine is aarch64."""
    return platform.machine() == "aarch64"


def has_tvm_ops() -> bool:
    """False: mxmod has no TVM-generated operators."""
    return False


def effective_dtype(dat: Any) -> np.dtype:
    """The dtype whose tolerances a comparison with ``dat`` should use: float16 for float32
    data on an NVIDIA GPU of compute capability 8.0 or more, whose float32 matrix products
    and convolutions round their inputs as TF32 (JAX's default precision there), unless
    ``NVIDIA_TF32_OVERRIDE=0``; else ``dat``'s own dtype."""
    dtype = np.dtype(dat.dtype)
    if dtype != np.float32 or os.environ.get("NVIDIA_TF32_OVERRIDE") == "0":
        return dtype
    ctx = getattr(dat, "ctx", None)
    if ctx is None or ctx.device_type != "gpu":
        return dtype
    if str(jax.config.jax_default_matmul_precision or "").lower() in ("highest", "float32"):
        return dtype
    try:
        capability = get_cuda_compute_capability(ctx)
    except (NotImplementedError, ValueError):
        return dtype
    return np.dtype(np.float16) if capability >= 80 else dtype


def check_gluon_hybridize_consistency(net_builder: Any, data_l: Any, *args: Any, **kwargs: Any):
    """Gluon's hybridize check: mxmod implements MXNet's symbolic Module API, not Gluon."""
    raise NotImplementedError(
        "check_gluon_hybridize_consistency: mxmod has no Gluon HybridBlock; "
        "check a symbol with check_consistency or check_symbolic_forward instead"
    )


def retry(n: int) -> Any:
    """Decorator: rerun a stochastic test up to ``n`` times while it fails an assertion."""
    if n <= 0:
        raise ValueError(f"retry(n) needs n > 0, got {n}")

    def decorate(f):
        def wrapper(*args, **kwargs):
            for i in range(n):
                try:
                    return f(*args, **kwargs)
                except AssertionError:
                    if i == n - 1:
                        raise
                    waitall()

        wrapper.__name__ = f.__name__
        return wrapper

    return decorate


@contextlib.contextmanager
def environment(*args: Any):
    """Set environment variables for the ``with`` body and restore them after.

    Call as ``environment(name, value)`` or ``environment({name: value, ...})``; a
    value of None unsets the variable.

    Raises:
        TypeError: for any other calling form.
    """
    if len(args) == 1 and isinstance(args[0], dict):
        env = dict(args[0])
    elif len(args) == 2:
        env = {args[0]: args[1]}
    else:
        raise TypeError(
            "environment() takes one dict or a name and a value, e.g. "
            "environment('MXNET_ENGINE_TYPE', 'NaiveEngine')"
        )
    snapshot = {k: os.environ.get(k) for k in env}

    def apply(values):
        for key, value in values.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

    apply(env)
    try:
        yield
    finally:
        waitall()
        apply(snapshot)
