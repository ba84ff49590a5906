"""mx.kv driven directly by 2 worker processes (dist_sync over loopback)."""

import os
import subprocess
import sys

import numpy as np
import pytest
from test_dist_train import ROOT, _launch  # noqa: F401  (shared process helpers)

SCRIPT = os.path.join(ROOT, "tests", "dist", "kv_ops.py")


@pytest.mark.slow
def test_two_workers_drive_the_store(tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "mxmod.launch",
        "-n",
        "2",
        "--cpu-devices",
        "2",
        "--grace",
        "3",
        sys.executable,
        SCRIPT,
        str(tmp_path),
    ]
    from test_dist_train import _env

    r = subprocess.run(
        cmd, env=_env(), capture_output=True, text=True, timeout=180, cwd=ROOT, check=False
    )
    assert r.returncode == 0, r.stderr[-3000:]
    recs = [dict(np.load(tmp_path / f"kv-rank{i}.npz")) for i in (0, 1)]
    assert [int(x["rank"]) for x in recs] == [0, 1]
    assert all(int(x["num_workers"]) == 2 for x in recs)
    for x in recs:
        np.testing.assert_array_equal(x["init"], 10.0)  # rank 0's value everywhere
        # devices of worker 0 push 1+1, of worker 1 push 2+2: the sum replaces the value
        np.testing.assert_array_equal(x["push_sum"], 6.0)
        np.testing.assert_array_equal(x["pushpull"], 3.0)
        # SGD(lr .1, momentum .9) on w=1 with summed grads 0+1=1, then 1+2=3:
        # m1 = -.1, w = .9; m2 = .9 * -.1 - .3 = -.39, w = .51
        np.testing.assert_allclose(x["sgd"], 0.51, rtol=1e-6)
        np.testing.assert_allclose(x["loaded_states"], -0.39, rtol=1e-6)
        # 2bit t=.5 per worker: step 1 r0=(.3,-.4)->0, r1=(.3,.2)->0: sum 0;
        # step 2 r0=(.6,-.8)->(.5,-.5), r1=(.6,.4)->(.5,0): sum (1,-.5)
        np.testing.assert_allclose(x["gc"], [[0, 0], [1.0, -0.5]], atol=1e-7)
