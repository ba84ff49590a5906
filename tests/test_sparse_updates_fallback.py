"""NDArray arithmetic and operators given a sparse operand against MXNet 1.9.1
(tests/fixtures/gen_sparse_updates.py, ``FALLBACK``): values and output storage type, or
MXNet's error."""

import json
import os

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

HERE = os.path.join(os.path.dirname(__file__), "fixtures", "sparse_updates")
with open(os.path.join(HERE, "fallback.json")) as _f:
    CASES = json.load(_f)
OUT = np.load(os.path.join(HERE, "fallback.npz"))


def inplace(op, a, b):
    a = a.copy()
    if op == "+=":
        a += b
    elif op == "-=":
        a -= b
    else:
        a *= b
    return a


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['stype']}:{c['expr']}")
def test_sparse_operand_matches_mxnet(case):
    d = mx.nd.array(OUT["d"])
    s = mx.nd.array(OUT["s"]).tostype(case["stype"])
    scope = {"mx": mx, "S": mx.nd.sparse, "inplace": inplace, "d": d, "s": s}
    if "error" in case:
        with pytest.raises((MXNetError, NotImplementedError)):
            eval(case["expr"], scope)  # noqa: S307
        return
    res = eval(case["expr"], scope)  # noqa: S307
    want = OUT[f"{case['stype']}:{case['expr']}"]
    np.testing.assert_allclose(res.asnumpy(), want, rtol=1e-5, atol=1e-6, equal_nan=True)
    assert res.stype == case["out_stype"]
    assert s.asnumpy().tolist() == OUT["s"].tolist()  # operands unchanged
