"""The fused training step with sparse inputs and row_sparse gradients (issue 28):
csr batches as ``CsrParts``, lazy row updates, and the devices' row gradients combined."""

import pathlib
import sys

import jax
import numpy as np
import pytest

import mxmod as mx
from mxmod.executor import rows
from mxmod.executor.executor import compiled_for
from mxmod.executor.placement import MeshPlacement, OneDevice
from mxmod.executor.programs import Programs
from mxmod.executor.sparse_io import device_csr_parts
from mxmod.executor.step import Batch, StepState, optimizer_rule, zero_key
from mxmod.ndarray.sparse.parts import RowParts, csr_parts

sys.path.insert(0, str(pathlib.Path(__file__).parent / "fixtures"))
import symbol_sparse_cases as cases  # noqa: E402

PARAMS = ("v", "w1_weight", "w1_bias")


def _fm():
    sym, _, _, inputs, _, _ = cases.fm(mx)
    params = {n: inputs[n] for n in PARAMS}
    return sym, params, inputs["data"], inputs["label"]


def _step(placement, lazy, csr_input, batch_x, label):
    sym, params, _, _ = _fm()
    graph = compiled_for(sym).graph
    progs = Programs(graph, placement, {"data": 0, "label": 0}, [0], list(PARAMS), ["label"])
    assert progs.row_sparse == ("v", "w1_weight")
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.1, rescale_grad=0.5)
    state = StepState(params=dict(params), aux={}, opt=opt.fused_init(dict(params)))
    rule = optimizer_rule(opt, lazy_rows=progs.row_sparse if lazy else ())
    step = progs.train_step(("data", "label"), rule, keep=("grads",))
    state, res = step(state, Batch({"data": csr_input, "label": label}, zero_key()),
                      opt.fused_hyper(list(PARAMS)))  # fmt: skip
    return state, res


def test_lazy_step_moves_only_the_rows_the_batch_reads():
    sym, params, x, label = _fm()
    csr = mx.nd.array(x).tostype("csr")
    state, res = _step(OneDevice(jax.devices()[0]), True, csr_parts(csr), x, label)
    g = res.grads["v"]
    assert isinstance(g, RowParts)
    touched = np.unique(np.nonzero(x)[1])
    rows = np.asarray(g.rows)
    np.testing.assert_array_equal(rows[rows < 8], touched)
    new_v = np.asarray(state.params["v"])
    untouched = np.setdiff1d(np.arange(8), touched)
    np.testing.assert_array_equal(new_v[untouched], params["v"][untouched])  # no wd there
    # the touched rows: SGD momentum from zero state, g from the executor (golden-tested)
    req = {"v": "write", "w1_weight": "write", "w1_bias": "write"}
    exe = sym.simple_bind(mx.cpu(), data=x.shape, label=label.shape, grad_req=req)
    exe.copy_params_from({k: mx.nd.array(v) for k, v in params.items()})
    exe.forward(is_train=True, data=csr, label=mx.nd.array(label))
    exe.backward()
    gv = exe.grad_dict["v"].asnumpy()[touched]
    w = params["v"][touched]
    np.testing.assert_allclose(new_v[touched], w - 0.1 * (0.5 * gv + 0.1 * w), rtol=1e-5)
    # dense (std) update: every row decays
    state_d, _ = _step(OneDevice(jax.devices()[0]), False, csr_parts(csr), x, label)
    assert not np.allclose(np.asarray(state_d.params["v"])[untouched], params["v"][untouched])
    np.testing.assert_allclose(np.asarray(state_d.params["v"])[touched], new_v[touched], rtol=1e-5)


@pytest.mark.parametrize("n_dev", [2, pytest.param(3, marks=pytest.mark.slow)])
def test_devices_row_gradients_are_combined(n_dev):
    _, _, x, label = _fm()
    csr = mx.nd.array(x).tostype("csr")
    one, res1 = _step(OneDevice(jax.devices()[0]), True, csr_parts(csr), x, label)
    mesh = MeshPlacement(jax.devices()[:n_dev])
    many, res = _step(mesh, True, device_csr_parts(csr, n_dev), x, label)
    for n in PARAMS:
        np.testing.assert_allclose(np.asarray(many.params[n]), np.asarray(one.params[n]),
                                   rtol=1e-5, atol=1e-6)  # fmt: skip
    g = res.grads["v"]
    assert isinstance(g, RowParts)
    np.testing.assert_allclose(np.asarray(g.dense()), np.asarray(res1.grads["v"].dense()),
                               rtol=1e-5, atol=1e-6)  # fmt: skip


def test_csr_batch_that_does_not_split_is_refused():
    csr = mx.nd.array(np.eye(5, dtype=np.float32)).tostype("csr")
    with pytest.raises(ValueError, match="5 rows does not split over 2 devices"):
        device_csr_parts(csr, 2)


def _dot_exe(**kw):
    x, w = mx.sym.var("x", stype="csr"), mx.sym.var("w")
    return mx.sym.dot(x, w).simple_bind(mx.cpu(), x=(4, 6), w=(6, 2), grad_req=kw)


def test_csr_batches_with_different_nnz_share_one_program():
    exe = _dot_exe(x="null", w="write")
    rng = np.random.RandomState(0)
    for nnz in (3, 5, 9):
        dense = np.zeros((4, 6), np.float32)
        dense.flat[rng.choice(24, nnz, replace=False)] = rng.uniform(1, 2, nnz)
        exe.forward(is_train=True, x=mx.nd.array(dense).tostype("csr"))
        exe.backward(mx.nd.ones((4, 2)))
        np.testing.assert_allclose(exe.outputs[0].asnumpy(), dense @ exe.arg_dict["w"].asnumpy())
        got = exe.grad_dict["w"]
        assert got.stype == "row_sparse"
        np.testing.assert_array_equal(got.indices.asnumpy(), np.unique(np.nonzero(dense)[1]))
    assert exe._compiled.forward._cache_size() == 1  # nnz padded to 16 each time
    assert exe._compiled.forward_backward._cache_size() == 1


def test_row_sparse_grad_req_add_unites_rows():
    d, w = mx.sym.var("d"), mx.sym.var("w", stype="row_sparse")
    sym = mx.sym.contrib.SparseEmbedding(d, weight=w, input_dim=10, output_dim=2)
    exe = sym.simple_bind(mx.cpu(), d=(3,), grad_req={"d": "null", "w": "add"})
    for idx in ([1, 4, 4], [4, 7, 0]):
        exe.forward(is_train=True, d=mx.nd.array(idx))
        exe.backward(mx.nd.ones((3, 2)))
    g = exe.grad_dict["w"]
    np.testing.assert_array_equal(g.indices.asnumpy(), [0, 1, 4, 7])
    want = np.zeros((10, 2), np.float32)
    np.add.at(want, [1, 4, 4, 4, 7, 0], 1.0)
    np.testing.assert_array_equal(g.asnumpy(), want)


def test_bind_takes_sparse_arrays_and_sparse_gradient_arrays():
    x, w = mx.sym.var("x", stype="csr"), mx.sym.var("w")
    dense = np.array([[0, 2, 0], [1, 0, 0]], np.float32)
    wv = np.arange(6, dtype=np.float32).reshape(3, 2)
    exe = mx.sym.dot(x, w).bind(
        mx.cpu(),
        args={"x": mx.nd.array(dense).tostype("csr"), "w": mx.nd.array(wv)},
        args_grad={"w": mx.nd.sparse.zeros("row_sparse", (3, 2))},
        grad_req={"w": "write"},
    )
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((2, 2)))
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), dense @ wv)
    np.testing.assert_array_equal(exe.grad_dict["w"].indices.asnumpy(), [0, 1])
    np.testing.assert_allclose(exe.grad_dict["w"].asnumpy(), dense.T @ np.ones((2, 2)))
    with pytest.raises(mx.base.MXNetError, match=r"got shape \(3, 3\)"):
        exe.forward(x=mx.nd.sparse.zeros("csr", (3, 3)))


def test_row_gradients_of_replicas_merge_into_unique_rows():
    a = RowParts(np.array([1, 4, 6], np.int32), np.ones((3, 2), np.float32), (6, 2))
    b = RowParts(np.array([0, 4, 6], np.int32), np.full((3, 2), 2, np.float32), (6, 2))
    m = rows.merge([a, b])
    kept = np.asarray(m.rows) < 6
    np.testing.assert_array_equal(np.asarray(m.rows)[kept], [0, 1, 4])
    np.testing.assert_array_equal(np.asarray(m.dense()), np.asarray(a.dense() + b.dense()))


def test_sparse_executor_monitor_debug_str_and_reshape():
    x, w = mx.sym.var("x", stype="csr"), mx.sym.var("w", stype="row_sparse")
    out = mx.sym.MakeLoss(mx.sym.sum(mx.sym.dot(x, w) * 2))
    exe = out.simple_bind(mx.cpu(), x=(4, 5), w=(5, 2))
    exe.copy_params_from({"w": mx.nd.ones((5, 2))})
    seen = []
    exe.set_monitor_callback(lambda name, arr: seen.append(name))
    exe.forward(is_train=True, x=mx.nd.array(np.eye(4, 5)).tostype("csr"))
    exe.backward()  # a loss head: no out_grads needed
    assert any(n.endswith("_backward_output0") for n in seen)
    np.testing.assert_array_equal(exe.grad_dict["w"].indices.asnumpy(), [0, 1, 2, 3])
    assert "MB allocated" in exe.debug_str()
    small = exe.reshape(x=(2, 5), w=(5, 2))
    assert small.arg_dict["x"].stype == "csr" and small.arg_dict["w"] is exe.arg_dict["w"]
    small.forward(is_train=True, x=mx.nd.array(np.eye(2, 5)).tostype("csr"))
    small.backward()
    np.testing.assert_allclose(small.outputs[0].asnumpy(), [8.0])
    np.testing.assert_array_equal(small.grad_dict["w"].indices.asnumpy(), [0, 1])
