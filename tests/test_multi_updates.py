"""``multi_lars`` and the ``preloaded_multi_*sgd*`` update operators against MXNet 1.9.1
goldens (``fixtures/multi_updates/``, recorded by ``fixtures/gen_multi_update_goldens.py``):
returned arrays and every input after the call (weights, momenta and float32 masters are
updated in place)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

with np.load(Path(__file__).resolve().parent / "fixtures" / "multi_updates" / "goldens.npz") as z:
    G = {k: z[k] for k in z.files}
CASES = sorted({k.split(":")[0] for k in G})
PER = {"sgd": 2, "sgd_mom": 3, "mp_sgd": 3, "mp_sgd_mom": 4}


def _inputs(case):
    n = sum(1 for k in G if k.startswith(f"{case}:in:"))
    return [G[f"{case}:in:{i}"] for i in range(n)]


@pytest.mark.parametrize("case", CASES)
def test_matches_mxnet(case):
    kw = json.loads(str(G[f"{case}:kw"]))
    arrays = [mx.nd.array(a, dtype=a.dtype) for a in _inputs(case)]
    if case in PER:
        kw["out"] = [arrays[i * PER[case]] for i in range(kw["num_weights"])]
    res = getattr(mx.nd, str(G[f"{case}:op"]))(*arrays, **kw)
    res = res if isinstance(res, (list, tuple)) else [res]
    for i, r in enumerate(res):
        want = G[f"{case}:out:{i}"]
        assert r.dtype == want.dtype
        np.testing.assert_allclose(r.asnumpy().astype(np.float32), want, rtol=1e-3, atol=1e-6)
    for i, a in enumerate(arrays):
        np.testing.assert_allclose(
            a.asnumpy().astype(np.float32),
            G[f"{case}:after:{i}"],
            rtol=1e-3,
            atol=1e-6,
            err_msg=f"input {i}",
        )


def test_without_out_the_new_weights_are_returned():
    w, g = mx.nd.ones((2,)), mx.nd.ones((2,))
    (new,) = mx.nd.preloaded_multi_sgd_update(
        w, g, mx.nd.array([0.1]), mx.nd.array([0.0]), num_weights=1
    )
    np.testing.assert_allclose(new.asnumpy(), [0.9, 0.9])
    np.testing.assert_allclose(w.asnumpy(), [1.0, 1.0])


def test_wrong_counts_are_refused():
    w, g = mx.nd.ones((2,)), mx.nd.ones((2,))
    with pytest.raises(MXNetError, match="num_weights=2"):
        mx.nd.preloaded_multi_sgd_update(
            w, g, mx.nd.array([0.1]), mx.nd.array([0.0]), num_weights=2
        )
    with pytest.raises(MXNetError, match="lrs and wds"):
        mx.nd.preloaded_multi_sgd_update(w)
