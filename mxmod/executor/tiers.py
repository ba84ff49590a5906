"""How mxmod's compiled programs are compiled: ``MXMOD_COMPILE``.

- ``sync`` (default): XLA's full optimisation; the first call of a new program (or new
  shapes) waits for it.
- ``fast``: XLA's backend optimisation level 0: compiles about twice as fast, runs slower
  (much slower for matrix-heavy CPU programs). For short jobs (tests, notebook cells).
- ``tiered``: the first calls of a new program run a level-0 build while the optimised one
  compiles in a background thread; calls switch to it as soon as it is ready (between two
  calls). Both builds come from one trace. Numbers agree to float rounding (XLA fuses
  differently at each level); ``tests/test_compile_tiers.py`` bounds the difference over
  20 training steps.
"""

from __future__ import annotations

import concurrent.futures
import os

import jax

from ..program_store import Stored, signature

MODES = ("sync", "fast", "tiered")
FAST_OPTIONS = {"xla_backend_optimization_level": 0}
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
        return Tiered(jax.jit(fn, **jit_kwargs))
    options = FAST_OPTIONS if mode == "fast" else None
    if key is not None:
        return Stored(jax.jit(fn, **jit_kwargs), key, options)
    if options:
        return jax.jit(fn, compiler_options=options, **jit_kwargs)
    return jax.jit(fn, **jit_kwargs)


class Tiered:
    """A jitted function whose calls run a quick build until the optimised one is ready."""

    def __init__(self, jitted):
        self._jitted = jitted
        self._builds: dict = {}  # signature -> [current Compiled, Future of the optimised]
        self._last = None  # the build of the most recent signature, tried first

    def __call__(self, *args):
        last = self._last
        if last is not None and last[1] is None:  # optimised, and the usual signature
            try:
                return last[0](*args)
            except TypeError:  # other shapes: look them up
                pass
        sig = signature(args)
        build = self._builds.get(sig)
        if build is None:
            lowered = self._jitted.lower(*args)  # one trace for both builds
            fast = lowered.compile(compiler_options=FAST_OPTIONS)
            build = self._builds[sig] = [fast, _POOL.submit(lowered.compile)]
        if build[1] is not None and build[1].done():
            build[0], build[1] = build[1].result(), None
        self._last = build
        return build[0](*args)

    def _cache_size(self) -> int:
        """Programs compiled (a signature's two builds count once), as ``jax.jit``'s."""
        return len(self._builds)

    def wait(self) -> None:
        """Block until every optimised build is ready (tests, benchmarks)."""
        for build in list(self._builds.values()):
            if build[1] is not None:
                build[0], build[1] = build[1].result(), None
