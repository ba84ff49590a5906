"""Profiling, as ``mxnet.profiler``, on top of ``jax.profiler``.

``set_config``/``set_state``/``pause``/``resume``/``dump``/``dumps`` and the
``Domain``/``Task``/``Frame``/``Event``/``Counter``/``Marker`` objects keep MXNet's
names and meaning. Differences from MXNet:

* The trace comes from XLA (``jax.profiler``): compiled executions
  (``PjitFunction(...)``), device kernels on GPU/TPU, host runtime activity. It is
  not a per-operator trace of the symbol (XLA fuses operators).
* ``dump()`` writes ``filename`` (default ``profile.json``) as Chrome-trace JSON like
  MXNet, which Perfetto (ui.perfetto.dev) and ``chrome://tracing`` open. The same
  trace is kept for TensorBoard/XProf under ``<filename stem>_tensorboard/``
  (``tensorboard --logdir profile_tensorboard``).
* ``pause()``/``resume()`` end and start JAX trace segments; ``dump()`` merges them.
* ``dumps()`` aggregates (needs ``aggregate_stats=True``): the ``operator`` block
  lists compiled executions, domain/frame/event blocks come from the Python objects.
  There are no MXNet C-API or storage blocks.
* ``profile_symbolic``/``profile_imperative``/``profile_api``/``profile_memory``/
  ``profile_all`` are accepted; JAX's trace covers all of them at once.
  ``continuous_dump=True`` writes the trace file at every ``set_state('stop')`` (and
  ``dump``) instead of on a timer; ``profile_process='server'`` raises NotImplementedError.
* ``Scope`` (MXNet 2.x) names a region of the trace.
"""

from __future__ import annotations

import atexit
import time
import warnings
from typing import Any

import jax

from . import _profiler_stats as _ps
from .base import MXNetError

__all__ = [
    "set_config",
    "set_state",
    "pause",
    "resume",
    "dump",
    "dumps",
    "Domain",
    "Task",
    "Frame",
    "Event",
    "Counter",
    "Marker",
    "Scope",
    "profiler_set_config",
    "profiler_set_state",
    "dump_profile",
]

_KEYS = (
    "filename",
    "profile_all",
    "profile_symbolic",
    "profile_imperative",
    "profile_memory",
    "profile_api",
    "continuous_dump",
    "dump_period",
    "aggregate_stats",
    "profile_process",
)


_Profiler = _ps.Session
_PROFILER = _Profiler()


@atexit.register
def _dump_at_exit() -> None:
    """MXNet writes a profiled run's trace file when the process ends, so a program
    that never calls ``dump()`` (example/profiler/profiler_executor.py) still gets it."""
    if _PROFILER.origin_ns is not None:
        try:
            dump(finished=True)
        except OSError as err:  # e.g. the file's folder is gone by now
            warnings.warn(f"mx.profiler: could not write the trace at exit: {err}")


def _truthy(value: Any) -> bool:
    return str(value).lower() in ("1", "true")


def set_config(**kwargs: Any) -> None:
    """Configure the profiler (keywords only), as ``mx.profiler.set_config``.

    Args:
        **kwargs: ``filename`` (the trace file), ``profile_all``, ``profile_symbolic``,
            ``profile_imperative``, ``profile_memory``, ``profile_api``,
            ``aggregate_stats`` (keep statistics for :func:`dumps`), ``dump_period``,
            ``continuous_dump`` (the file is also written at each stop),
            ``profile_process`` (``'worker'`` only).

    Raises:
        MXNetError: an unknown keyword.
        NotImplementedError: ``profile_process='server'``.
    """
    unknown = [k for k in kwargs if k not in _KEYS]
    if unknown:
        raise MXNetError(
            f"Cannot find argument '{unknown[0]}', Possible Arguments: {', '.join(_KEYS)}"
        )
    if kwargs.get("profile_process", "worker") != "worker":
        raise NotImplementedError(
            "profiler profile_process='server': mxmod has no parameter "
            "server (dist kvstores run on jax.distributed)"
        )
    for key, value in kwargs.items():
        _PROFILER.config[key] = str(value) if key == "filename" else value
    for key in ("aggregate_stats", "continuous_dump"):
        if key in kwargs:
            _PROFILER.config[key] = _truthy(kwargs[key])


def set_state(state: str = "stop", profile_process: str = "worker") -> None:
    """Start (``'run'``) or stop (``'stop'``) profiling, as ``mx.profiler.set_state``.

    Raises:
        ValueError: ``state`` is neither ``'run'`` nor ``'stop'``.
        NotImplementedError: ``profile_process='server'``.
    """
    if state not in ("run", "stop"):
        raise ValueError(f"profiler state must be 'run' or 'stop', got {state!r}")
    if profile_process != "worker":
        raise NotImplementedError("profile_process='server' is not supported by mxmod")
    if state == "run" and _PROFILER.state != "run":
        _PROFILER.state, _PROFILER.paused = "run", False
        _PROFILER.start_segment()
    elif state == "stop" and _PROFILER.state == "run":
        if _PROFILER.config.get("continuous_dump"):
            dump(finished=True)  # MXNet's continuous dump leaves the file current
        _PROFILER.end_segment()
        _PROFILER.state, _PROFILER.paused = "stop", False


def pause(profile_process: str = "worker") -> None:
    """Pause a running profiler (ends the current trace segment)."""
    if profile_process != "worker":
        raise NotImplementedError("profile_process='server' is not supported by mxmod")
    if _PROFILER.recording:
        _PROFILER.end_segment()
        _PROFILER.paused = True


def resume(profile_process: str = "worker") -> None:
    """Resume a paused profiler (starts a new trace segment)."""
    if profile_process != "worker":
        raise NotImplementedError("profile_process='server' is not supported by mxmod")
    if _PROFILER.state == "run" and _PROFILER.paused:
        _PROFILER.paused = False
        _PROFILER.start_segment()


def dump(finished: bool = True, profile_process: str = "worker") -> None:
    """Write the trace so far to the configured ``filename`` (Chrome-trace JSON).

    Args:
        finished: True stops the profiler (MXNet's meaning); False keeps it running.
        profile_process: ``'worker'`` only.
    """
    if profile_process != "worker":
        raise NotImplementedError("profile_process='server' is not supported by mxmod")
    running = _PROFILER.tracing
    _PROFILER.end_segment()
    meta = [{"ph": "M", "pid": 0, "name": "process_name", "args": {"name": "mxmod"}}]
    _ps.write_trace(_PROFILER.config["filename"], _PROFILER.events + meta + _PROFILER.own_events)
    if finished:
        _PROFILER.state, _PROFILER.paused = "stop", False
    elif running:
        _PROFILER.start_segment()


def dumps(
    reset: bool = False, format: str = "table", sort_by: str = "total", ascending: bool = False
) -> str:
    """Aggregate statistics as MXNet's table (``format='table'``) or JSON.

    Statistics of the running trace segment are included once it ends (``pause``,
    ``set_state('stop')`` or ``dump``).

    Raises:
        ValueError: an unsupported ``format``/``sort_by``/``ascending``/``reset``.
        MXNetError: ``aggregate_stats`` was not enabled.
    """
    if format not in ("table", "json"):
        raise ValueError(f"Invalid value provided for format: {format}. Support: 'table', 'json'")
    if sort_by not in _ps.SORT_KEYS:
        raise ValueError(
            f"Invalid value provided for sort_by: {sort_by}. Support: 'total', "
            f"'avg', 'min', 'max', 'count'"
        )
    for name, value in (("ascending", ascending), ("reset", reset)):
        if value not in (True, False):
            raise ValueError(f"Invalid value provided for {name}: {value}. Support: False, True")
    if not _PROFILER.config.get("aggregate_stats"):
        raise MXNetError(
            "dumps() reports aggregate statistics: call "
            "mx.profiler.set_config(aggregate_stats=True) before profiling"
        )
    text = (_PROFILER.stats.table if format == "table" else _PROFILER.stats.json)(
        sort_by, ascending
    )
    if reset:
        _PROFILER.stats.clear()
    return text


class Domain:
    """A named group of tasks, frames, counters and markers (``mx.profiler.Domain``)."""

    def __init__(self, name: str):
        self.name = name

    def __str__(self) -> str:
        return self.name

    def new_task(self, name: str) -> "Task":
        """A :class:`Task` in this domain."""
        return Task(self, name)

    def new_frame(self, name: str) -> "Frame":
        """A :class:`Frame` in this domain."""
        return Frame(self, name)

    def new_counter(self, name: str, value: Any = None) -> "Counter":
        """A :class:`Counter` in this domain, optionally set to ``value``."""
        return Counter(self, name, value)

    def new_marker(self, name: str) -> "Marker":
        """A :class:`Marker` in this domain."""
        return Marker(self, name)


class _Span:
    """A timed region: ``start()``/``stop()`` (or ``with``), shown in the trace."""

    _phases = ("B", "E")

    def __init__(self, category: str, name: str):
        self.name, self._category = name, category
        self._begin_ns: int | None = None
        self._annotation: Any = None

    def start(self) -> None:
        """Begin the region (recorded only while the profiler runs)."""
        self._begin_ns = time.perf_counter_ns()
        if _PROFILER.recording:
            self._annotation = jax.profiler.TraceAnnotation(self.name)
            self._annotation.__enter__()

    def stop(self) -> None:
        """End the region.

        Raises:
            MXNetError: ``stop()`` without ``start()``.
        """
        if self._begin_ns is None:
            raise MXNetError(f"{type(self).__name__} '{self.name}': stop() called before start()")
        end = time.perf_counter_ns()
        if self._annotation is not None:
            self._annotation.__exit__(None, None, None)
            self._annotation = None
        if _PROFILER.recording:
            ts = (self._begin_ns - (_PROFILER.origin_ns or 0)) / 1000.0
            _PROFILER.record(
                _ps.chrome_event(
                    "X", self.name, self._category, ts, dur=(end - self._begin_ns) / 1000.0
                ),
                self._category,
                (end - self._begin_ns) / 1e6,
            )
        self._begin_ns = None

    def __enter__(self) -> "_Span":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __str__(self) -> str:
        return self.name


class Task(_Span):
    """A task region in a domain (``mx.profiler.Task(domain, name)``)."""

    def __init__(self, domain: Domain, name: str):
        super().__init__(str(domain), name)
        self.domain = domain


class Frame(_Span):
    """A frame region in a domain, listed under ``'<domain>,frame'``."""

    def __init__(self, domain: Domain, name: str):
        super().__init__(f"{domain},frame", name)
        self.domain = domain


class Event(_Span):
    """A free-standing event region, listed under ``'event'`` (``mx.profiler.Event(name)``)."""

    def __init__(self, name: str):
        super().__init__("event", name)


class Scope(_Span):
    """A named region of the trace, usable as ``with mx.profiler.Scope('name'):`` (MXNet 2.x)."""

    def __init__(self, name: str = "<unk>:", append_mode: bool = False):
        super().__init__("scope", name)
        self.append_mode = append_mode


class Counter:
    """A named value tracked over time (``mx.profiler.Counter``); changes appear in the trace."""

    def __init__(self, domain: Domain, name: str, value: Any = None):
        self.domain, self.name = domain, name
        self.value = 0
        if value is not None:
            self.set_value(value)

    def set_value(self, value: Any) -> None:
        """Set the counter to ``value``."""
        self.value = value
        if _PROFILER.recording:
            _PROFILER.record(
                _ps.chrome_event(
                    "C", self.name, str(self.domain), _PROFILER.now_us(), args={self.name: value}
                ),
                str(self.domain),
                0.0,
            )

    def increment(self, delta: Any = 1) -> None:
        """Add ``delta``."""
        self.set_value(self.value + delta)

    def decrement(self, delta: Any = 1) -> None:
        """Subtract ``delta``."""
        self.set_value(self.value - delta)

    def __iadd__(self, delta: Any) -> "Counter":
        self.increment(delta)
        return self

    def __isub__(self, delta: Any) -> "Counter":
        self.decrement(delta)
        return self

    def __str__(self) -> str:
        return self.name


class Marker:
    """An instant marker in a domain (``mx.profiler.Marker``)."""

    _SCOPES = {"global": "g", "process": "p", "thread": "t", "task": "t", "marker": "t"}

    def __init__(self, domain: Domain, name: str):
        self.domain, self.name = domain, name

    def mark(self, scope: str = "process") -> None:
        """Record the marker now; ``scope`` is ``'global'``, ``'process'``, ``'thread'``,
        ``'task'`` or ``'marker'``.

        Raises:
            ValueError: an unknown ``scope``.
        """
        if scope not in self._SCOPES:
            raise ValueError(f"Marker scope must be one of {sorted(self._SCOPES)}, got {scope!r}")
        if _PROFILER.recording:
            _PROFILER.record(
                _ps.chrome_event(
                    "i",
                    self.name,
                    f"{self.domain},instant_marker",
                    _PROFILER.now_us(),
                    s=self._SCOPES[scope],
                ),
                f"{self.domain},instant_marker",
            )

    def __str__(self) -> str:
        return self.name


def profiler_set_config(mode: str = "symbolic", filename: str = "profile.json") -> None:
    """Deprecated MXNet form of :func:`set_config` (``profile_<mode>=True``)."""
    warnings.warn(
        "profiler.profiler_set_config() is deprecated. Please use profiler.set_config() instead",
        DeprecationWarning,
        stacklevel=2,
    )
    set_config(**{"profile_" + mode: True, "filename": filename})


def profiler_set_state(state: str = "stop") -> None:
    """Deprecated MXNet form of :func:`set_state`."""
    warnings.warn(
        "profiler.profiler_set_state() is deprecated. Please use profiler.set_state() instead",
        DeprecationWarning,
        stacklevel=2,
    )
    set_state(state)


def dump_profile() -> None:
    """Deprecated MXNet form of :func:`dump`."""
    warnings.warn(
        "profiler.dump_profile() is deprecated. Please use profiler.dump() instead",
        DeprecationWarning,
        stacklevel=2,
    )
    dump(True)
