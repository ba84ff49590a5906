"""dist_sync across processes: 2 workers x 2 CPU devices (loopback) train like 1 x 4 and 1 x 1.

Each test starts real worker processes (``python -m mxmod.launch``) with a timeout, so a
hang fails instead of blocking the suite.
"""

import os
import subprocess
import sys
import time

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "tests", "dist", "train_mlp.py")
_JOB_VARS = (
    "DMLC_ROLE",
    "DMLC_PS_ROOT_URI",
    "DMLC_PS_ROOT_PORT",
    "DMLC_NUM_WORKER",
    "DMLC_WORKER_ID",
    "DMLC_TASK_ID",
    "JAX_COORDINATOR_ADDRESS",
    "JAX_NUM_PROCESSES",
    "JAX_PROCESS_ID",
)


def _env(devices=None, **extra):
    env = {k: v for k, v in os.environ.items() if k not in _JOB_VARS}
    env["JAX_PLATFORMS"] = "cpu"
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices or 1}"
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def _run(cmd, timeout=120, **env):
    return subprocess.run(
        cmd, env=_env(**env), capture_output=True, text=True, timeout=timeout, cwd=ROOT, check=False
    )


def _launch(n, devices, *script_args, timeout=180, **env):
    cmd = [
        sys.executable,
        "-m",
        "mxmod.launch",
        "-n",
        str(n),
        "--cpu-devices",
        str(devices),
        "--grace",
        "3",
        sys.executable,
        SCRIPT,
        *map(str, script_args),
    ]
    return _run(cmd, timeout=timeout, **env)


def _params(path):
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


@pytest.mark.slow
def test_two_workers_train_like_one_process(tmp_path):
    runs = {}
    for name, devices in (("one_x4", 4), ("one_x1", 1)):
        out = tmp_path / name
        out.mkdir()
        r = _run([sys.executable, SCRIPT, str(out), str(devices)], devices=devices)
        assert r.returncode == 0, r.stderr[-3000:]
        runs[name] = _params(out / "params-rank0.npz")
    out = tmp_path / "two_x2"
    out.mkdir()
    r = _launch(2, 2, out, 2)
    assert r.returncode == 0, r.stderr[-3000:]
    w0, w1 = _params(out / "params-rank0.npz"), _params(out / "params-rank1.npz")
    for k in runs["one_x4"]:
        np.testing.assert_array_equal(w0[k], w1[k])  # the replicas never drift
        np.testing.assert_allclose(w0[k], runs["one_x4"][k], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(w0[k], runs["one_x1"][k], rtol=1e-5, atol=1e-6)
    # checkpoints: rank 0 writes them once per epoch; the files hold the final weights
    assert r.stderr.count("Saved checkpoint to") == 2
    assert sorted(os.listdir(out)) == [
        "ck-0001.params",
        "ck-0002.params",
        "ck-symbol.json",
        "params-rank0.npz",
        "params-rank1.npz",
        "steps-rank0.txt",
        "steps-rank1.txt",
    ]
    import mxmod as mx

    _, arg, _ = mx.model.load_checkpoint(str(out / "ck"), 2)
    np.testing.assert_array_equal(arg["fc1_weight"].asnumpy(), w0["fc1_weight"])
    # every epoch's Train-accuracy is logged by both workers (callbacks run on every rank)
    assert r.stderr.count("Epoch[1] Train-accuracy") == 2


@pytest.mark.slow
def test_two_workers_with_2bit_compression_train_like_one_process(tmp_path):
    """Residuals are per device, so 2 workers x 2 devices == 1 process x 4 devices."""
    one = tmp_path / "one"
    one.mkdir()
    r = _run([sys.executable, SCRIPT, str(one), "4", "--compress", "0.02"], devices=4)
    assert r.returncode == 0, r.stderr[-3000:]
    two = tmp_path / "two"
    two.mkdir()
    r = _launch(2, 2, two, 2, "--compress", "0.02")
    assert r.returncode == 0, r.stderr[-3000:]
    exact = tmp_path / "exact"
    exact.mkdir()
    assert _run([sys.executable, SCRIPT, str(exact), "4"], devices=4).returncode == 0
    a, b = _params(one / "params-rank0.npz"), _params(two / "params-rank1.npz")
    e = _params(exact / "params-rank0.npz")
    for k in a:
        np.testing.assert_allclose(b[k], a[k], rtol=1e-5, atol=1e-6)
    assert max(np.abs(a[k] - e[k]).max() for k in a) > 1e-3  # compression changed them


@pytest.mark.slow
def test_uneven_workers_run_equal_steps(tmp_path):
    r = _launch(2, 1, tmp_path, 1, "--uneven")
    assert r.returncode == 0, r.stderr[-3000:]
    steps = [(tmp_path / f"steps-rank{i}.txt").read_text().split()[0] for i in (0, 1)]
    assert steps == ["6", "6"]  # rank 1 had 3 batches per epoch, rank 0 dropped its 4th
    assert "train_data of worker(s) [1] ran out before the others" in r.stderr
    assert "worker 0 drops its remaining batches" in r.stderr


@pytest.mark.slow
def test_lost_worker_is_named_within_bounded_time(tmp_path):
    tic = time.time()
    r = _launch(2, 1, tmp_path, 1, "--die-at-batch", 1, "--epochs", 50, "--rows", 640, timeout=120)
    assert r.returncode == 7
    assert "worker rank 1 exited with code 7; stopping the other workers" in r.stderr
    assert time.time() - tic < 60


@pytest.mark.slow
def test_lost_worker_without_launcher_is_named(tmp_path):
    """No launcher to stop rank 0: it must end by itself, naming rank 1."""
    from mxmod.launch import _free_port, worker_env

    port = _free_port("127.0.0.1")
    procs = []
    for rank in (0, 1):
        env = worker_env(
            rank, 2, "127.0.0.1", port, 1, base=_env(devices=1, MXMOD_DIST_HEARTBEAT_TIMEOUT="5")
        )
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    SCRIPT,
                    str(tmp_path),
                    "1",
                    "--die-at-batch",
                    "1",
                    "--epochs",
                    "50",
                    "--rows",
                    "640",
                ],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=ROOT,
            )
        )
    try:
        procs[1].communicate(timeout=60)
        _, err0 = procs[0].communicate(timeout=60)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert procs[1].returncode == 7
    assert procs[0].returncode != 0
    assert "worker rank(s) [1] stopped during a step on worker 0" in err0, err0[-3000:]


@pytest.mark.slow
def test_workers_disagreeing_on_the_symbol_fail_naming_the_rank(tmp_path):
    r = _launch(2, 1, tmp_path, 1, "--rank1-hidden", 17, timeout=120)
    assert r.returncode != 0
    assert "workers disagree on the symbol: rank(s) [1] differ from rank 0" in r.stderr


@pytest.mark.slow
def test_unreachable_coordinator_fails_in_bounded_time():
    tic = time.time()
    from mxmod.launch import _free_port

    r = _run(
        [sys.executable, "-c", "import mxmod"],
        timeout=60,
        DMLC_ROLE="worker",
        DMLC_PS_ROOT_URI="127.0.0.1",
        DMLC_PS_ROOT_PORT=str(_free_port("127.0.0.1")),
        DMLC_NUM_WORKER="2",
        DMLC_WORKER_ID="1",
        MXMOD_DIST_INIT_TIMEOUT="3",
    )
    assert r.returncode != 0
    assert "worker 1 of 2 could not join the job at 127.0.0.1:" in r.stderr
    assert "within 3 s" in r.stderr and "MXMOD_DIST_INIT_TIMEOUT" in r.stderr
    assert time.time() - tic < 40


@pytest.mark.slow
def test_rank_0_alone_stops_after_the_init_timeout():
    tic = time.time()
    from mxmod.launch import _free_port

    r = _run(
        [sys.executable, "-c", "import mxmod"],
        timeout=60,
        DMLC_ROLE="worker",
        DMLC_PS_ROOT_URI="127.0.0.1",
        DMLC_PS_ROOT_PORT=str(_free_port("127.0.0.1")),
        DMLC_NUM_WORKER="2",
        DMLC_WORKER_ID="0",
        MXMOD_DIST_INIT_TIMEOUT="3",
    )
    assert r.returncode != 0
    assert "worker 0 of 2 serving the job at 127.0.0.1:" in r.stderr
    assert "waiting up to 3 s (MXMOD_DIST_INIT_TIMEOUT) for ranks 1..1 to join" in r.stderr
    assert time.time() - tic < 40


def test_server_and_scheduler_roles_exit_at_import():
    for role in ("server", "scheduler"):
        r = _run(
            [sys.executable, "-c", "import mxmod; print('ran on')"],
            timeout=60,
            DMLC_ROLE=role,
            DMLC_PS_ROOT_URI="127.0.0.1",
            DMLC_PS_ROOT_PORT="9",
            DMLC_NUM_WORKER="2",
            DMLC_NUM_SERVER="1",
        )
        assert r.returncode == 0 and "ran on" not in r.stdout
        assert f"DMLC_ROLE={role}: mxmod needs no parameter servers" in r.stderr


def test_dist_store_after_jax_computed_explains():
    code = (
        "import os, jax.numpy as jnp; jnp.ones(2).block_until_ready();"
        "os.environ.update(DMLC_PS_ROOT_URI='127.0.0.1', DMLC_PS_ROOT_PORT='9',"
        "DMLC_NUM_WORKER='2', DMLC_WORKER_ID='0');"
        "import mxmod as mx; mx.kv.create('dist_sync')"
    )
    r = _run([sys.executable, "-c", code], timeout=60)
    assert r.returncode != 0
    assert "describe worker 0 of 2, but JAX already ran a computation" in r.stderr
    assert "create the dist kvstore (or import mxmod) before" in r.stderr


@pytest.mark.slow
def test_workers_from_jax_variables(tmp_path):
    """JAX's own variables instead of MXNet's: the same job."""
    from mxmod.launch import _free_port

    port = _free_port("127.0.0.1")
    procs = []
    for rank in (0, 1):
        env = _env(
            devices=1,
            JAX_COORDINATOR_ADDRESS=f"127.0.0.1:{port}",
            JAX_NUM_PROCESSES="2",
            JAX_PROCESS_ID=str(rank),
        )
        procs.append(
            subprocess.Popen(
                [sys.executable, SCRIPT, str(tmp_path), "1"],
                env=env,
                stderr=subprocess.PIPE,
                text=True,
                cwd=ROOT,
            )
        )
    try:
        errs = [p.communicate(timeout=120)[1] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert [p.returncode for p in procs] == [0, 0], errs[0][-2000:] + errs[1][-2000:]
    w0, w1 = _params(tmp_path / "params-rank0.npz"), _params(tmp_path / "params-rank1.npz")
    for k in w0:
        np.testing.assert_array_equal(w0[k], w1[k])


@pytest.mark.slow
def test_host_reading_optimizer_is_refused(tmp_path):
    r = _launch(2, 1, tmp_path, 1, "--host-optimizer", timeout=120)
    assert r.returncode != 0
    assert (
        "dist_sync over several workers needs an optimizer with a compiled update; "
        "HostSGD.update reads host values" in r.stderr
    )


@pytest.mark.slow
def test_worker_local_views_after_fit(tmp_path):
    """Per-device gradients, outputs, inputs and predict() read this worker's part."""
    one = tmp_path / "one"
    one.mkdir()
    r = _run([sys.executable, SCRIPT, str(one), "4", "--inspect", "--epochs", "1"], devices=4)
    assert r.returncode == 0, r.stderr[-3000:]
    two = tmp_path / "two"
    two.mkdir()
    r = _launch(2, 2, two, 2, "--inspect", "--epochs", "1")
    assert r.returncode == 0, r.stderr[-3000:]
    ref = _params(one / "inspect-rank0.npz")
    for rank in (0, 1):
        got = _params(two / f"inspect-rank{rank}.npz")
        for k in (0, 1):  # worker r's device k is device 2r+k of the 1x4 run
            np.testing.assert_allclose(
                got[f"grad{k}"], ref[f"grad{2 * rank + k}"], rtol=1e-5, atol=1e-6
            )
        rows = slice(8 * rank, 8 * rank + 8)  # its rows of the first global batch
        np.testing.assert_allclose(got["out"], ref["out"][rows], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got["out_dev1"], ref["out"][rows][4:], rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(got["data_dev0"].shape, (4, 10))
        assert got["predict"].shape == (32, 3)  # its own 32 rows
