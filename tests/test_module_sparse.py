"""Module over csr data with row_sparse weights (issue 28) against MXNet 1.9.1 goldens
(tests/fixtures/gen_io_sparse.py): forward/backward/update steps (lazy and std updates),
parameter storage, init_params on row_sparse weights, checkpoints."""

import json
import pathlib
import sys

import numpy as np
import pytest

import mxmod as mx

FIX = pathlib.Path(__file__).parent / "fixtures"
sys.path.insert(0, str(FIX))
import io_sparse_cases as gen  # noqa: E402

GOLD = np.load(FIX / "io_sparse" / "module.npz")
META = json.loads((FIX / "io_sparse" / "module.json").read_text())


@pytest.mark.parametrize("name", sorted(gen.MODULE_CASES))
def test_module_steps_match_mxnet(name):
    kind, optimizer, opt_params = gen.MODULE_CASES[name]
    out, stypes = gen.module_case(mx, kind, optimizer, opt_params)
    assert stypes == META["stypes"][name]
    for key, value in out.items():
        np.testing.assert_allclose(value, GOLD[f"{name}/{key}"], rtol=2e-5, atol=2e-6, err_msg=key)


@pytest.mark.parametrize("kvstore", [pytest.param("device", marks=pytest.mark.slow), "local"])
def test_two_devices_match_mxnet_one_device(kvstore):
    """A csr batch split by rows over two devices (CsrParts per device), row gradients
    summed by the kvstore: the same steps as MXNet's single device."""
    kind, optimizer, opt_params = gen.MODULE_CASES["fm_sgd_clip"]
    two = [mx.cpu(0), mx.cpu(1)]
    out, _ = gen.module_case(mx, kind, optimizer, opt_params, kvstore=kvstore, context=two)
    for key, value in out.items():
        np.testing.assert_allclose(
            value, GOLD[f"fm_sgd_clip/{key}"], rtol=2e-5, atol=2e-6, err_msg=key
        )


def test_lazy_update_leaves_unread_rows_alone():
    lazy, _ = gen.module_case(mx, *gen.MODULE_CASES["linear_sgd_lazy"])
    std, _ = gen.module_case(mx, *gen.MODULE_CASES["linear_sgd_std"])
    _, _, params = gen.module_inputs()
    w0 = params["w_weight"]
    assert lazy["param/w_weight"][7] == w0[7]  # feature 7 is in no sample
    assert std["param/w_weight"][7] != w0[7]  # the std update decays it (wd)


def _linear_module(batch=4):
    mod = mx.mod.Module(gen.module_symbol(mx, "linear"), data_names=["data"], label_names=["label"])
    mod.bind(data_shapes=[("data", (batch, 12))], label_shapes=[("label", (batch, 1))])
    return mod


@pytest.mark.parametrize("init", ["Zero", "One"])
def test_init_params_stores_every_row_as_mxnet(init):
    mod = _linear_module()
    mod.init_params(getattr(mx.init, init)())
    w = mod.get_params()[0]["w_weight"]
    want = META["checkpoint"][init]
    assert w.stype == want["stype"]
    assert w.indices.asnumpy().tolist() == want["indices"]
    assert (w.asnumpy() == (1.0 if init == "One" else 0.0)).all()


def test_checkpoint_keeps_row_sparse_records(tmp_path):
    _, _, params = gen.module_inputs()
    mod = _linear_module()
    mod.init_params(arg_params={k: mx.nd.array(params[k]) for k in ("w_weight", "b_bias")})
    prefix = str(tmp_path / "m")
    mod.save_checkpoint(prefix, 3)
    saved = mx.nd.load(prefix + "-0003.params")
    assert {k: v.stype for k, v in saved.items()} == META["checkpoint"]["saved"]
    np.testing.assert_allclose(saved["arg:w_weight"].asnumpy(), params["w_weight"])
    # MXNet's own file loads into an mxmod Module, and round-trips
    theirs = mx.nd.load(str(FIX / "io_sparse" / "ckpt-0003.params"))
    assert theirs["arg:w_weight"].stype == "row_sparse"
    args = {k[4:]: v for k, v in theirs.items() if k.startswith("arg:")}
    mod2 = _linear_module()
    mod2.init_params(arg_params=args)
    got = mod2.get_params()[0]
    assert got["w_weight"].stype == "row_sparse"
    np.testing.assert_allclose(got["w_weight"].asnumpy(), params["w_weight"])
    sym, arg, aux = mx.model.load_checkpoint(prefix, 3)
    assert arg["w_weight"].stype == "row_sparse"
    mod3 = mx.mod.Module.load(prefix, 3, data_names=["data"], label_names=["label"])
    mod3.bind(data_shapes=[("data", (4, 12))], label_shapes=[("label", (4, 1))])
    np.testing.assert_allclose(mod3.get_params()[0]["w_weight"].asnumpy(), params["w_weight"])


def test_csr_batch_for_a_dense_variable_is_densified():
    x = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(x, num_hidden=2, name="fc")
    mod = mx.mod.Module(net, label_names=None)
    mod.bind(data_shapes=[("data", (3, 4))], for_training=False)
    mod.init_params(mx.init.One())
    dense = np.array([[1, 0, 0, 2], [0, 0, 0, 0], [0, 3, 0, 0]], np.float32)
    csr = mx.nd.array(dense).tostype("csr")
    mod.forward(mx.io.DataBatch([csr]), is_train=False)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), dense.sum(1, keepdims=True) * [1, 1])


def test_csr_input_batch_errors():
    mod = _linear_module()
    mod.init_params(mx.init.One())
    rsp = mx.nd.array(np.ones((4, 12), np.float32)).tostype("row_sparse")
    with pytest.raises(mx.base.MXNetError, match="csr input but the batch holds a row_sparse"):
        mod.forward(mx.io.DataBatch([rsp], [mx.nd.zeros((4, 1))]))
        mod.get_outputs()
    wrong = mx.nd.array(np.ones((4, 11), np.float32)).tostype("csr")
    with pytest.raises(mx.base.MXNetError, match="contract axes of sizes 11 and 12"):
        mod.forward(mx.io.DataBatch([wrong], [mx.nd.zeros((4, 1))]))
        mod.get_outputs()


def _prepared_module(contexts, kvstore):
    mod = mx.mod.Module(
        gen.module_symbol(mx, "linear"), data_names=["data"], label_names=["label"],
        context=contexts,
    )  # fmt: skip
    mod.bind(data_shapes=[("data", (4, 12))], label_shapes=[("label", (4, 1))])
    mod.init_params(mx.init.One())
    mod.init_optimizer(kvstore=kvstore, optimizer="sgd")
    return mod


def test_prepare_with_sparse_row_id_fn_as_mxnet():
    batch = mx.io.DataBatch([mx.nd.ones((4, 12)).tostype("csr")], [mx.nd.zeros((4, 1))])
    rows = {"w_weight": batch.data[0].indices, "b_bias": mx.nd.array([0])}
    one = _prepared_module([mx.cpu(0)], "local")  # one device: MXNet makes no kvstore
    with pytest.warns(UserWarning, match="not updated in the KVStore. No need to call"):
        one.prepare(batch, sparse_row_id_fn=lambda b: rows)
    two = _prepared_module([mx.cpu(0), mx.cpu(1)], "device")
    with pytest.warns(UserWarning, match="b_bias.stype is not 'row_sparse'"):
        two.prepare(batch, sparse_row_id_fn=lambda b: rows)
    with pytest.raises(AssertionError, match="Expected dict output from sparse_row_id_fn"):
        two.prepare(batch, sparse_row_id_fn=lambda b: [rows])
    with pytest.raises(ValueError, match="'nope', which is not a parameter"):
        two.prepare(batch, sparse_row_id_fn=lambda b: {"nope": rows["w_weight"]})
    two.forward_backward(batch)
    two.update()
    assert two.get_params()[0]["w_weight"].stype == "row_sparse"


@pytest.mark.parametrize("devices", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_fit_blocks_of_steps_with_varying_nnz(devices):
    """fit(steps_per_dispatch=n) stacks csr batches whose entry counts fall in different
    padding buckets (8 and 48 entries): the same weights as one step a dispatch."""
    rng = np.random.RandomState(0)
    dense = np.zeros((16, 12), np.float32)
    dense[:4, :2] = 1
    dense[4:8, :] = rng.rand(4, 12)
    dense[8:, 3] = 2
    label = rng.rand(16, 1).astype(np.float32)
    it = mx.io.NDArrayIter(
        mx.nd.array(dense).tostype("csr"), {"label": label}, 4, last_batch_handle="discard"
    )
    got = []
    for spd in (1, 4):
        mod = mx.mod.Module(
            gen.module_symbol(mx, "linear"), data_names=["data"], label_names=["label"],
            context=[mx.cpu(k) for k in range(devices)],
        )  # fmt: skip
        mod.fit(it, optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
                num_epoch=1, steps_per_dispatch=spd, initializer=mx.init.One())  # fmt: skip
        got.append(mod.get_params()[0]["w_weight"].asnumpy())
    np.testing.assert_allclose(got[1], got[0], rtol=1e-6)
    assert not np.allclose(got[0], 1.0)


def test_batch_written_after_the_iterator_made_it_is_read_as_written():
    """NDArrayIter's dense batches from csr rows remember those rows (the Module skips a
    scan for non-zeros); a batch changed in place is read as changed."""
    from mxmod.io._host_csr import remembered_csr

    dense = np.eye(4, 12, dtype=np.float32) * 3
    it = mx.io.NDArrayIter(mx.nd.array(dense).tostype("csr"), {"label": np.zeros((4, 1))}, 4,
                           last_batch_handle="discard")  # fmt: skip
    batch = it.next()
    assert remembered_csr(batch.data[0]) is not None
    mod = _linear_module()
    mod.init_params(mx.init.One())
    mod.forward(batch, is_train=False)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), 3.0)  # 3 * 1 + bias 0
    batch.data[0][:] = 2 * batch.data[0]
    assert remembered_csr(batch.data[0]) is None
    mod.forward(batch, is_train=False)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), 6.0)


def test_fit_over_libsvm_iter_matches_mxnet():
    """Module.fit with LibSVMIter's CSRNDArray batches (12 rows, batch 5: the wrapped last
    batch and the next epoch's continuation, as MXNet), lazy SGD with momentum and wd."""
    got = gen.libsvm_fit_case(mx, str(FIX / "io_sparse" / "module.t"))
    for name, value in got.items():
        np.testing.assert_allclose(value, GOLD[f"libsvm_fit/{name}"], rtol=2e-5, atol=2e-6)
    _, _, params = gen.module_inputs()
    assert got["w_weight"][7] == params["w_weight"][7]  # no row 7 in the file: not moved


def test_fused_adagrad_refuses_weight_decay_on_row_sparse_gradients():
    """MXNet's sparse AdaGrad kernel has no weight decay (its lazy update refuses one)."""
    with pytest.raises(ValueError, match="does not support weight decay"):
        gen.module_case(mx, "fm", "adagrad", dict(learning_rate=0.1, wd=0.01))
