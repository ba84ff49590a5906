"""Compiled programs kept on disk by their structure: a later process runs them untraced
(Module programs, ``executor/programs.py``; imperative operators, ``ndarray/op_table.py``).

JAX's persistent cache (``compile_cache``) saves the XLA compile, but each process still
traces the program and lowers it to find the cache entry, and for an unrolled seq2seq
graph that is most of a warm run. A program built by ``Programs`` is fully determined by
what it was built from: the graph's canonical JSON, the placement, the layout, the
program's own key (optimizer signature, metric type and configuration, ...) and the
arguments' shapes, dtypes and shardings, plus mxmod's own code and JAX's version and
settings. ``program_tiers.Tiered`` hashes all of that into a file name (``program_digest``)
and keeps the compiled executable there (``jax.experimental.serialize_executable``); a
second process with the same key loads it without tracing.

A key is only made from values with a deterministic text (``stable_text``): a part that
is user code (a metric or optimizer class defined outside mxmod, a ``Custom`` operator)
or an object without one makes the program an ordinary ``jax.jit`` one. Files are written
atomically (temporary file, then rename), so processes can share the folder; a file that
cannot be read is recompiled and rewritten. The folder is pruned to ``MXMOD_CACHE_MAX_MB``
like JAX's. Executables load like JAX's own cache entries: only from the user's own
cache folder, never from files someone else supplied. Stored programs are compiled past
JAX's cache (see ``_jax_cache_off``), so a changed mxmod (an upgrade, an edited source file)
compiles them afresh once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import sys
from typing import Any, Optional

import jax
import jaxlib
import numpy as np
from jax.experimental.compilation_cache import compilation_cache as jax_cache

from . import compile_cache
from . import program_files as files

FORMAT = "mxmod-program-1"
# this process's programs: loaded from disk, built (traced and compiled), written, and
# quick builds replaced by their optimised build (``program_tiers``)
COUNTS = {"loaded": 0, "built": 0, "saved": 0, "promoted": 0}
SCHEDULE = ".schedule"  # the file beside a quick build saying when it is promoted


class Unstable(Exception):
    """A key part without a deterministic text: the program is not stored."""


def stable_text(obj: Any) -> str:
    """A text of ``obj`` equal in every process exactly when ``obj`` is; raises
    :class:`Unstable` for user code and for objects without one."""
    if obj is None or isinstance(obj, (bool, int, float, str, bytes)):
        return repr(obj)
    if isinstance(obj, (tuple, list)):
        inner = ",".join(stable_text(x) for x in obj)
        return f"{type(obj).__name__}({inner})"
    if isinstance(obj, dict):
        items = sorted((stable_text(k), stable_text(v)) for k, v in obj.items())
        return "dict(" + ",".join(f"{k}:{v}" for k, v in items) + ")"
    if isinstance(obj, (set, frozenset)):
        return "set(" + ",".join(sorted(stable_text(x) for x in obj)) + ")"
    if isinstance(obj, np.dtype):
        return f"dtype({obj.str})"
    if isinstance(obj, np.generic):
        return f"{type(obj).__name__}({obj.item()!r})"
    if isinstance(obj, type):
        return _type_text(obj)
    if isinstance(obj, jax.Device):
        return f"device({obj.platform}:{obj.id})"
    if dataclasses.is_dataclass(obj):
        fields = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
        return f"{_type_text(type(obj))}{stable_text(fields)}"
    key = getattr(obj, "key", None)  # optimizer.fused.Signature
    if type(obj).__name__ == "Signature" and isinstance(key, tuple):
        return f"{_type_text(type(obj))}{stable_text(key)}"
    raise Unstable(type(obj).__name__)


def _type_text(cls: type) -> str:
    module = getattr(cls, "__module__", "") or ""
    if module.split(".")[0] not in ("mxmod", "builtins", "numpy", "jax"):
        raise Unstable(f"{module}.{cls.__qualname__}")  # user code: its text may change
    return f"{module}.{cls.__qualname__}"


def _leaf_text(x: Any) -> str:
    sharding = getattr(x, "sharding", None)
    placed = ""
    if sharding is not None:
        ids = sorted(d.id for d in sharding.device_set)
        placed = f"{sharding!r}@{ids}"
    weak = getattr(x, "weak_type", False)
    return f"{type(x).__name__}{np.shape(x)}{np.dtype(getattr(x, 'dtype', type(x)))}{weak}{placed}"


def signature(args) -> tuple:
    leaves, tree = jax.tree_util.tree_flatten(args)
    return tree, tuple(
        (np.shape(x), getattr(x, "dtype", None), getattr(x, "sharding", None), type(x))
        for x in leaves
    )


def traced(args) -> bool:
    """Whether any of ``args`` is a JAX tracer (a call inside a program being traced)."""
    return any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(args))


def args_text(args: tuple) -> str:
    leaves, tree = jax.tree_util.tree_flatten(args)
    return f"{tree!r}|" + ";".join(_leaf_text(x) for x in leaves)


_ENVIRONMENT: Optional[str] = None


def environment_text() -> str:
    """mxmod's code, JAX's version, settings and devices: what else shapes a program."""
    global _ENVIRONMENT
    if _ENVIRONMENT is None:
        # mxmod's code, by each source file's size and modification time (no file is read)
        package = sys.modules[__name__.split(".")[0]]
        digest = hashlib.sha256(package.__mxmod_version__.encode())
        for root in getattr(package.__spec__, "submodule_search_locations", None) or ():
            for folder, dirs, files in sorted(os.walk(root)):
                dirs.sort()
                for name in sorted(files):
                    if name.endswith(".py"):
                        st = os.stat(os.path.join(folder, name))
                        rel = os.path.relpath(os.path.join(folder, name), root)
                        digest.update(f"{rel}:{st.st_size}:{st.st_mtime_ns};".encode())
        env = sorted((k, v) for k, v in os.environ.items() if k.startswith(("MXMOD_", "XLA_")))
        devices = [(d.platform, d.device_kind, d.id) for d in jax.devices()]
        _ENVIRONMENT = stable_text(
            (
                FORMAT,
                digest.hexdigest(),
                jax.__version__,
                jaxlib.__version__,
                jax.devices()[0].client.platform_version,
                devices,
                env,
                sorted((k, repr(v)) for k, v in jax.config.values.items()),
            )
        )
    return _ENVIRONMENT


def environment_digest() -> str:
    return hashlib.sha256(environment_text().encode()).hexdigest()


def folder() -> Optional[str]:
    """Where programs are stored: beside JAX's cache entries when mxmod keeps them."""
    jax_folder = compile_cache.ours()
    if jax_folder is None:
        return None
    return jax_folder.rstrip(os.sep) + "-programs"


def program_key(*parts: Any) -> Optional[str]:
    """The text naming a program built from ``parts``, or None when it cannot be stored
    (no cache folder; a multi-process job, whose programs span other hosts' devices)."""
    if folder() is None or jax.process_count() > 1:
        return None
    try:
        key = stable_text(parts)
    except Unstable:
        return None
    load_ahead()
    return key


def load_ahead() -> None:
    """Start loading the programs the previous process used (a background thread), so
    they are ready when this one first calls them: at bind, before parameters are
    initialised."""
    if folder() is not None and jax.process_count() == 1:
        files.ahead(folder(), environment_digest())


def program_digest(key: str, args: tuple) -> str:
    """The file name of the program ``key`` for arguments like ``args``."""
    text = "\n".join((environment_text(), key, args_text(args)))
    return hashlib.sha256(text.encode()).hexdigest()


def load_program(digest: str):
    """The stored executable ``digest`` (loaded ahead or now), or None."""
    base = folder()
    if base is None:
        return None
    record = files.ahead(base, environment_digest())
    exe = record.take(digest)
    if exe is None:
        exe = files.load(os.path.join(base, digest))
    if exe is not None:
        COUNTS["loaded"] += 1
        record.note_used(digest)
    return exe


def save_program(digest: str, exe) -> None:
    base = folder()
    if base is not None and files.save(os.path.join(base, digest), exe):
        COUNTS["saved"] += 1
        files.ahead(base, environment_digest()).note_used(digest)


def has_program(digest: str) -> bool:
    base = folder()
    return base is not None and os.path.exists(os.path.join(base, digest))


def save_schedule(digest: str, calls: int) -> None:
    """Keep beside program ``digest`` the call its optimised build is started at."""
    base = folder()
    if base is not None:
        path = os.path.join(base, digest + SCHEDULE)
        files.write_atomic(path, str(int(calls)).encode())


def load_schedule(digest: str) -> Optional[int]:
    base = folder()
    if base is None:
        return None
    path = os.path.join(base, digest + SCHEDULE)
    try:
        with open(path, "rb") as f:
            calls = int(f.read(32).decode("ascii"))
        os.utime(path)  # used: pruned after its program, not before
        return calls
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def compile_past_cache(lowered, options: Optional[dict] = None):
    """``lowered.compile(options)`` past JAX's persistent cache (``_jax_cache_off``)."""
    with _jax_cache_off():
        return lowered.compile(options) if options else lowered.compile()


@contextlib.contextmanager
def _jax_cache_off():
    """Compile past JAX's persistent cache: an executable loaded from it serializes
    without its machine code on CPU ("Function ... not found" when the copy runs), and
    keeping the program twice would double the disk used. JAX decides once per process
    whether its cache is used, so the decision is reset on the way in and out."""
    before = jax.config.jax_enable_compilation_cache
    jax.config.update("jax_enable_compilation_cache", False)
    jax_cache.reset_cache()
    try:
        yield
    finally:
        jax.config.update("jax_enable_compilation_cache", before)
        jax_cache.reset_cache()
