"""Checkpoints survive kill -9 (issue 15): a writer process is killed at random moments
while it commits checkpoints; every time, the latest checkpoint (params, states, symbol)
is complete and loadable, and the next write removes the temp files of the killed ones.
Also: checkpoint files get umask permissions, and a checkpoint is one unit."""

import os
import random
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import mxmod as mx
from mxmod import fileio
from mxmod.ndarray.io import to_bytes

FILEIO = Path(fileio.__file__)

# The writer imports only fileio.py and base.py (no jax: the package's __init__ is not
# run), so each restart costs milliseconds.
WRITER = textwrap.dedent("""
    import os, sys, types
    package = types.ModuleType("mxmod")
    package.__path__ = [os.path.dirname(sys.argv[1])]
    sys.modules["mxmod"] = package
    from mxmod import fileio
    prefix, once = sys.argv[2], sys.argv[3] == "once"
    sym = open(prefix + ".sym", "rb").read()
    params, states = bytearray(open(prefix + ".p", "rb").read()), \\
        bytearray(open(prefix + ".s", "rb").read())
    at_p, at_s = int(sys.argv[4]), int(sys.argv[5])
    latest = fileio.latest_checkpoint(prefix)
    epoch = 0 if latest is None else latest + 1
    while True:
        params[at_p:at_p + 4] = epoch.to_bytes(4, "little")
        states[at_s:at_s + 4] = epoch.to_bytes(4, "little")
        fileio.write_checkpoint(prefix, epoch, sym, bytes(params), bytes(states))
        print(epoch, flush=True)
        if once:
            break
        epoch += 1
""")


def _marker_offset(make):
    a, b = make(0), make(1)
    diff = [i for i in range(len(a)) if a[i] != b[i]]
    assert len(diff) == 1 and len(a) == len(b)
    return diff[0]


def _payloads(tmp_path):
    """Template files: params (~2 MB) and states carrying the epoch at a known offset."""
    prefix = str(tmp_path / "ck")
    weight = np.random.RandomState(0).randn(512, 1024).astype(np.float32)

    def make_p(e):
        return to_bytes({"arg:w": weight, "arg:epoch": np.array([e], np.int32)})

    def make_s(e):
        return to_bytes({"epoch": np.array([e], np.int32), "m": weight[:64]})

    sym = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=4, name="fc")
    Path(prefix + ".sym").write_bytes(sym.tojson().encode())
    Path(prefix + ".p").write_bytes(make_p(0))
    Path(prefix + ".s").write_bytes(make_s(0))
    return prefix, _marker_offset(make_p), _marker_offset(make_s)


def _epoch_of(path, key):
    return int(mx.nd.load(path)[key].asnumpy()[0])


def _check_complete(prefix):
    """Every epoch with a params file has its own states; the latest one loads."""
    latest = fileio.latest_checkpoint(prefix)
    if latest is None:
        return None
    for name in os.listdir(os.path.dirname(prefix)):
        if name.startswith("ck-") and name.endswith(".params"):
            epoch = int(name[3:-7])
            paths = fileio.checkpoint_paths(prefix, epoch)
            assert _epoch_of(paths["states"], "epoch") == epoch, name
    sym, arg, aux = mx.model.load_checkpoint(prefix, latest)
    assert int(arg["epoch"].asnumpy()[0]) == latest and arg["w"].shape == (512, 1024)
    assert sym.list_arguments() == ["data", "fc_weight", "fc_bias"]
    return latest


def _temps(folder):
    return [n for n in os.listdir(folder) if n.startswith(".tmp-")]


def test_kill_9_during_checkpointing_leaves_latest_complete_and_no_temps(tmp_path):
    prefix, at_p, at_s = _payloads(tmp_path)
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    cmd = [sys.executable, str(script), str(FILEIO), prefix, "loop", str(at_p), str(at_s)]
    rng = random.Random(15)
    kills, temps_seen, latest = 8, 0, None
    for _ in range(kills):
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        proc.stdout.readline()  # at least one checkpoint committed by this process
        time.sleep(rng.uniform(0.0, 0.25))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        temps_seen += len(_temps(tmp_path))
        now = _check_complete(prefix)
        assert now is not None and (latest is None or now >= latest)
        latest = now
    subprocess.run(cmd[:4] + ["once"] + cmd[5:], check=True, capture_output=True)
    assert _temps(tmp_path) == []  # the next write removed the killed writers' temp files
    assert _check_complete(prefix) == latest + 1
    print(f"{kills} kills, {temps_seen} temp files left by killed writes, removed by the next")


def test_checkpoint_files_get_umask_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        paths = fileio.write_checkpoint(str(tmp_path / "m"), 3, b"{}", b"p", b"s")
        for path in paths.values():
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o644, path
        os.chmod(paths["params"], 0o640)  # an existing file keeps its mode, as open() does
        fileio.write_checkpoint(str(tmp_path / "m"), 3, None, b"p2")
        assert stat.S_IMODE(os.stat(paths["params"]).st_mode) == 0o640
    finally:
        os.umask(old)
    mx.model.save_checkpoint(str(tmp_path / "n"), 1, None, {"w": mx.nd.ones((2,))}, None)
    assert stat.S_IMODE(os.stat(tmp_path / "n-0001.params").st_mode) == 0o666 & ~old


def test_failed_commit_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    prefix = str(tmp_path / "m")
    fileio.write_checkpoint(prefix, 1, b"sym1", b"params1", b"states1")
    real = os.replace

    def crash_on_params(src, dst):
        if dst.endswith(".params"):
            raise OSError("simulated crash before the commit")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", crash_on_params)
    with pytest.raises(OSError, match="simulated crash"):
        fileio.write_checkpoint(prefix, 2, b"sym2", b"params2", b"states2")
    monkeypatch.setattr(os, "replace", real)
    assert fileio.latest_checkpoint(prefix) == 1  # epoch 2 never got its params
    assert Path(prefix + "-0001.params").read_bytes() == b"params1"
    assert _temps(tmp_path) == []


def test_stale_temp_files_are_removed_by_the_next_write(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    mine = tmp_path / f".tmp-{dead.pid}-{fileio._HOST_TAG}-0123abcd-m-0001.params"
    tag = "000000" if fileio._HOST_TAG != "000000" else "111111"
    other_host = tmp_path / f".tmp-{dead.pid}-{tag}-0123abcd-m-0001.params"
    alive = tmp_path / f".tmp-{os.getppid()}-{fileio._HOST_TAG}-0123abcd-m-0001.params"
    old = tmp_path / ".tmp-m-0001.params-abcd1234"  # an older mxmod's mkstemp name
    stranger = tmp_path / ".tmp-notes-abcd1234"  # not an MXNet file kind: never touched
    for p in (mine, other_host, alive, old, stranger):
        p.write_bytes(b"torn")
    os.utime(old, (time.time() - 2 * 86400,) * 2)
    os.utime(stranger, (time.time() - 2 * 86400,) * 2)
    mx.nd.save(str(tmp_path / "x.nd"), [mx.nd.ones((1,))])
    assert sorted(_temps(tmp_path)) == sorted([other_host.name, alive.name, stranger.name])


def test_write_checkpoint_argument_errors(tmp_path):
    with pytest.raises(TypeError, match="checkpoint epoch must be an int, got str"):
        fileio.write_checkpoint(str(tmp_path / "m"), "1", None, b"")
    with pytest.raises(ValueError, match="checkpoint epoch must be >= 0, got -1"):
        fileio.write_checkpoint(str(tmp_path / "m"), -1, None, b"")
    with pytest.raises(TypeError, match="checkpoint states must be bytes, got str"):
        fileio.write_checkpoint(str(tmp_path / "m"), 1, None, b"", "s")
