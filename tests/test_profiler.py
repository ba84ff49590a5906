"""mx.profiler on jax.profiler: the MXNet workflow writes a Chrome-trace file Perfetto opens,
keeps a TensorBoard trace beside it, and reports MXNet-style aggregate statistics."""

import json
import os

import numpy as np
import pytest

import mxmod as mx
from mxmod import profiler


@pytest.fixture
def fresh_profiler(monkeypatch):
    monkeypatch.setattr(profiler, "_PROFILER", profiler._Profiler())
    yield
    if profiler._PROFILER.tracing:
        profiler.set_state("stop")


def _work():
    a = mx.nd.ones((8, 8))
    return (a * 2 + 1).sum().asnumpy()


def test_mxnet_workflow_writes_chrome_trace(tmp_path, fresh_profiler):
    fname = str(tmp_path / "prof.json")
    mx.profiler.set_config(filename=fname, profile_all=True, aggregate_stats=True)
    mx.profiler.set_state("run")
    dom = mx.profiler.Domain("mydomain")
    task = dom.new_task("task1")
    task.start()
    _work()
    task.stop()
    counter = dom.new_counter("cnt", 5)
    counter += 3
    dom.new_marker("mark1").mark()
    with mx.profiler.Event("ev1"):
        _work()
    frame = dom.new_frame("fr")
    frame.start()
    frame.stop()
    mx.profiler.set_state("stop")
    mx.profiler.dump()
    with open(fname) as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    by_name = {e.get("name"): e for e in events}
    assert by_name["task1"]["cat"] == "mydomain" and by_name["task1"]["ph"] == "X"
    assert by_name["fr"]["cat"] == "mydomain,frame" and by_name["ev1"]["cat"] == "event"
    assert [e["args"]["cnt"] for e in events if e.get("name") == "cnt" and e["ph"] == "C"] == [5, 8]
    assert by_name["mark1"]["ph"] == "i"
    assert any(str(e.get("name", "")).startswith("PjitFunction(") for e in events)
    runs = os.path.join(str(tmp_path / "prof_tensorboard"), "plugins", "profile")
    assert any(f.endswith(".xplane.pb") for _, _, files in os.walk(runs) for f in files)
    table = mx.profiler.dumps()
    for block in (
        "mydomain\n=================",
        "mydomain,frame",
        "event",
        "operator",
        "mydomain,instant_marker",
    ):
        assert block in table
    stats = json.loads(mx.profiler.dumps(format="json", reset=True))
    assert stats["Time"]["mydomain"]["task1"]["Count"] == 1
    assert stats["Time"]["mydomain"]["cnt"]["Count"] == 2
    assert stats["Unit"] == {"Time": "ms", "Memory": "kB"} and stats["Memory"] == {}
    assert json.loads(mx.profiler.dumps(format="json"))["Time"] == {}


def test_pause_resume_and_nothing_recorded_when_stopped(tmp_path, fresh_profiler):
    fname = str(tmp_path / "p.json")
    mx.profiler.set_config(filename=fname, aggregate_stats=True)
    mx.profiler.Event("before").start()  # profiler not running: nothing recorded
    mx.profiler.set_state("run")
    with mx.profiler.Event("seg1"):
        _work()
    mx.profiler.pause()
    with mx.profiler.Event("paused"):
        _work()
    mx.profiler.resume()
    with mx.profiler.Scope("seg2"):
        _work()
    mx.profiler.dump(finished=False)
    assert profiler._PROFILER.state == "run" and profiler._PROFILER.tracing
    mx.profiler.dump()
    assert profiler._PROFILER.state == "stop" and not profiler._PROFILER.tracing
    with open(fname) as f:
        names = {e.get("name") for e in json.load(f)["traceEvents"]}
    assert {"seg1", "seg2"} <= names and not names & {"before", "paused"}


def test_config_errors(fresh_profiler):
    with pytest.raises(mx.MXNetError, match="Cannot find argument 'bogus'"):
        mx.profiler.set_config(bogus=1)
    with pytest.raises(NotImplementedError, match="profile_process='server'"):
        mx.profiler.set_config(profile_process="server")
    with pytest.raises(ValueError, match="'run' or 'stop'"):
        mx.profiler.set_state("go")
    with pytest.raises(mx.MXNetError, match="aggregate_stats=True"):
        mx.profiler.dumps()
    mx.profiler.set_config(aggregate_stats=True)
    with pytest.raises(ValueError, match="sort_by"):
        mx.profiler.dumps(sort_by="median")
    with pytest.raises(ValueError, match="format"):
        mx.profiler.dumps(format="csv")
    with pytest.raises(mx.MXNetError, match="stop\\(\\) called before start\\(\\)"):
        mx.profiler.Event("e").stop()
    with pytest.raises(ValueError, match="Marker scope"):
        mx.profiler.Domain("d").new_marker("m").mark("galaxy")


def test_deprecated_forms_warn(tmp_path, fresh_profiler):
    with pytest.warns(DeprecationWarning, match="profiler_set_config"):
        mx.profiler.profiler_set_config("symbolic", str(tmp_path / "old.json"))
    with pytest.warns(DeprecationWarning, match="profiler_set_state"):
        mx.profiler.profiler_set_state("run")
    np.testing.assert_allclose(_work(), [192.0])
    with pytest.warns(DeprecationWarning, match="dump_profile"):
        mx.profiler.dump_profile()
    assert os.path.exists(tmp_path / "old.json")


def test_continuous_dump_writes_the_file_at_each_stop(tmp_path, fresh_profiler):
    fname = tmp_path / "cont.json"
    mx.profiler.set_config(filename=str(fname), continuous_dump=True)
    mx.profiler.set_state("run")
    with mx.profiler.Domain("d").new_task("first"):
        _work()
    mx.profiler.set_state("stop")
    names = {e.get("name") for e in json.loads(fname.read_text())["traceEvents"]}
    assert "first" in names
    mx.profiler.set_config(continuous_dump=False)
    mx.profiler.set_state("run")
    with mx.profiler.Domain("d").new_task("second"):
        _work()
    mx.profiler.set_state("stop")
    names = {e.get("name") for e in json.loads(fname.read_text())["traceEvents"]}
    assert "second" not in names  # without it, only dump() writes


def test_filename_may_change_while_running(tmp_path, fresh_profiler):
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    mx.profiler.set_config(filename=str(first))
    mx.profiler.set_state("run")
    with mx.profiler.Domain("d").new_task("kept"):
        _work()
    mx.profiler.set_config(filename=str(second))  # MXNet allows it; dump writes the new name
    mx.profiler.set_state("stop")
    mx.profiler.dump()
    names = {e.get("name") for e in json.loads(second.read_text())["traceEvents"]}
    assert "kept" in names and not first.exists()
