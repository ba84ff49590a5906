"""Issue 23: bugs MXNet 1.x's own unit tests found in mxmod (integer arguments with a
gradient, ``Executor.debug_str``'s memory line, pre-1.9.1 symbol JSON, executor-group
sharing, PearsonCorrelation), against MXNet 1.9.1 goldens (gen_issue23_unittests_exec.py)."""

import json
import os
import re

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetFileError
from mxmod.module.executor_group import DataParallelExecutorGroup

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "issue23_unittests_exec")
with open(os.path.join(FIX, "golden.json")) as f:
    GOLDEN = json.load(f)


# ------------------------------------------------------------ integer arguments
def _batch_take_exe(req):
    x, idx = mx.sym.Variable("x"), mx.sym.Variable("idx")
    z = mx.sym.stop_gradient(mx.sym.batch_take(x, idx))
    exe = z.simple_bind(
        mx.cpu(), x=(4, 3), idx=(4,), type_dict={"x": np.float32, "idx": np.int32}, grad_req=req
    )
    exe.arg_dict["x"][:] = np.arange(12).reshape(4, 3)
    exe.arg_dict["idx"][:] = [0, 2, 1, 2]
    exe.grad_dict["idx"][:] = 7
    exe.grad_dict["x"][:] = 3
    return exe


@pytest.mark.parametrize("req", ["write", "add"])
def test_int_argument_gradient_is_zero_of_its_dtype(req):
    want = GOLDEN["int_grads"][f"batch_take_{req}"]
    exe = _batch_take_exe(req)
    exe.forward(is_train=True)
    exe.backward()
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), want["out"])
    grad_idx = exe.grad_dict["idx"]
    assert grad_idx.dtype == np.dtype(want["grad_idx_dtype"])
    np.testing.assert_array_equal(grad_idx.asnumpy(), want["grad_idx"])
    np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), want["grad_x"])


def test_int_index_of_take_zero_grad_float_data_grad_unchanged():
    want = GOLDEN["int_grads"]["take"]
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    exe = mx.sym.take(b, a).simple_bind(
        mx.cpu(), a=(3,), b=(5, 2), type_dict={"a": np.int32, "b": np.float32}
    )
    exe.arg_dict["a"][:] = [0, 1, 4]
    exe.arg_dict["b"][:] = np.arange(10).reshape(5, 2)
    exe.grad_dict["a"][:] = 5
    exe.forward(is_train=True)
    exe.backward(mx.nd.array(np.arange(6).reshape(3, 2)))
    np.testing.assert_array_equal(exe.grad_dict["a"].asnumpy(), want["grad_a"])
    assert exe.grad_dict["a"].dtype == np.int32
    np.testing.assert_array_equal(exe.grad_dict["b"].asnumpy(), want["grad_b"])


# ------------------------------------------------------------ debug_str memory line
def _allocated(sym, **kw):
    text = sym.simple_bind(mx.cpu(), data=(10, 3, 256, 256), **kw).debug_str()
    return int(re.search(r"Total (\d+) MB allocated", text).group(1))


def test_debug_str_reports_memory_as_mxnet_orders_it():
    data = mx.sym.Variable("data")
    for _ in range(10):
        data = data * data
    big, small1 = _allocated(data), _allocated(data, grad_req="null")
    small2 = _allocated(mx.sym.stop_gradient(data))
    # MXNet's plan: 90/15/15 MB. mxmod: the output (7.5 MB) plus, with a gradient, the
    # ten products the backward pass keeps (jax.vjp residuals, 7.5 MB each)
    mb = 10 * 3 * 256 * 256 * 4 / 2**20
    assert (big, small1, small2) == (int(11 * mb), int(mb), int(mb))
    mx_big, mx_null, mx_stop = (
        int(re.search(r"\d+", GOLDEN["debug_str"][k][0]).group())
        for k in ("grad", "null", "stop_gradient")
    )
    assert mx_big > mx_stop == mx_null and big > small2 == small1  # the unit test's checks


# ------------------------------------------------------------ pre-1.9.1 symbol JSON
def _check_loaded(sym, want):
    assert sym.tojson() == want["tojson"]
    assert sym.list_arguments() == want["arguments"]
    assert sym.list_auxiliary_states() == want["aux"]
    assert sym.attr_dict() == want["attr_dict"]
    if want["shapes"] is not None:
        assert [list(s) for s in sym.infer_shape(data=(2, 5))[0]] == want["shapes"]


def test_load_mxnet_080_file_as_mxnet_upgrades_it():
    sym = mx.sym.load(os.path.join(FIX, "save_000800.json"))
    _check_loaded(sym, GOLDEN["legacy"]["save_000800"])


def test_hidden_key_upgrade_branches():
    with open(os.path.join(FIX, "legacy_edge.json")) as f:
        sym = mx.sym.load_json(f.read())
    _check_loaded(sym, GOLDEN["legacy"]["legacy_edge"])


def _edge(version=10800, fc1_extra=None, fc2_extra=None):
    with open(os.path.join(FIX, "legacy_edge.json")) as f:
        data = json.load(f)
    data["attrs"]["mxnet_version"][1] = version
    data["nodes"][3]["attr"].update(fc1_extra or {})
    data["nodes"][8]["attr"].update(fc2_extra or {})
    return json.dumps(data)


REFUSED = {  # as gen_issue23_unittests_exec.REFUSED
    "not_an_input": dict(fc1_extra={"foo_lr_mult": "9"}),
    "prefix": dict(fc1_extra={"lr_mult_note": "x"}),
    "operator_input": dict(fc2_extra={"data_wd_mult": "0.7"}),
    "current_version": dict(version=10901),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_legacy_keys_mxnet_refuses_are_refused(case):
    assert GOLDEN["legacy"]["verdicts"][case] == "refused"
    with pytest.raises(MXNetFileError, match=r"nodes\[\d\]\.attrs.*not a valid MXNet symbol"):
        mx.sym.load_json(_edge(**REFUSED[case]))


# ------------------------------------------------------------ executor-group sharing
def _rnn(layers):
    stack = mx.rnn.SequentialRNNCell()
    for i in range(layers):
        stack.add(mx.rnn.LSTMCell(num_hidden=4, prefix="lstm_l%d_" % i))
    embed = mx.sym.Embedding(mx.sym.Variable("data"), input_dim=10, output_dim=3, name="embed")
    stack.reset()
    outputs, _ = stack.unroll(3, inputs=embed, merge_outputs=True)
    pred = mx.sym.FullyConnected(mx.sym.Reshape(outputs, shape=(-1, 4)), num_hidden=10, name="pred")
    label = mx.sym.Reshape(mx.sym.Variable("softmax_label"), shape=(-1,))
    return mx.sym.SoftmaxOutput(pred, label, name="softmax")


def test_shared_group_shares_and_extends_shared_data_arrays():
    want = GOLDEN["executor_group"]
    ctxs = [mx.cpu(0), mx.cpu(1)]
    shapes = dict(data_shapes=[("data", (4, 3))], label_shapes=[("softmax_label", (4, 3))])
    s1 = _rnn(1)
    params = [n for n in s1.list_arguments() if n not in ("data", "softmax_label")]
    common = dict(param_names=params, for_training=True, inputs_need_grad=False, **shapes)
    g1 = DataParallelExecutorGroup(s1, ctxs, [1, 1], **common)
    assert [sorted(d) for d in g1.shared_data_arrays] == want["before"]
    g2 = DataParallelExecutorGroup(_rnn(3), ctxs, [1, 1], shared_group=g1, **common)
    assert [sorted(d) for d in g1.shared_data_arrays] == want["after"]
    pairs = list(zip(g1.shared_data_arrays, g2.shared_data_arrays))
    assert [a is b for a, b in pairs] == want["same_dicts"]
    assert all(a["data"] is b["data"] for a, b in pairs) == want["same_data"]
    extra = g2.shared_data_arrays[0]["lstm_l2_i2h_weight"]
    assert list(extra.shape) == want["extra_shape"]
    assert float(extra.asnumpy().sum()) == want["extra_values"]


def test_extra_argument_array_is_what_the_program_reads():
    data = mx.sym.Variable("data")
    out = mx.sym.FullyConnected(data, num_hidden=2, name="fc") + mx.sym.Variable("offset")
    shapes = dict(data_shapes=[("data", (2, 3))], label_shapes=None)
    g = DataParallelExecutorGroup(
        out, [mx.cpu(0)], [1], param_names=["fc_weight", "fc_bias"], for_training=False,
        inputs_need_grad=False, **shapes,
    )  # fmt: skip
    g.set_params({"fc_weight": mx.nd.zeros((2, 3)), "fc_bias": mx.nd.zeros((2,))}, {})
    g.shared_data_arrays[0]["offset"][:] = 1.5
    g.forward(mx.io.DataBatch([mx.nd.ones((2, 3))]), is_train=False)
    np.testing.assert_array_equal(g.get_outputs()[0].asnumpy(), np.full((2, 2), 1.5))


def test_extra_argument_write_reaches_every_device():
    data = mx.sym.Variable("data")
    out = mx.sym.FullyConnected(data, num_hidden=2, name="fc") + mx.sym.Variable("offset")
    g = DataParallelExecutorGroup(
        out, [mx.cpu(0), mx.cpu(1)], [1, 1], data_shapes=[("data", (2, 3))], label_shapes=None,
        param_names=["fc_weight", "fc_bias"], for_training=False, inputs_need_grad=False,
    )  # fmt: skip
    g.set_params({"fc_weight": mx.nd.zeros((2, 3)), "fc_bias": mx.nd.zeros((2,))}, {})
    g.shared_data_arrays[1]["offset"][:] = 2.0  # one program: one copy for both devices
    g.forward(mx.io.DataBatch([mx.nd.ones((2, 3))]), is_train=False)
    np.testing.assert_array_equal(g.get_outputs()[0].asnumpy(), np.full((2, 2), 2.0))
    np.testing.assert_array_equal(g.shared_data_arrays[0]["offset"].asnumpy(), np.full((1, 2), 2.0))


# ------------------------------------------------------------ PearsonCorrelation
def test_pearsonr_unittest_value_is_mxnets_bit_for_bit():
    pred = mx.nd.array([[0.7, 0.3], [0.1, 0.9], [1.0, 0]])
    label = mx.nd.array([[0, 1], [1, 0], [1, 0]])
    m = mx.metric.create("pearsonr")
    m.update([label], [pred])
    assert m.get()[1] == GOLDEN["pearson"]["unittest"]
    assert m.get()[1] == np.corrcoef(pred.asnumpy().ravel(), label.asnumpy().ravel())[0, 1]


def test_pearsonr_micro_updates_are_mxnets_bit_for_bit():
    m = mx.metric.PearsonCorrelation(average="micro")
    for batch, want in zip(GOLDEN["pearson"]["inputs"], GOLDEN["pearson"]["micro"]):
        m.update([mx.nd.array(lab) for lab, _ in batch], [mx.nd.array(p) for _, p in batch])
        assert [m.get()[1], m.get_global()[1]] == want


def test_pearsonr_macro_updates_are_mxnets():
    """MXNet adds numpy.corrcoef(pred, label)[0, 1] per pair, in float64, in order: exact
    against that rule run here; the golden agrees to rounding (numpy.corrcoef's BLAS dot
    rounds differently in MXNet's numpy 1.23.5 build)."""
    m = mx.metric.PearsonCorrelation()
    total, count = 0.0, 0
    for batch, want in zip(GOLDEN["pearson"]["inputs"], GOLDEN["pearson"]["macro"]):
        m.update([mx.nd.array(lab) for lab, _ in batch], [mx.nd.array(p) for _, p in batch])
        for lab, pred in batch:
            flat = [np.asarray(x, np.float32).ravel().astype(np.float64) for x in (pred, lab)]
            total += np.corrcoef(*flat)[0, 1]
            count += 1
        assert m.get()[1] == m.get_global()[1] == total / count
        np.testing.assert_allclose([m.get()[1], m.get_global()[1]], want, rtol=1e-14)


@pytest.mark.parametrize("average", ["macro", "micro"])
def test_pearsonr_device_form_agrees_in_float32(average):
    host = mx.metric.PearsonCorrelation(average=average)
    dev = mx.metric.PearsonCorrelation(average=average)
    for batch in GOLDEN["pearson"]["inputs"]:
        labels = [mx.nd.array(lab) for lab, _ in batch]
        preds = [mx.nd.array(p) for _, p in batch]
        host.update(labels, preds)
        dev._update_device(labels, preds)
        assert dev.get()[1] == pytest.approx(host.get()[1], rel=1e-5, abs=1e-6)
