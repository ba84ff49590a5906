"""How mxmod's compiled programs are compiled: ``MXMOD_COMPILE``.

- ``tiered`` (default): a new CPU program (or new shapes) whose estimated run time is
  short runs a quick build (XLA level 0, legacy fusion emitters: compiles 2-4x faster,
  runs slower) at once. Once the quick build's extra run time has cost about what the
  optimised compile will (call ``P``: at least 3, at most ``PROMOTE_AFTER``; computed from
  the program, so the same in every run) the optimised build compiles in a background
  thread, and from call ``2P`` on the calls run it (waiting for it if it is late): a fixed
  switch, so a script gives the same numbers every time it runs. Heavy programs
  (estimated above ``HEAVY_S`` a call, e.g. a ResNet-50 step), programs on accelerators
  and every program of a multi-process job (its workers must run the same build: their
  collectives meet) compile optimised at once, as ``sync``. Both builds and the schedule
  are kept on disk: a later process replays them. A process that ends waits for the
  background compile running, not for those queued. Quick and optimised builds agree to
  float rounding (XLA fuses differently at each level); ``tests/test_compile_tiers.py``
  bounds the difference over 20 training steps.
- ``sync``: XLA's full optimisation for every program; its first call waits for it.
- ``fast``: the quick build only (never optimised).
"""

from __future__ import annotations

import concurrent.futures
import math
import os
import threading
import warnings
from typing import Callable, Optional

import jax
import numpy as np
from jax.extend.core import ClosedJaxpr, Jaxpr

from . import xla_options
from .program_store import (
    COUNTS,
    compile_past_cache,
    has_program,
    load_schedule,
    load_program,
    program_digest,
    save_program,
    save_schedule,
    signature,
    traced,
)

MODES = ("tiered", "sync", "fast")
QUICK_OPTIONS = {"xla_backend_optimization_level": 0, "xla_cpu_use_fusion_emitters": False}
_quick_options = dict(QUICK_OPTIONS)  # less what this XLA does not know
PROMOTE_AFTER = 50  # calls of one quick build at most before its optimised build compiles
QUICK_SLOWDOWN = 3.0  # a quick build's run time over the optimised one's (CPU, typical)
FULL_OVER_QUICK = 4.0  # the optimised compile's time over the quick one's (CPU, typical)
QUICK_S_PER_EQN = 5e-4  # a quick build's compile seconds per jaxpr operation (CPU, typical)
HEAVY_S = 0.03  # programs estimated to run longer than this compile optimised at once
# what a 2-core CPU's optimised programs roughly sustain (for the estimate only)
FLOPS_PER_S, BYTES_PER_S = 2e10, 1e10


def compile_mode() -> str:
    mode = os.environ.get("MXMOD_COMPILE", "tiered") or "tiered"
    if mode not in MODES:
        raise ValueError(f"MXMOD_COMPILE={mode!r}: use one of {', '.join(MODES)}")
    return mode


def cost_estimate(traced, args) -> Optional[float]:
    """Seconds one call of the optimised build of ``traced`` (``jax.jit(...).trace``)
    takes, roughly: its operations' flops and the bytes they read and write, unfused (the
    measure of XLA's cost analysis, from the jaxpr: no HLO conversion)."""
    flops, moved = _jaxpr_cost(traced.jaxpr.jaxpr)
    return flops / FLOPS_PER_S + moved / BYTES_PER_S


def _jaxpr_cost(jaxpr) -> tuple:
    flops = moved = 0.0
    for eqn in jaxpr.eqns:
        inner = [_jaxpr_cost(j) for j in _sub_jaxprs(eqn.params)]
        if inner:
            times = eqn.params.get("length", 1) if eqn.primitive.name == "scan" else 1
            if eqn.primitive.name == "cond":  # one branch runs
                inner = [max(inner)]
            flops += times * sum(f for f, _ in inner)
            moved += times * sum(m for _, m in inner)
            continue
        out = sum(_elements(v.aval) for v in eqn.outvars)
        moved += sum(_bytes(v.aval) for v in (*eqn.invars, *eqn.outvars))
        name = eqn.primitive.name
        if name == "dot_general":
            (lhs_contract, _), _ = eqn.params["dimension_numbers"]
            shape = eqn.invars[0].aval.shape
            flops += 2.0 * out * math.prod(shape[d] for d in lhs_contract)
        elif name == "conv_general_dilated":
            kernel = eqn.invars[1].aval.shape
            out_channels = kernel[eqn.params["dimension_numbers"].rhs_spec[0]]
            flops += 2.0 * out * math.prod(kernel) / max(1, out_channels)
        else:
            flops += out
    return flops, moved


def _sub_jaxprs(params):
    for value in params.values():
        for item in value if isinstance(value, (tuple, list)) else (value,):
            if isinstance(item, ClosedJaxpr):
                yield item.jaxpr
            elif isinstance(item, Jaxpr):
                yield item


def _elements(aval) -> int:
    return math.prod(getattr(aval, "shape", ()))


def _bytes(aval) -> int:
    dtype = getattr(aval, "dtype", None)
    return _elements(aval) * (dtype.itemsize if dtype is not None else 0)


def size_estimate(traced, args) -> Optional[float]:
    """A cheaper estimate for single operators: their arguments' bytes, each read a few
    times."""
    nbytes = sum(getattr(x, "nbytes", 0) for x in jax.tree_util.tree_leaves(args))
    return 4.0 * nbytes / BYTES_PER_S


def program_jit(fn, key=None, estimate: Callable = cost_estimate, **jit_kwargs):
    """``jax.jit(fn, **jit_kwargs)`` compiled as ``MXMOD_COMPILE`` says (no static
    arguments). ``key`` (``program_store.program_key``), when given, names everything
    ``fn`` was built from: its executables are then kept on disk. ``estimate(traced,
    args)`` gives a call's seconds (``tiered``: which programs are heavy)."""
    return wrap(xla_options.jit(fn, **jit_kwargs), key, estimate)


def wrap(jitted, key=None, estimate: Callable = cost_estimate):
    """An existing ``jax.jit`` function compiled as ``MXMOD_COMPILE`` says."""
    mode = compile_mode()
    # a multi-process job's programs meet in collectives: every worker runs the same build
    if mode == "sync" or (mode == "tiered" and jax.process_count() > 1):
        # every program optimised at once (kept on disk under ``key``)
        return Tiered(jitted, key, _always_heavy) if key is not None else jitted
    return Tiered(jitted, key, estimate, quick_only=mode == "fast")


def _always_heavy(traced, args) -> None:
    return None


_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="mxmod-xla")


def _abandon_queued(pool) -> None:
    """At the end of the process: drop the compiles not started (the one running must end:
    XLA cannot be interrupted, and a daemon thread inside it aborts the process)."""
    pool.shutdown(wait=False, cancel_futures=True)


# run by threading before it joins the pool's thread (threading's hooks run last-first)
getattr(threading, "_register_atexit", lambda fn: None)(lambda: _abandon_queued(_POOL))


# executables written to disk while their first call runs (never abandoned at exit: a
# write takes a fraction of a second and makes the next process warm)
_SAVES = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="mxmod-save")
# XLA:CPU serializes a sort's comparator only before the program's first run
_SAVE_FIRST = frozenset({"sort", "top_k", "approx_top_k"})


def drain() -> None:
    """Wait until every background compile (and write) started so far has finished."""
    _POOL.submit(lambda: None).result()
    _SAVES.submit(lambda: None).result()


_saving: dict = {}  # digest -> the write in flight


def _save_soon(digest: str, exe, jaxpr) -> None:
    """Keep ``exe`` on disk: written in the background while its first call runs (a heavy
    program's serialization is ~0.1-0.2 s), or now when it sorts."""
    if _primitives(jaxpr) & _SAVE_FIRST:
        save_program(digest, exe)
        return
    future = _saving[digest] = _SAVES.submit(save_program, digest, exe)
    future.add_done_callback(lambda _, d=digest: _saving.pop(d, None))


def _written(*digests) -> None:
    """Wait for the writes of these programs in flight (another Module of this process is
    about to look for them on disk)."""
    for digest in digests:
        future = _saving.get(digest)
        if future is not None:
            future.result()


def _primitives(jaxpr) -> set:
    """The names of the primitives in ``jaxpr`` and its inner jaxprs."""
    names: set = set()
    for eqn in jaxpr.eqns:
        names.add(eqn.primitive.name)
        for inner in _sub_jaxprs(eqn.params):
            names |= _primitives(inner)
    return names


class _Build:
    """One signature's builds: the program running now (``exe``), and the optimised one
    while it compiles or loads (``future``). ``optimised``: ``exe`` is final. A quick build
    starts its optimised build at call ``promote_after`` and runs it from call
    ``2 * promote_after`` (waiting for it if need be): a fixed switch, so every run of a
    program gives the same numbers, whatever the background compile's speed."""

    __slots__ = ("exe", "spec", "digest", "calls", "promote_after", "future", "optimised")

    def __init__(self, exe, spec=None, digest=None, promote_after=0):
        self.exe, self.spec, self.digest = exe, spec, digest
        self.calls, self.promote_after, self.future = 0, promote_after, None
        self.optimised = False

    def optimise(self, jitted) -> None:
        """Start the optimised build in the background: loaded when an earlier process
        kept it (``digest``), else compiled (and kept)."""
        if self.digest is not None and has_program(self.digest):
            self.future = _POOL.submit(load_program, self.digest)
        else:
            # lowered again from the shapes (JAX keeps recent lowerings: usually no trace);
            # a quick build holds no IR while it runs
            self.future = _POOL.submit(_compile_optimised, jitted.lower(*self.spec), self.digest)

    def finish(self, jitted) -> None:
        """Run the optimised build from now on (waiting for it if it is late). A kept file
        that no longer loads is compiled again; an optimised compile that fails leaves the
        quick build running, with a warning."""
        try:
            exe = self.future.result()
            if exe is None:  # a torn or foreign file
                exe = _compile_optimised(jitted.lower(*self.spec), self.digest)
        except Exception as err:
            warnings.warn(f"mxmod: the optimised build failed ({err}); the quick build goes on")
            exe = self.exe
        self.exe, self.future, self.spec, self.optimised = exe, None, None, True
        COUNTS["promoted"] += 1


def _compile_optimised(lowered, digest: Optional[str]):
    if digest is None:
        return lowered.compile()
    exe = compile_past_cache(lowered)
    save_program(digest, exe)
    return exe


class Tiered:
    """A jitted function compiled in tiers (module docstring). With ``key`` both builds
    and the switch schedule are kept on disk (``program_store``): a later process runs
    them untraced, on the same schedule; without, JAX's persistent cache keeps them."""

    def __init__(self, jitted, key: Optional[str], estimate: Callable, quick_only=False):
        self._jitted = jitted
        self._key = key
        self._estimate = estimate
        self._quick_only = quick_only
        self._builds: dict = {}  # signature -> _Build
        self._last: Optional[_Build] = None  # the most recent signature's, tried first

    def __call__(self, *args):
        last = self._last
        if last is not None and (last.optimised or last.promote_after == 0):
            try:
                return last.exe(*args)
            except (TypeError, ValueError):  # other shapes or devices: look them up
                pass
        if traced(args):  # called inside another program's trace: part of that program
            return self._jitted(*args)
        sig = signature(args)
        build = self._builds.get(sig)
        if build is None:
            build = self._builds[sig] = self._first_build(args)
        if not build.optimised:
            self._advance(build)
        self._last = build
        return build.exe(*args)

    def _digests(self, args):
        """File names of the optimised build and the quick one."""
        if self._key is None:
            return None, None
        return program_digest(self._key, args), program_digest(self._key + "|level0", args)

    def _compile(self, lowered, options=None):
        if self._key is None:  # JAX's persistent cache keeps it
            return lowered.compile(options) if options else lowered.compile()
        return compile_past_cache(lowered, options)

    def _compile_quick(self, lowered):
        """The quick build; an option another XLA version no longer has is dropped."""
        while True:
            try:
                return self._compile(lowered, dict(_quick_options))
            except Exception as err:
                unknown = [k for k in _quick_options if f"'{k}'" in str(err)]
                if "No such compile option" not in str(err) or not unknown:
                    raise
                for k in unknown:
                    del _quick_options[k]

    def _first_build(self, args: tuple) -> _Build:
        full, quick = self._digests(args)
        _written(full, quick)
        if self._quick_only:
            exe = load_program(quick) if quick else None
            if exe is not None:
                return _Build(exe)
        elif full is not None:
            promote_after = load_schedule(quick)
            if promote_after is None:  # heavy for an earlier process (or never built)
                exe = load_program(full)
                if exe is not None:
                    return _final(exe)
            else:  # light: the same schedule as the process that built it
                exe = load_program(quick)
                if exe is not None:
                    return _Build(exe, _spec(args), full, promote_after)
        COUNTS["built"] += 1
        traced = self._jitted.trace(*args)
        seconds = None if not _on_cpu(args) else self._estimate(traced, args)
        lowered = traced.lower()
        if not self._quick_only and (seconds is None or seconds > HEAVY_S):
            exe = self._compile(lowered)
            if full:
                _save_soon(full, exe, traced.jaxpr.jaxpr)
            return _final(exe)
        exe = self._compile_quick(lowered)
        promote_after = self._promote_after(seconds, _count_eqns(traced.jaxpr.jaxpr))
        if quick:
            save_program(quick, exe)
            if promote_after:
                save_schedule(quick, promote_after)
        return _Build(exe, _spec(args), full, promote_after)

    def _promote_after(self, seconds: Optional[float], eqns: int) -> int:
        """Calls of a quick build before its optimised build starts (0: never): when the
        quick build's extra run time has cost about what the optimised compile will (so a
        short job never pays for a compile it would not win back). From the program alone
        (its operations and cost estimate), so every run keeps the same schedule."""
        if self._quick_only:
            return 0
        if not seconds:
            return PROMOTE_AFTER
        full_compile_s = FULL_OVER_QUICK * QUICK_S_PER_EQN * eqns
        calls = math.ceil(full_compile_s / ((QUICK_SLOWDOWN - 1.0) * seconds))
        return max(3, min(PROMOTE_AFTER, calls))

    def _advance(self, build: _Build) -> None:
        if build.promote_after == 0:
            return
        build.calls += 1
        if build.future is None and build.calls >= build.promote_after:
            build.optimise(self._jitted)
        if build.calls >= 2 * build.promote_after:
            build.finish(self._jitted)

    def _cache_size(self) -> int:
        """Programs compiled (a signature's two builds count once), as ``jax.jit``'s."""
        return len(self._builds)

    def lower(self, *args):
        """``jax.jit(...).lower``: e.g. for XLA's memory analysis."""
        return self._jitted.lower(*args)

    def wait(self) -> None:
        """Compile every signature's optimised build now and switch to it (tests,
        benchmarks); ``fast`` keeps its quick builds."""
        if self._quick_only:
            return
        for build in list(self._builds.values()):
            if build.optimised:
                continue
            if build.future is None:
                build.optimise(self._jitted)
            build.finish(self._jitted)


def _count_eqns(jaxpr) -> int:
    """Operations of ``jaxpr``, those of its inner jaxprs included."""
    return sum(1 + sum(_count_eqns(j) for j in _sub_jaxprs(e.params)) for e in jaxpr.eqns)


def _final(exe) -> _Build:
    build = _Build(exe)
    build.optimised = True
    return build


def _on_cpu(args) -> bool:
    """Whether ``args`` live on CPU devices (quick builds are made for CPU programs only:
    an accelerator's level-0 run speed is unmeasured)."""
    for x in jax.tree_util.tree_leaves(args):
        sharding = getattr(x, "sharding", None)
        if sharding is not None:
            return all(d.platform == "cpu" for d in sharding.device_set)
    return jax.default_backend() == "cpu"


def _spec(args: tuple):
    """What lowering needs of ``args``: shapes, dtypes, shardings (not the buffers)."""

    def leaf(x):
        if not hasattr(x, "dtype"):  # a Python scalar: lowered as given
            return x
        sharding = getattr(x, "sharding", None)
        weak = bool(getattr(x, "weak_type", False))
        return jax.ShapeDtypeStruct(np.shape(x), x.dtype, sharding=sharding, weak_type=weak)

    return jax.tree_util.tree_map(leaf, args)
