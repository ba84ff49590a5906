"""KVStore with row_sparse values against MXNet 1.9.1 (tests/fixtures/kvstore_sparse,
gen_kvstore_sparse.py): row_sparse_pull, push aggregation, pull rules, updaters and an
optimizer on the store, and MXNet's errors. The scenarios (fixtures/kvstore_sparse_cases.py)
run here with mxmod exactly as the generator ran them with MXNet."""

import functools
import json
import os
import sys

import numpy as np
import pytest

import mxmod as mx

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "fixtures", "kvstore_sparse")
sys.path.insert(0, os.path.join(HERE, "fixtures"))
from kvstore_sparse_cases import SCENARIOS, Recorder  # noqa: E402

with open(os.path.join(FIX, "results.json")) as _f:
    GOLDEN = json.load(_f)
ARRAYS = dict(np.load(os.path.join(FIX, "results.npz")))

# MXNet's bare `assert`s on row_sparse_pull's arguments are clear errors of these types here
ERROR_TYPES = {"AssertionError": ("ValueError", "TypeError")}


@functools.lru_cache(maxsize=None)
def _run(scenario):
    rec = Recorder(mx)
    SCENARIOS[scenario](mx, rec)
    return rec.results


# an optimizer on the store compiles one update program per configuration: slow
KEYS = [
    pytest.param(k, marks=pytest.mark.slow) if k.startswith("optimizer_on_store/") else k
    for k in sorted(GOLDEN)
]


@pytest.mark.parametrize("key", KEYS)
def test_matches_mxnet(key):
    scenario, name = key.split("/", 1)
    want, got = GOLDEN[key], _run(scenario).get(name)
    assert got is not None, f"{key} was not recorded by mxmod"
    if "error" in want:
        expected = ERROR_TYPES.get(want["error"], (want["error"],)) if want["error"] else (None,)
        assert got.get("error", "no error") in expected, (key, got)
        return
    if "value" in want:
        assert got["value"] == want["value"]
        return
    assert "error" not in got, (key, got)
    assert (got["stype"], got["dtype"], got["context"]) == (
        want["stype"],
        want["dtype"],
        want["context"],
    )
    if want["stype"] == "row_sparse":
        np.testing.assert_array_equal(got["indices"], ARRAYS[f"{key}:indices"])
    np.testing.assert_allclose(got["dense"], ARRAYS[f"{key}:dense"], rtol=1e-5, atol=1e-6)
