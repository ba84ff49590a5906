"""Helpers from ``mxnet.util`` that Module-API programs call.

* ``get_gpu_count``/``get_gpu_memory``/``get_cuda_compute_capability`` answer from
  JAX's devices.
* ``getenv``/``setenv`` read and write the process environment (MXNet goes through
  its C runtime; the visible effect for Python is the same).
* MXNet's NumPy-semantics switches (``set_np``, ``np_shape``, ``use_np`` ...) belong
  to the ``mx.np`` interface, which mxmod does not implement: asking for the legacy
  (off) state works, turning them on raises NotImplementedError.
"""

from __future__ import annotations

import functools
import os
from typing import Any, Callable

from .base import named
from .context import gpu_memory_info, num_gpus

__all__ = [
    "get_gpu_count",
    "get_gpu_memory",
    "get_cuda_compute_capability",
    "getenv",
    "setenv",
    "is_np_shape",
    "set_np_shape",
    "np_shape",
    "use_np_shape",
    "is_np_array",
    "np_array",
    "use_np_array",
    "use_np",
    "set_np",
    "reset_np",
]


def get_gpu_count() -> int:
    """Number of GPUs JAX sees (``mx.util.get_gpu_count``)."""
    return num_gpus()


def get_gpu_memory(gpu_dev_id: int) -> tuple:
    """``(free, total)`` bytes of GPU ``gpu_dev_id`` (``mx.util.get_gpu_memory``)."""
    return gpu_memory_info(gpu_dev_id)


def get_cuda_compute_capability(ctx: Any) -> int:
    """Compute capability of a GPU context as MXNet's integer (``80`` for 8.0).

    Raises:
        ValueError: ``ctx`` is not a GPU context.
        MXNetError: the GPU does not exist.
    """
    if getattr(ctx, "device_type", None) != "gpu":
        raise ValueError(
            f"Expecting a gpu context to get cuda compute capability, while received ctx {ctx}"
        )
    cap = str(getattr(ctx.jax_device, "compute_capability", ""))
    if not cap:
        raise NotImplementedError(f"the JAX device of {ctx} reports no compute capability")
    major, _, minor = cap.partition(".")
    return int(major) * 10 + int(minor or 0)


def getenv(name: str) -> str | None:
    """Value of environment variable ``name``, or None (``mx.util.getenv``)."""
    return os.environ.get(name)


def setenv(name: str, value: str | None) -> None:
    """Set (or with None, remove) environment variable ``name`` (``mx.util.setenv``)."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = str(value)


def _np_mode_refused(what: str) -> NotImplementedError:
    return NotImplementedError(
        f"{what}: MXNet's NumPy semantics (the mx.np interface) are not implemented by mxmod; "
        f"use the legacy mx.nd/mx.sym semantics (leave it off)"
    )


def is_np_shape() -> bool:
    """Always False: mxmod uses MXNet's legacy shape semantics."""
    return False


def is_np_array() -> bool:
    """Always False: mxmod has no ``mx.np`` arrays."""
    return False


def set_np_shape(active: bool) -> bool:
    """Turn NumPy shape semantics off (a no-op) and return the previous state (False).

    Raises:
        NotImplementedError: for ``active=True``.
    """
    if active:
        raise _np_mode_refused("set_np_shape(True)")
    return False


def set_np(shape: bool = True, array: bool = True, dtype: bool = False) -> None:
    """Refuses to turn on NumPy semantics; ``set_np(False, False)`` is accepted.

    Raises:
        NotImplementedError: if any of ``shape``/``array``/``dtype`` is True.
    """
    if shape or array or dtype:
        raise _np_mode_refused("set_np(...)")


def reset_np() -> None:
    """Back to legacy semantics: nothing to do in mxmod."""


class _LegacyScope:
    """Context manager/decorator for ``np_shape(False)``/``np_array(False)`` (no-ops)."""

    def __enter__(self) -> "_LegacyScope":
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def __call__(self, func: Callable) -> Callable:
        return func


def _scope_switch(name: str, semantics: str) -> Callable[..., _LegacyScope]:
    def switch(active: bool = True) -> _LegacyScope:
        if active:
            raise _np_mode_refused(f"{name}(True)")
        return _LegacyScope()

    return named(
        switch,
        name,
        f"""Scope for NumPy {semantics} semantics; only ``active=False`` is supported.

    Raises:
        NotImplementedError: for ``active=True``.
    """,
    )


np_shape = _scope_switch("np_shape", "shape")
np_array = _scope_switch("np_array", "array")


def _refusing_decorator(name: str) -> Callable:
    def decorator(func: Callable) -> Callable:
        @functools.wraps(func)
        def refused(*args: Any, **kwargs: Any) -> Any:
            raise _np_mode_refused(f"{name} on {getattr(func, '__name__', func)}")

        return refused

    decorator.__name__ = name
    decorator.__doc__ = (
        f"MXNet's ``{name}`` decorator; the decorated function raises "
        f"NotImplementedError when called (NumPy semantics are not supported)."
    )
    return decorator


use_np_shape = _refusing_decorator("use_np_shape")
use_np_array = _refusing_decorator("use_np_array")
use_np = _refusing_decorator("use_np")
