"""The state behind ``mx.profiler``: trace segments, files and aggregate statistics.

Keeps per-category timing statistics (MXNet's ``aggregate_stats``) and renders them
as MXNet's ``dumps()`` table or JSON; runs ``jax.profiler`` trace segments and reads
the Chrome-format events JAX writes for each.
"""

from __future__ import annotations

import glob
import gzip
import json
import os
import time
from typing import Any

import jax

from .base import MXNetError

SORT_KEYS = {"total": "Total", "avg": "Avg", "min": "Min", "max": "Max", "count": "Count"}


class Stats:
    """Durations (ms) per ``category -> name``, as MXNet's aggregate profile statistics."""

    def __init__(self) -> None:
        self.data: dict = {}

    def add(self, category: str, name: str, ms: float) -> None:
        """Record one occurrence of ``name`` lasting ``ms`` milliseconds."""
        entry = self.data.setdefault(category, {}).setdefault(
            name, {"Count": 0, "Total": 0.0, "Min": float("inf"), "Max": 0.0}
        )
        entry["Count"] += 1
        entry["Total"] += ms
        entry["Min"] = min(entry["Min"], ms)
        entry["Max"] = max(entry["Max"], ms)

    def touch(self, category: str) -> None:
        """Make ``category`` appear (empty) in the report, as MXNet does for markers."""
        self.data.setdefault(category, {})

    def clear(self) -> None:
        """Forget everything (``dumps(reset=True)``)."""
        self.data = {}

    def _rows(self, category: str, sort_by: str, ascending: bool) -> list:
        rows = []
        for name, e in self.data[category].items():
            avg = e["Total"] / e["Count"] if e["Count"] else 0.0
            rows.append((name, {**e, "Avg": avg, "Min": 0.0 if e["Count"] == 0 else e["Min"]}))
        key = SORT_KEYS[sort_by]
        return sorted(rows, key=lambda r: r[1][key], reverse=not ascending)

    def table(self, sort_by: str, ascending: bool) -> str:
        """MXNet's text table: one block per category, times in ms."""
        out = ["", "Profile Statistics:", "\tNote the difference in units for different entries."]
        for category in sorted(self.data):
            out += [
                category,
                "=================",
                "%-30s%11s%17s%17s%17s%17s"
                % (
                    "Name",
                    "Total Count",
                    "Time (ms)",
                    "Min Time (ms)",
                    "Max Time (ms)",
                    "Avg Time (ms)",
                ),
                "%-30s%11s%17s%17s%17s%17s"
                % (
                    "----",
                    "-----------",
                    "---------",
                    "-------------",
                    "-------------",
                    "-------------",
                ),
            ]
            for name, e in self._rows(category, sort_by, ascending):
                out.append(
                    "%-30s%11d%17.4f%17.4f%17.4f%17.4f"
                    % (name, e["Count"], e["Total"], e["Min"], e["Max"], e["Avg"])
                )
            out.append("")
        return "\n".join(out) + "\n"

    def json(self, sort_by: str, ascending: bool) -> str:
        """MXNet's JSON form: ``{"Time": {category: {name: {Count, Total, Min, Max, Avg}}},
        "Memory": {}, "Unit": {"Time": "ms", "Memory": "kB"}}`` (mxmod keeps no memory
        statistics; the key is there as in MXNet)."""
        time = {
            c: {
                name: {k: e[k] for k in ("Count", "Total", "Min", "Max", "Avg")}
                for name, e in self._rows(c, sort_by, ascending)
            }
            for c in sorted(self.data)
        }
        unit = {"Time": "ms", "Memory": "kB"}
        return json.dumps({"Time": time, "Memory": {}, "Unit": unit}, indent=4)


def read_segment(log_dir: str, before: set) -> list:
    """Trace events of the run folder JAX created under ``log_dir`` (not in ``before``)."""
    runs = sorted(set(glob.glob(os.path.join(log_dir, "plugins", "profile", "*"))) - before)
    events: list = []
    for run in runs:
        for path in glob.glob(os.path.join(run, "*.trace.json.gz")):
            with gzip.open(path, "rt") as f:
                events.extend(json.load(f).get("traceEvents", []))
    return events


def run_dirs(log_dir: str) -> set:
    """The run folders already under ``log_dir``."""
    return set(glob.glob(os.path.join(log_dir, "plugins", "profile", "*")))


def operator_events(events: list) -> list:
    """``(name, ms)`` of compiled executions: ``PjitFunction(...)`` calls and device ops."""
    processes = {
        e["pid"]: e.get("args", {}).get("name", "")
        for e in events
        if e.get("ph") == "M" and e.get("name") == "process_name"
    }
    out, open_until = [], {}
    for e in sorted((e for e in events if e.get("ph") == "X"), key=lambda e: float(e["ts"])):
        on_device = processes.get(e.get("pid"), "").startswith("/device:")
        if not (on_device or str(e.get("name", "")).startswith("PjitFunction(")):
            continue
        key = (e.get("pid"), e.get("tid"), e["name"])
        start, dur = float(e["ts"]), float(e.get("dur", 0.0))
        if start < open_until.get(key, float("-inf")):
            continue  # JAX nests a second event of the same call inside the first
        open_until[key] = start + dur
        out.append((e["name"], dur / 1000.0))
    return out


def write_trace(filename: str, events: list) -> None:
    """Write Chrome trace JSON (``{"traceEvents": [...]}``), atomically."""
    folder = os.path.dirname(os.path.abspath(filename))
    os.makedirs(folder, exist_ok=True)
    tmp = filename + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, f)
    os.replace(tmp, filename)


def tensorboard_dir(filename: str) -> str:
    """Where the TensorBoard/XProf trace of ``filename`` goes: ``<stem>_tensorboard``."""
    stem, _ = os.path.splitext(os.path.abspath(filename))
    return stem + "_tensorboard"


def chrome_event(ph: str, name: str, cat: str, ts_us: float, **extra: Any) -> dict:
    """One Chrome trace event on mxmod's own process id (0)."""
    return {"ph": ph, "name": name, "cat": cat, "ts": ts_us, "pid": 0, "tid": 0, **extra}


class Session:
    """The process-wide profiler state behind ``mx.profiler`` (MXNet keeps one per process).

    Trace segments run ``jax.profiler`` into ``tensorboard_dir(filename)``; their
    Chrome-format events and mxmod's own events are kept until ``dump``.
    """

    def __init__(self) -> None:
        self.config: dict = {"filename": "profile.json", "aggregate_stats": False}
        self.state = "stop"
        self.paused = False
        self.tracing = False
        self.events: list = []
        self.own_events: list = []
        self.stats = Stats()
        self.origin_ns: int | None = None
        self.segment_ns = 0
        self.before: set = set()
        self.segment_dir = ""

    @property
    def recording(self) -> bool:
        """True while running and not paused: only then are events recorded."""
        return self.state == "run" and not self.paused

    def now_us(self) -> float:
        """Microseconds since the first segment started (the trace's time axis)."""
        return (time.perf_counter_ns() - (self.origin_ns or 0)) / 1000.0

    def start_segment(self) -> None:
        """Start a ``jax.profiler`` trace (no Python tracer) into the TensorBoard folder."""
        log_dir = tensorboard_dir(self.config["filename"])
        self.segment_dir = log_dir  # read back from here even if filename changes meanwhile
        self.before = run_dirs(log_dir)
        options = getattr(jax.profiler, "ProfileOptions", None)
        kwargs = {}
        if options is not None:
            opts = options()
            opts.python_tracer_level = 0  # host/XLA activity only: small, readable traces
            kwargs["profiler_options"] = opts
        now = time.perf_counter_ns()
        if self.origin_ns is None:
            self.origin_ns = now
        self.segment_ns = now
        try:
            jax.profiler.start_trace(log_dir, **kwargs)
        except RuntimeError as err:
            raise MXNetError(
                f"cannot start profiling: {err}; stop the other JAX trace "
                f"(jax.profiler.stop_trace()) first"
            ) from err
        self.tracing = True

    def end_segment(self) -> None:
        """Stop the running trace and keep its events (shifted onto one time axis)."""
        if not self.tracing:
            return
        jax.profiler.stop_trace()
        self.tracing = False
        shift = (self.segment_ns - (self.origin_ns or self.segment_ns)) / 1000.0
        events = read_segment(self.segment_dir, self.before)
        for e in events:
            if "ts" in e:
                e["ts"] = float(e["ts"]) + shift
        self.events.extend(events)
        if self.config.get("aggregate_stats"):
            for name, ms in operator_events(events):
                self.stats.add("operator", name, ms)

    def record(self, event: dict, category: str | None = None, ms: float | None = None) -> None:
        """Keep one of mxmod's own events and count it under ``category``."""
        self.own_events.append(event)
        if self.config.get("aggregate_stats") and category is not None:
            if ms is None:
                self.stats.touch(category)
            else:
                self.stats.add(category, event["name"], ms)
