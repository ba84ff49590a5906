"""Sparse optimizer updates against MXNet 1.9.1 goldens (tests/fixtures/gen_sparse_updates.py):
the update operators with row_sparse/csr inputs (lazy, std, storage fallback, errors) and the
optimizer classes' imperative updates with row_sparse gradients."""

import io
import json
import os

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

HERE = os.path.join(os.path.dirname(__file__), "fixtures", "sparse_updates")
with open(os.path.join(HERE, "cases.json")) as _f:
    CASES = json.load(_f)
ARRAYS = np.load(os.path.join(HERE, "arrays.npz"))
OPS = [(i, c) for i, c in enumerate(CASES) if c["kind"] == "op"]
OPTS = [(i, c) for i, c in enumerate(CASES) if c["kind"] == "opt"]


def _nd(a, stype, dtype="float32"):
    arr = mx.nd.array(a, dtype=dtype)
    return arr if stype == "default" else arr.tostype(stype)


def _check(i, key, arr, rtol=1e-5, atol=1e-6):
    want = ARRAYS[f"{i}_{key}"]
    np.testing.assert_allclose(arr.asnumpy(), want, rtol=rtol, atol=atol, err_msg=key)
    rows = f"{i}_{key}__rows"
    if rows in ARRAYS.files:
        assert arr.stype == "row_sparse", key
        np.testing.assert_array_equal(arr.indices.asnumpy(), ARRAYS[rows], err_msg=key)


def _op(name):
    if name == "adagrad_update":
        return mx.nd.sparse.adagrad_update
    if name == "group_adagrad_update":
        return mx.nd.contrib.group_adagrad_update
    return getattr(mx.nd, name)


def _label(case):
    c = case[1]
    if c["kind"] == "op":
        lazy = c["hyper"].get("lazy_update", "")
        return f"{case[0]}-{c['op']}-{c['wst']}-{c['gst']}-{c['sst']}-{lazy}"
    return f"{case[0]}-{c['name']}-{c['wst']}-{c['kwargs'].get('lazy_update', '')}"


@pytest.mark.parametrize("case", OPS, ids=_label)
def test_update_operator_matches_mxnet(case):
    i, c = case
    w = _nd(ARRAYS[f"{i}_w"], c["wst"])
    g = _nd(ARRAYS[f"{i}_g"], c["gst"])
    states = [_nd(ARRAYS[f"{i}_s{k}"], c["sst"]) for k in range(c["n_states"])]
    if c["error"]:
        key = "all rows" if "all rows" in c["error"] else "Operator not implemented"
        with pytest.raises(MXNetError, match=key):
            _op(c["op"])(w, g, *states, out=w, **c["hyper"])
        return
    out = _op(c["op"])(w, g, *states, out=w, **c["hyper"])
    assert out is w and w.stype == c["wst"]
    _check(i, "out_w", w)
    for k, s in enumerate(states):
        assert s.stype == c["sst"]
        _check(i, f"out_s{k}", s)


@pytest.mark.parametrize("case", OPTS, ids=_label)
def test_optimizer_update_matches_mxnet(case):
    i, c = case
    dtype = c["dtype"]
    opt = mx.optimizer.create(c["name"], **c["kwargs"])
    w = _nd(ARRAYS[f"{i}_w"].astype(dtype), c["wst"], dtype)
    state = opt.create_state_multi_precision(0, w) if c["mp"] else opt.create_state(0, w)
    flat = [s for s in _leaves(state)]
    for t in range(c["steps"]):
        g = _nd(ARRAYS[f"{i}_g{t}"].astype(dtype), c["gst"], dtype)
        if c["mp"]:
            opt.update_multi_precision(0, w, g, state)
        else:
            opt.update(0, w, g, state)
    assert w.stype == c["out_stype"]
    tol = dict(rtol=1e-3, atol=1e-3) if dtype == "float16" else {}
    _check(i, "out_w", w, **tol)
    assert len(flat) == c["n_state"]
    for k, s in enumerate(flat):
        _check(i, f"out_s{k}", s, **tol)
    if not c["mp"]:
        assert [s.stype for s in flat] == c["state_stypes"]


def _leaves(state):
    if state is None:
        return []
    if isinstance(state, (tuple, list)):
        return [x for s in state for x in _leaves(s)]
    return [state]


def test_lazy_update_flag_is_a_parameter():
    w = mx.nd.ones((3, 2))
    g = mx.nd.array([[0, 0], [1, 1], [0, 0]]).tostype("row_sparse")
    mx.nd.sgd_update(w, g, lr=0.5, wd=0.1, lazy_update=False, out=w)
    np.testing.assert_allclose(w.asnumpy(), [[0.95, 0.95], [0.45, 0.45], [0.95, 0.95]])


def test_sparse_adagrad_refuses_dense_grad_and_wd():
    w, h = mx.nd.ones((3, 2)), mx.nd.zeros((3, 2))
    with pytest.raises(MXNetError, match="row_sparse grad"):
        mx.nd.sparse.adagrad_update(w, mx.nd.ones((3, 2)), h, lr=0.1)
    g = mx.nd.ones((3, 2)).tostype("row_sparse")
    with pytest.raises(MXNetError, match="wd=0"):
        mx.nd.sparse.adagrad_update(w, g, h, lr=0.1, wd=0.1)


def test_adagrad_optimizer_with_sparse_grad_and_wd_is_refused():
    opt = mx.optimizer.AdaGrad(wd=0.1)
    w = mx.nd.ones((3, 2))
    g = mx.nd.ones((3, 2)).tostype("row_sparse")
    with pytest.raises(ValueError, match="weight decay"):
        opt.update(0, w, g, opt.create_state(0, w))


def test_sparse_states_keep_storage_through_get_states():
    upd = mx.optimizer.get_updater(mx.optimizer.Adam())
    w = mx.nd.ones((4, 3)).tostype("row_sparse")
    upd(0, mx.nd.array(np.eye(4, 3)).tostype("row_sparse"), w)
    other = mx.optimizer.get_updater(mx.optimizer.Adam())
    other.set_states(upd.get_states())
    for old, new in zip(upd.states[0], other.states[0]):
        assert new.stype == "row_sparse"
        np.testing.assert_array_equal(new.asnumpy(), old.asnumpy())
    with np.load(io.BytesIO(upd.get_states())) as z:
        members = dict(z)
    key = "__mxmod_optimizer_states__"
    text = members[key].tobytes().replace(b'"stype": "row_sparse"', b'"stype": "rowsparse!"')
    members[key] = np.frombuffer(text, np.uint8)
    buf = io.BytesIO()
    np.savez(buf, **members)
    with pytest.raises(MXNetError, match="stype.*'row_sparse' or 'csr'"):
        other.set_states(buf.getvalue())


def test_update_operator_without_out_returns_a_new_weight():
    w, g, m = mx.nd.ones((2, 2)), mx.nd.ones((2, 2)), mx.nd.zeros((2, 2))
    new = mx.nd.sgd_mom_update(w, g, m, lr=0.1, momentum=0.9)
    assert new is not w
    np.testing.assert_allclose(w.asnumpy(), 1.0)  # the weight is not written (MXNet)
    np.testing.assert_allclose(m.asnumpy(), -0.1)  # the state is
    np.testing.assert_allclose(new.asnumpy(), 0.9)
    w16, w32 = mx.nd.ones((2, 2), dtype="float16"), mx.nd.ones((2, 2))
    new = mx.nd.mp_sgd_update(w16, g.astype("float16"), w32, lr=0.1)
    assert new.dtype == np.float16 and float(w16.asnumpy()[0, 0]) == 1.0
    np.testing.assert_allclose(w32.asnumpy(), 0.9)


def test_sparse_kernel_needs_out_weight():
    w = mx.nd.ones((2, 2)).tostype("row_sparse")
    g = mx.nd.ones((2, 2)).tostype("row_sparse")
    with pytest.raises(MXNetError, match="kWriteInplace is expected for sparse sgd_update"):
        mx.nd.sgd_update(w, g, lr=0.1)
    dense = mx.nd.rmsprop_update(w, g, mx.nd.zeros((2, 2)), lr=0.1)  # fallback: fine
    assert dense.stype == "default" and w.asnumpy().tolist() == [[1.0, 1.0], [1.0, 1.0]]
