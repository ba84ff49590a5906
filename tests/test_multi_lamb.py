"""``mx.nd.contrib.multi_lamb_update`` / ``multi_mp_lamb_update`` against MXNet 1.9.1
goldens (``fixtures/multi_updates/lamb.npz``, recorded by
``fixtures/gen_multi_lamb_goldens.py``): new weights, moments and float32 masters.

The float32 form agrees to float rounding. In the multi-precision form MXNet's trust ratio
``r1 / r2`` differs from the float32 formula's (moments and directions equal) by up to
2e-4 relative, so its master weights are compared to 1e-3 (relative; 1e-4 absolute)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

with np.load(Path(__file__).resolve().parent / "fixtures" / "multi_updates" / "lamb.npz") as z:
    G = {k: z[k] for k in z.files}
CASES = sorted({k.split(":")[0] for k in G})


@pytest.mark.parametrize("case", CASES)
def test_matches_mxnet(case):
    kw = json.loads(str(G[f"{case}:kw"]))
    mp = kw.pop("mp")
    kinds = ["weight", "grad", "mean", "var"] + (["weight32"] if mp else [])
    n = sum(1 for k in G if k.startswith(f"{case}:weight:"))
    nd = {
        k: [mx.nd.array(G[f"{case}:{k}:{i}"], dtype=G[f"{case}:{k}:{i}"].dtype) for i in range(n)]
        for k in kinds
    }
    outs = [w.copy() for w in nd["weight"]]
    fn = mx.nd.contrib.multi_mp_lamb_update if mp else mx.nd.contrib.multi_lamb_update
    fn(*(nd[k] for k in kinds), out=outs, **kw)
    tol = 2e-3 if mp else 1e-5
    for i in range(n):
        np.testing.assert_allclose(
            outs[i].asnumpy().astype("f4"),
            G[f"{case}:out:{i}"],
            rtol=tol,
            atol=tol,
            err_msg=f"out {i}",
        )
        for k in kinds:
            np.testing.assert_allclose(
                nd[k][i].asnumpy().astype("f4"),
                G[f"{case}:after:{k}:{i}"],
                rtol=1e-3 if k == "weight32" else 1e-4,
                atol=1e-4 if k == "weight32" else 1e-5,
                err_msg=f"{k} {i}",
            )


def test_without_out_new_arrays_and_bad_lists():
    w, g = mx.nd.ones((3,)), mx.nd.ones((3,))
    m, v = mx.nd.zeros((3,)), mx.nd.zeros((3,))
    (new,) = mx.nd.contrib.multi_lamb_update([w], [g], [m], [v], [1], [0.1], [0.0])
    assert new.shape == (3,) and (w.asnumpy() == 1).all() and (new.asnumpy() < 1).all()
    with pytest.raises(MXNetError, match="2 lrs for 1 weights"):
        mx.nd.contrib.multi_lamb_update([w], [g], [m], [v], [1], [0.1, 0.2], [0.0])
    with pytest.raises(TypeError, match="unknown arguments"):
        mx.nd.contrib.multi_lamb_update([w], [g], [m], [v], [1], [0.1], [0.0], momentum=0.9)
