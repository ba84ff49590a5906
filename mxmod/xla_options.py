"""The XLA settings mxmod's programs compile with (``MXMOD_XLA_DEFAULTS=1``: XLA's own).

On CPU, XLA hands convolutions to YNNPACK by default. YNNPACK sets each convolution up on
its program's first run, and on the CPUs measured its kernels are slower than XLA's Eigen
ones: a ResNet-50 training step at batch 8 (2-core AMD EPYC, ``benchmarks/first_step.py``)
takes 1.45 s instead of 1.87 s, and its first run 1.7 s instead of 2.2-3.2 s. So mxmod
keeps YNNPACK for the rest of what XLA gives it (matrix products, reductions).

XLA's ``CPU_OPT_PRESET_FAST_COMPILE`` preset fuses less around convolutions (an activation
or a layout transpose stays its own kernel instead of joining a normalisation's loop):
fewer, simpler kernels to generate. On a 2-core Intel Xeon (AVX-512) the ResNet-50 step
above compiles in 3.6-3.8 s instead of 4.2-4.4 s and runs in 1.4 s instead of 2.0 s; MLP,
LSTM and small-CNN programs compile and run as before (same programs or within noise).

The options are CPU compiler settings, set when JAX's default backend is the CPU (an
accelerator's compiler is never handed them). An option (or value) an XLA version lacks is
left out, found once per process by compiling a one-operation program, and so is one the
user set in ``XLA_FLAGS``.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import os
import threading
from typing import Optional

import jax
import numpy as np

CPU_OPTIONS = {
    # XLA's default list less INDIVIDUAL_CONVOLUTION (a value replaces the whole list)
    "xla_cpu_experimental_ynn_fusion_type": (
        "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT,LIBRARY_FUSION_TYPE_REDUCE"
    ),
    "xla_cpu_opt_preset": "CPU_OPT_PRESET_FAST_COMPILE",
}

_accepted: Optional[dict] = None
_probe: Optional[concurrent.futures.Future] = None
_probe_lock = threading.Lock()


def compiler_options() -> dict:
    """The options mxmod compiles with, those this XLA accepts."""
    global _accepted
    if _accepted is None:
        _accepted = start_probe().result()
    return dict(_accepted)


def reset() -> None:
    """Find the options again at the next compile (tests that change the environment)."""
    global _accepted, _probe
    with _probe_lock:
        _accepted, _probe = None, None


def start_probe() -> concurrent.futures.Future:
    """Start finding the options this XLA accepts (a background thread: its probe compile
    runs while a Module binds and initialises); ``compiler_options`` waits for it."""
    global _probe
    with _probe_lock:
        if _probe is None:
            _probe = concurrent.futures.Future()
            threading.Thread(target=_run_probe, args=(_probe,), daemon=True).start()
            # a process ending (say, on a user's error) while the probe compiles would kill
            # the thread inside XLA, which aborts the process: let the probe finish first
            atexit.register(_finish_probe, _probe)
        return _probe


def _finish_probe(future: concurrent.futures.Future) -> None:
    concurrent.futures.wait([future], timeout=60)


def _run_probe(future: concurrent.futures.Future) -> None:
    try:
        keep_defaults = os.environ.get("MXMOD_XLA_DEFAULTS", "") not in ("", "0")
        keep_defaults = keep_defaults or jax.default_backend() != "cpu"
        flags = os.environ.get("XLA_FLAGS", "")
        # an option the user set in XLA_FLAGS is theirs (compile options would override it)
        wanted = {k: v for k, v in CPU_OPTIONS.items() if f"--{k}=" not in flags}
        future.set_result({} if keep_defaults else _accepted_by_xla(wanted))
    except BaseException as err:  # the caller of compiler_options() sees it
        future.set_exception(err)


def _accepted_by_xla(options: dict) -> dict:
    """``options`` less those this XLA rejects: one probe compile when it takes them all
    (the usual case), else one per option."""
    one = jax.device_put(np.float32(0), jax.local_devices(backend="cpu")[0])

    def accepted(opts: dict) -> bool:
        try:
            jax.jit(lambda x: x + 1, compiler_options=opts).lower(one).compile()
        except Exception:  # jax raises XlaRuntimeError / JaxRuntimeError by version
            return False
        return True

    if not options or accepted(options):
        return dict(options)
    return {name: value for name, value in options.items() if accepted({name: value})}


def jit(fn, **jit_kwargs) -> "Jit":
    """``jax.jit(fn, **jit_kwargs)`` compiled with mxmod's options (at every compile of
    it: a quick build's extra options are added to them)."""
    return Jit(fn, jit_kwargs)


class Jit:
    """A ``jax.jit`` function with mxmod's options; called inside another program's trace
    it becomes part of that program (JAX takes options at the top level only)."""

    def __init__(self, fn, jit_kwargs: dict):
        self._fn, self._kwargs = fn, jit_kwargs
        self._jitted = None
        self._nested = jax.jit(fn, **jit_kwargs)
        start_probe()  # the options are needed at the first compile, not now

    @property
    def _top(self):
        if self._jitted is None:
            options = compiler_options()
            self._jitted = jax.jit(self._fn, compiler_options=options, **self._kwargs)
        return self._jitted

    def __call__(self, *args, **kwargs):
        try:
            return self._top(*args, **kwargs)
        except ValueError as err:  # inside another trace
            if "compiler_options" not in str(err):
                raise
            return self._nested(*args, **kwargs)

    def __getattr__(self, name):  # lower, trace, eval_shape, ...
        return getattr(self._top, name)
