"""row_sparse values in a dist_sync store driven by 2 worker processes (loopback)."""

import os
import subprocess
import sys

import numpy as np
import pytest
from test_dist_train import ROOT, _env  # noqa: F401  (shared process helpers)

SCRIPT = os.path.join(ROOT, "tests", "dist", "kv_sparse_ops.py")


@pytest.mark.slow
def test_two_workers_push_row_sparse(tmp_path):
    cmd = [sys.executable, "-m", "mxmod.launch", "-n", "2", "--cpu-devices", "2", "--grace",
           "3", sys.executable, SCRIPT, str(tmp_path)]  # fmt: skip
    r = subprocess.run(
        cmd, env=_env(), capture_output=True, text=True, timeout=180, cwd=ROOT, check=False
    )
    assert r.returncode == 0, r.stderr[-3000:]
    for rank in (0, 1):
        x = dict(np.load(tmp_path / f"kv-sparse-rank{rank}.npz"))
        # the sum over devices and workers: the union of every sender's stored rows
        np.testing.assert_array_equal(x["recv_indices"], [0, 1, 3])
        np.testing.assert_array_equal(x["recv_data"], [[1, 1], [2, 2], [0, 0]])
        # rank 0's init (rows 0 and 2 = 10) plus the sum
        np.testing.assert_array_equal(x["pulled_indices"], [0, 1, 2, 3])
        np.testing.assert_array_equal(x["pulled"], [[11, 11], [2, 2], [10, 10], [0, 0]])
