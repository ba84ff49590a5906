"""The dist_sync job description (DMLC_*/JAX_* variables), equal steps and the launcher's
arguments, checked in-process (no worker processes; see test_dist_train.py for those)."""

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError
from mxmod.kvstore import dist, dist_iter
from mxmod.launch import main as launch_main
from mxmod.launch import worker_env

DMLC = {
    "DMLC_PS_ROOT_URI": "10.0.0.1",
    "DMLC_PS_ROOT_PORT": "9091",
    "DMLC_NUM_WORKER": "4",
    "DMLC_WORKER_ID": "2",
}


def test_resolve_nothing_set_is_no_job():
    assert dist.resolve({}) is None
    assert dist.resolve({"DMLC_ROLE": "worker"}) is None  # a role alone names no job


def test_resolve_dmlc_variables():
    assert dist.resolve(DMLC) == ("10.0.0.1:9091", 4, 2, "DMLC_*")
    env = {k: v for k, v in DMLC.items() if k != "DMLC_WORKER_ID"}
    env["DMLC_TASK_ID"] = "3"  # what dmlc_tracker's local mode sets
    assert dist.resolve(env)[2] == 3


@pytest.mark.parametrize("missing", ["DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT", "DMLC_NUM_WORKER"])
def test_resolve_names_a_missing_dmlc_variable(missing):
    env = {k: v for k, v in DMLC.items() if k != missing}
    with pytest.raises(MXNetError, match=f"launcher variables are incomplete: {missing} not set"):
        dist.resolve(env)


def test_resolve_dmlc_errors():
    env = {k: v for k, v in DMLC.items() if k != "DMLC_WORKER_ID"}
    with pytest.raises(MXNetError, match=r"DMLC_WORKER_ID \(or DMLC_TASK_ID\) not set"):
        dist.resolve(env)
    with pytest.raises(MXNetError, match="DMLC_PS_ROOT_PORT='http' is not an integer"):
        dist.resolve({**DMLC, "DMLC_PS_ROOT_PORT": "http"})
    with pytest.raises(
        MXNetError,
        match=r"DMLC_WORKER_ID=4 is not a worker rank of "
        r"DMLC_NUM_WORKER=4 \(ranks are 0..3\)",
    ):
        dist.resolve({**DMLC, "DMLC_WORKER_ID": "4"})
    with pytest.raises(MXNetError, match="DMLC_NUM_WORKER=0 must be >= 1"):
        dist.resolve({**DMLC, "DMLC_NUM_WORKER": "0"})


def test_resolve_jax_variables():
    env = {"JAX_COORDINATOR_ADDRESS": "h:1234", "JAX_NUM_PROCESSES": "2", "JAX_PROCESS_ID": "1"}
    assert dist.resolve(env) == ("h:1234", 2, 1, "JAX_*")
    # the address alone: JAX detects the rest from the cluster (SLURM, Open MPI, ...)
    assert dist.resolve({"JAX_COORDINATOR_ADDRESS": "h:1"}) == ("h:1", None, None, "JAX_*")
    with pytest.raises(MXNetError, match="JAX_PROCESS_ID is not set"):
        dist.resolve({"JAX_COORDINATOR_ADDRESS": "h:1", "JAX_NUM_PROCESSES": "2"})
    with pytest.raises(MXNetError, match="JAX_COORDINATOR_ADDRESS is not"):
        dist.resolve({"JAX_NUM_PROCESSES": "2", "JAX_PROCESS_ID": "0"})
    with pytest.raises(MXNetError, match="JAX_PROCESS_ID=2 is not a rank of JAX_NUM_PROCESSES=2"):
        dist.resolve({**env, "JAX_PROCESS_ID": "2"})


def test_resolve_inconsistent_families():
    env = {
        **DMLC,
        "JAX_COORDINATOR_ADDRESS": "10.0.0.1:9091",
        "JAX_NUM_PROCESSES": "4",
        "JAX_PROCESS_ID": "1",
    }
    with pytest.raises(
        MXNetError,
        match=r"DMLC_\* variables describe worker 2 of 4 .* but "
        r"the JAX_\* ones worker 1 of 4",
    ):
        dist.resolve(env)
    env["JAX_PROCESS_ID"] = "2"
    assert dist.resolve(env)[:3] == ("10.0.0.1:9091", 4, 2)  # the same job: fine


def test_timeouts_are_checked(monkeypatch):
    monkeypatch.setenv("MXMOD_DIST_INIT_TIMEOUT", "soon")
    with pytest.raises(MXNetError, match="MXMOD_DIST_INIT_TIMEOUT='soon' is not a number"):
        dist._timeout("MXMOD_DIST_INIT_TIMEOUT", 120)
    monkeypatch.setenv("MXMOD_DIST_INIT_TIMEOUT", "0")
    with pytest.raises(MXNetError, match="must be at least 1 second"):
        dist._timeout("MXMOD_DIST_INIT_TIMEOUT", 120)


def test_single_process_has_rank_0_of_1():
    assert not dist.is_initialized()
    assert dist.rank() == 0 and dist.num_workers() == 1
    dist.check_same("the symbol", "anything")  # nothing to compare with


# ----------------------------------------------------------------------------- equal steps
class _Iter:
    def __init__(self, n):
        self.n, self.i, self.resets = n, 0, 0

    def __next__(self):
        if self.i >= self.n:
            raise StopIteration
        self.i += 1
        return self.i

    def reset(self):
        self.i, self.resets = 0, self.resets + 1

    provide_data = (("data", (2, 3)),)


def _fake_workers(monkeypatch, others, keys=None):
    """This process is rank 0; ``others[k]`` = how many batches worker k+1 has (with the
    bucket-key hashes ``keys[step]``; default: rank 0's)."""
    step = {"k": 0}

    def allgather(x):
        k = step["k"]
        step["k"] += 1
        key = int(x[1]) if keys is None or keys[k] is None else keys[k]
        return np.array([[int(x[0]), int(x[1])]] + [[int(k < n), key] for n in others])

    monkeypatch.setattr(dist, "allgather", allgather)
    return step


def test_equal_steps_drops_what_others_lack(monkeypatch, caplog):
    _fake_workers(monkeypatch, [2])
    it = dist_iter.EqualSteps(_Iter(4))
    assert list(it) == [1, 2]
    assert it.dropped == 1 and it.provide_data == (("data", (2, 3)),)
    assert "train_data of worker(s) [1] ran out before the others" in caplog.text
    it.reset()
    assert it._it.resets == 1 and it.dropped == 0


def test_equal_steps_when_all_agree(monkeypatch, caplog):
    _fake_workers(monkeypatch, [3])
    assert list(dist_iter.EqualSteps(_Iter(3))) == [1, 2, 3]
    assert "ran out" not in caplog.text


def test_equal_steps_refuses_different_buckets(monkeypatch):
    class Batch:
        bucket_key = 10

    class Buckets(_Iter):
        def __next__(self):
            super().__next__()
            return Batch()

    _fake_workers(monkeypatch, [3], keys=[None, 12345])
    it = dist_iter.EqualSteps(Buckets(3))
    step0 = next(it)
    assert step0.bucket_key == 10
    with pytest.raises(
        MXNetError,
        match=r"train_data gave worker\(s\) \[1\] another "
        "bucket_key than rank 0 at the same step",
    ):
        next(it)


def test_wrap_for_workers_only_with_several_workers():
    a, b = _Iter(1), _Iter(1)
    assert dist_iter.wrap_for_workers("dist_sync", a, b) == (a, b)  # one process
    assert dist_iter.wrap_for_workers("local", a, None) == (a, None)

    class Store:
        num_workers = 2

    ta, tb = dist_iter.wrap_for_workers(Store(), a, b)
    assert isinstance(ta, dist_iter.EqualSteps) and isinstance(tb, dist_iter.EqualSteps)


# ----------------------------------------------------------------------------- launcher
def test_worker_env():
    env = worker_env(
        1,
        3,
        "127.0.0.1",
        5555,
        cpu_devices=2,
        base={
            "XLA_FLAGS": "--xla_force_host_platform_device_count=8 --foo",
            "JAX_PROCESS_ID": "7",
            "PATH": "/bin",
        },
    )
    assert env["DMLC_ROLE"] == "worker" and env["DMLC_WORKER_ID"] == "1"
    assert env["DMLC_NUM_WORKER"] == "3" and env["DMLC_PS_ROOT_PORT"] == "5555"
    assert env["XLA_FLAGS"] == "--foo --xla_force_host_platform_device_count=2"
    assert "JAX_PROCESS_ID" not in env and env["PATH"] == "/bin"
    assert dist.resolve(env) == ("127.0.0.1:5555", 3, 1, "DMLC_*")


def test_launcher_argument_errors(capsys):
    with pytest.raises(SystemExit):
        launch_main(["-n", "2"])
    assert "give the command every worker runs" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        launch_main(["-n", "0", "python", "x.py"])
    assert "-n must be at least 1, got 0" in capsys.readouterr().err
    with pytest.raises(
        NotImplementedError, match="--launcher 'ssh': mxmod.launch only starts local workers"
    ):
        launch_main(["-n", "2", "--launcher", "ssh", "python", "x.py"])


def test_launcher_runs_workers_and_reports_failure(tmp_path, capsys):
    touch = f"import os; open(os.path.join({str(tmp_path)!r}, os.environ['DMLC_WORKER_ID']), 'w')"
    ok = launch_main(["-n", "2", "python3", "-c", touch])
    assert ok == 0 and sorted(p.name for p in tmp_path.iterdir()) == ["0", "1"]
    script = (
        "import os, time, sys\nif os.environ['DMLC_WORKER_ID'] == '1': sys.exit(5)\ntime.sleep(60)"
    )
    code = launch_main(["-n", "2", "--grace", "1", "python3", "-c", script])
    assert code == 5
    assert "worker rank 1 exited with code 5; stopping the other workers" in capsys.readouterr().err


def test_kv_store_of_one_worker_still_reports_its_type(monkeypatch):
    monkeypatch.setenv("MXMOD_KVSTORE_DIST_SINGLE", "1")
    for v in (
        "DMLC_PS_ROOT_URI",
        "DMLC_PS_ROOT_PORT",
        "DMLC_NUM_WORKER",
        "JAX_COORDINATOR_ADDRESS",
    ):
        monkeypatch.delenv(v, raising=False)
    kv = mx.kv.create("dist_device_sync")
    assert (kv.type, kv.rank, kv.num_workers) == ("dist_device_sync", 0, 1)


def test_terminated_launcher_stops_its_workers(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    code = (
        f"import os, time; open(os.path.join({str(tmp_path)!r}, "
        "os.environ['DMLC_WORKER_ID']), 'w').write(str(os.getpid())); time.sleep(120)"
    )
    launcher = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mxmod.launch",
            "-n",
            "2",
            "--grace",
            "2",
            sys.executable,
            "-c",
            code,
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 60
    while len(list(tmp_path.iterdir())) < 2 or any(not p.read_text() for p in tmp_path.iterdir()):
        assert time.time() < deadline, "the workers did not start"
        time.sleep(0.1)
    pids = [int(p.read_text()) for p in tmp_path.iterdir()]
    launcher.send_signal(signal.SIGTERM)
    _, err = launcher.communicate(timeout=30)
    assert launcher.returncode == 130 and "interrupted; stopping the workers" in err
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
