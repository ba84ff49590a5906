"""mx.nd.contrib.calibrate_entropy against MXNet 1.9.1 (gen_calibrate_goldens.py)."""

import os

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

G = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "calibrate", "goldens.npz"))
CASES = sorted({k.split(":")[0] for k in G.files})


@pytest.mark.parametrize("case", CASES)
def test_threshold_and_divergence_are_mxnets(case):
    threshold, divergence = mx.nd.contrib.calibrate_entropy(
        mx.nd.array(G[f"{case}:hist"]), mx.nd.array(G[f"{case}:edges"]),
        num_quantized_bins=int(G[f"{case}:nq"]),
    )  # fmt: skip
    assert threshold.shape == (1,) and divergence.shape == (1,)
    np.testing.assert_array_equal(threshold.asnumpy(), G[f"{case}:threshold"])
    np.testing.assert_allclose(divergence.asnumpy(), G[f"{case}:divergence"], rtol=2e-3)


def test_bad_histograms_are_named():
    with pytest.raises(MXNetError, match="len\\(hist\\) \\+ 1"):
        mx.nd.contrib.calibrate_entropy(mx.nd.ones((11,)), mx.nd.ones((11,)))
    with pytest.raises(MXNetError, match="at least 255 bins"):
        mx.nd.contrib.calibrate_entropy(mx.nd.ones((11,)), mx.nd.ones((12,)))
