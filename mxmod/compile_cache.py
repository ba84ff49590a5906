"""JAX's persistent compilation cache, on by default for mxmod programs.

MXNet never compiled; mxmod compiles each program once per shape. Compiled programs are
kept on disk, so a second process (a rerun test suite, a notebook restarted, a job
resumed) loads them instead of compiling again.

- ``MXMOD_CACHE_DIR``: the cache folder (default ``$XDG_CACHE_HOME/mxmod`` or
  ``~/.cache/mxmod``); set it empty (``MXMOD_CACHE_DIR=``) to turn the cache off.
- ``MXMOD_CACHE_MAX_MB``: the size the folder is pruned to, least recently used first
  (default 2048).
- A cache folder the user gave JAX (``JAX_COMPILATION_CACHE_DIR`` or
  ``jax.config.update("jax_compilation_cache_dir", ...)``) wins: mxmod leaves it alone.

Entries live under a subfolder per jax/jaxlib version (JAX's keys also hold the backend
and devices), are written and pruned under JAX's file lock (``filelock``), so several
processes can share one folder.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import warnings
from typing import Optional

import jax
import jaxlib

DEFAULT_MAX_MB = 2048
# every program is worth keeping: a short job's many small compiles are its wait
MIN_COMPILE_SECS = 0.0

_ours: Optional[str] = None  # the folder mxmod configured, None when not ours or off


def default_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "mxmod")


def directory() -> Optional[str]:
    """The folder compiled programs are kept in (None: no persistent cache)."""
    return jax.config.jax_compilation_cache_dir or None


def enable(path: Optional[str] = None, max_mb: Optional[int] = None) -> str:
    """Keep compiled programs in ``path`` (default: ``MXMOD_CACHE_DIR`` or
    :func:`default_dir`), in a subfolder for this jax/jaxlib version. Takes effect for
    compiles not yet made in this process. Returns the folder."""
    global _ours
    root = path or os.environ.get("MXMOD_CACHE_DIR") or default_dir()
    if max_mb is None:
        max_mb = _env_int("MXMOD_CACHE_MAX_MB", DEFAULT_MAX_MB)
    folder = os.path.join(root, f"jax-{jax.__version__}-jaxlib-{jaxlib.__version__}")
    jax.config.update("jax_compilation_cache_dir", folder)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECS)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    # pruning needs JAX's file lock (filelock, a dependency of mxmod); without it, unbounded
    bounded = importlib.util.find_spec("filelock") is not None
    jax.config.update("jax_compilation_cache_max_size", int(max_mb) * 2**20 if bounded else -1)
    _ours = folder
    _quiet_locks(root)
    return folder


class _OwnLocks(logging.Filter):
    """Drops ``filelock``'s DEBUG lines about the cache's own lock files: a program that
    logs at DEBUG (SageMaker's scripts) would otherwise get four per compile."""

    def __init__(self, root: str):
        super().__init__()
        self.root = os.path.abspath(root)

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.DEBUG or self.root not in record.getMessage()


def _quiet_locks(root: str) -> None:
    lock_logger = logging.getLogger("filelock")
    for old in [f for f in lock_logger.filters if isinstance(f, _OwnLocks)]:
        lock_logger.removeFilter(old)
    lock_logger.addFilter(_OwnLocks(root))


def ours() -> Optional[str]:
    """The folder mxmod configured for JAX's entries, None when the cache is off or the
    user's own (``program_store`` keeps its programs beside it)."""
    if _ours is not None and jax.config.jax_compilation_cache_dir == _ours:
        return _ours
    return None


def max_bytes() -> int:
    """``MXMOD_CACHE_MAX_MB`` in bytes."""
    return _env_int("MXMOD_CACHE_MAX_MB", DEFAULT_MAX_MB) * 2**20


def disable() -> None:
    """Compile without the persistent cache from now on (if mxmod turned it on)."""
    global _ours
    if _ours is not None and jax.config.jax_compilation_cache_dir == _ours:
        jax.config.update("jax_compilation_cache_dir", None)
    _ours = None


def enable_by_default() -> None:
    """At import: turn the cache on unless the user turned it off or chose their own."""
    if os.environ.get("MXMOD_CACHE_DIR") == "" or jax.config.jax_compilation_cache_dir:
        return
    try:
        enable()
    except (OSError, RuntimeError) as err:  # e.g. no home folder
        warnings.warn(
            f"mxmod: persistent compilation cache off ({err}); set MXMOD_CACHE_DIR to a "
            "writable folder, or MXMOD_CACHE_DIR= to silence this",
            stacklevel=3,
        )


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name} must be a whole number of megabytes, got {raw!r}") from None
