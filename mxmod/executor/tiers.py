"""How mxmod's compiled programs are compiled: ``MXMOD_COMPILE``.

- ``sync`` (default): XLA's full optimisation; the first call of a new program (or new
  shapes) waits for it.
- ``fast``: XLA's backend optimisation level 0: compiles about twice as fast, runs slower
  (much slower for matrix-heavy CPU programs). For short jobs (tests, notebook cells).
- ``tiered``: a new program (or new shapes) runs a level-0 build at once; once it has run
  ``PROMOTE_AFTER`` times (a training loop, not a short job's few calls) the optimised
  build compiles in a background thread and calls switch to it when it is ready (between
  two calls). The level-0 builds are kept on disk like ``sync``'s programs. Numbers agree
  to float rounding (XLA fuses differently at each level); ``tests/test_compile_tiers.py``
  bounds the difference over 20 training steps.
"""

from __future__ import annotations

import concurrent.futures
import os
from typing import Optional

import jax
import numpy as np

from ..program_store import (
    COUNTS,
    Stored,
    compile_past_cache,
    load_program,
    program_digest,
    save_program,
    signature,
)

MODES = ("sync", "fast", "tiered")
FAST_OPTIONS = {"xla_backend_optimization_level": 0}
PROMOTE_AFTER = 50  # calls of one signature before its optimised build is compiled
_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="mxmod-xla")


def compile_mode() -> str:
    mode = os.environ.get("MXMOD_COMPILE", "sync") or "sync"
    if mode not in MODES:
        raise ValueError(f"MXMOD_COMPILE={mode!r}: use one of {', '.join(MODES)}")
    return mode


def program_jit(fn, key=None, **jit_kwargs):
    """``jax.jit(fn, **jit_kwargs)`` compiled as ``MXMOD_COMPILE`` says (no static
    arguments: the programs of ``Programs``). ``key`` (``stored.program_key``), when given,
    names everything ``fn`` was built from: its executables are then kept on disk."""
    mode = compile_mode()
    if mode == "tiered":
        return Tiered(jax.jit(fn, **jit_kwargs), key)
    options = FAST_OPTIONS if mode == "fast" else None
    if key is not None:
        return Stored(jax.jit(fn, **jit_kwargs), key, options)
    if options:
        return jax.jit(fn, compiler_options=options, **jit_kwargs)
    return jax.jit(fn, **jit_kwargs)


def drain() -> None:
    """Wait until every background compile started so far has finished."""
    _POOL.submit(lambda: None).result()


class _Build:
    """One signature's builds: the program running now, and the optimised one when it is
    compiling (``future``) or not yet asked for (``optimised`` False, ``future`` None)."""

    __slots__ = ("exe", "lowered", "spec", "calls", "future", "optimised")

    def __init__(self, exe, lowered, spec):
        self.exe, self.lowered, self.spec = exe, lowered, spec
        self.calls, self.future, self.optimised = 0, None, False

    def optimise(self, jitted) -> None:
        """Start compiling the optimised build in the background."""
        lowered = self.lowered if self.lowered is not None else jitted.lower(*self.spec)
        self.future, self.lowered = _POOL.submit(lowered.compile), None


class Tiered:
    """A jitted function whose calls run a quick (level-0) build; once a signature has run
    ``PROMOTE_AFTER`` times (a training loop, not a short job's few calls), its optimised
    build compiles in a background thread and later calls switch to it as soon as it is
    ready. With ``key`` the quick build is kept on disk (``program_store``): a later
    process runs it untraced."""

    def __init__(self, jitted, key: Optional[str] = None):
        self._jitted = jitted
        self._key = key
        self._builds: dict = {}  # signature -> _Build
        self._last: Optional[_Build] = None  # the most recent signature's, tried first

    def __call__(self, *args):
        last = self._last
        if last is not None and last.optimised:
            try:
                return last.exe(*args)
            except TypeError:  # other shapes: look them up
                pass
        sig = signature(args)
        build = self._builds.get(sig)
        if build is None:
            build = self._builds[sig] = self._first_build(args)
        if not build.optimised:
            self._advance(build)
        self._last = build
        return build.exe(*args)

    def _first_build(self, args: tuple) -> _Build:
        digest = program_digest(self._key + "|level0", args) if self._key else None
        exe = load_program(digest) if digest else None
        if exe is not None:
            return _Build(exe, None, _spec(args))
        COUNTS["built"] += 1
        lowered = self._jitted.lower(*args)
        exe = compile_past_cache(lowered, FAST_OPTIONS)
        if digest:
            save_program(digest, exe)
        return _Build(exe, lowered, None)

    def _advance(self, build: _Build) -> None:
        build.calls += 1
        if build.future is None and build.calls >= PROMOTE_AFTER:
            build.optimise(self._jitted)
        if build.future is not None and build.future.done():
            build.exe, build.future, build.optimised = build.future.result(), None, True

    def _cache_size(self) -> int:
        """Programs compiled (a signature's two builds count once), as ``jax.jit``'s."""
        return len(self._builds)

    def lower(self, *args):
        """``jax.jit(...).lower``: e.g. for XLA's memory analysis."""
        return self._jitted.lower(*args)

    def wait(self) -> None:
        """Compile every signature's optimised build now and switch to it (tests,
        benchmarks)."""
        for build in list(self._builds.values()):
            if build.optimised:
                continue
            if build.future is None:
                build.optimise(self._jitted)
            build.exe, build.future, build.optimised = build.future.result(), None, True


def _spec(args: tuple):
    """What lowering needs of ``args``: shapes, dtypes, shardings (not the buffers)."""

    def leaf(x):
        sharding = getattr(x, "sharding", None)
        return jax.ShapeDtypeStruct(np.shape(x), x.dtype, sharding=sharding)

    return jax.tree_util.tree_map(leaf, args)
