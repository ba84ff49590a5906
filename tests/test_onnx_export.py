"""mx.onnx.export_model: every translation run in onnxruntime against mxmod's own forward,
the zoo families (small ones here, all of them under ``-m slow``), mx.rnn cell graphs,
dynamic batch, opsets 12..17, and every error."""

import os
import sys

import numpy as np
import pytest

import mxmod as mx
from mxmod.onnx.registry import _TRANSLATIONS, MAX_OPSET, MIN_OPSET

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "fixtures"))
import export_cases as ec  # noqa: E402

CASES = ec.op_cases()
TOL = 1e-5


def export_and_run(tmp_path, sym, shapes, kind="normal", opset=None, seed=0, **kw):
    """Export with random params, run in onnxruntime; returns (onnx outputs, mxmod's)."""
    inputs, args, aux = ec.case_values({"sym": sym, "shapes": shapes, "kind": kind}, seed)
    return run_onnx(tmp_path, sym, inputs, args, aux, opset, **kw), ec.mxmod_forward(
        sym, inputs, args, aux
    )


def run_onnx(tmp_path, sym, inputs, args, aux, opset=None, **kw):
    path = str(tmp_path / "model.onnx")
    mx.onnx.export_model(sym, [args, aux], [v.shape for v in inputs.values()],
                         onnx_file_path=path, opset_version=opset, **kw)  # fmt: skip
    return ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, inputs)


def reference(c):
    """A case's values and mxmod's outputs (eager: cheaper than compiling each small graph)."""
    values = ec.case_values(c)
    return values, ec.mxmod_forward(c["sym"], *values)


def assert_same(got, want, tol=TOL):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape, (g.shape, w.shape)
        assert ec.rel_err(g, w) <= tol, ec.rel_err(g, w)


@pytest.mark.parametrize("c", CASES, ids=[c["id"] for c in CASES])
def test_operator_matches_mxmod(tmp_path, c):
    values, want = reference(c)
    got = run_onnx(tmp_path, c["sym"], *values)
    tol = 1e-3 if c["id"] == "Cast" else TOL  # float16 output
    assert_same(got, want, tol)


OPSET_CASES = [c for c in CASES if c["id"] in (
    "softmax_axis1_temp", "log_softmax_axis0", "SliceChannel_squeeze", "squeeze", "expand_dims",
    "sum", "mean_axes", "sum_all", "norm", "LayerNorm", "LayerNorm_axis1", "SoftmaxOutput",
    "SoftmaxOutput_multi", "stack", "L2Normalization", "UpSampling")]  # fmt: skip


@pytest.mark.parametrize("opset", [12, 17])
@pytest.mark.parametrize("c", OPSET_CASES, ids=[c["id"] for c in OPSET_CASES])
def test_operator_other_opsets(tmp_path, c, opset):
    values, want = reference(c)
    if c["id"] == "LayerNorm_axis1" and opset >= 17:
        with pytest.raises(NotImplementedError, match="LayerNorm.*axis=1"):
            run_onnx(tmp_path, c["sym"], *values, opset=opset)
        return
    got = run_onnx(tmp_path, c["sym"], *values, opset=opset)
    assert_same(got, want)
    model = onnx.load(str(tmp_path / "model.onnx"))
    assert model.opset_import[0].version == opset


def test_every_translation_has_a_case():
    covered = set()
    for c in CASES:
        covered.update(n["op"] for n in __import__("json").loads(c["sym"].tojson())["nodes"])
    assert sorted(set(_TRANSLATIONS) - covered) == []


def test_get_operator_support():
    ops = mx.onnx.get_operator_support()
    assert ops == sorted(ops)
    for name in ("Convolution", "BatchNorm", "Pooling", "SoftmaxOutput", "_plus", "split"):
        assert name in ops  # aliases too
    assert "RNN" in ops and "SequenceMask" in ops and "ROIPooling" not in ops
    assert mx.onnx.get_operator_support(12) == ops
    with pytest.raises(NotImplementedError, match="opset_version=11"):
        mx.onnx.get_operator_support(11)
    assert (MIN_OPSET, MAX_OPSET) == (12, 17)


def small_cnn():
    data = mx.sym.Variable("data")
    x = mx.sym.Convolution(data, kernel=(3, 3), num_filter=8, pad=(1, 1), name="c1")
    x = mx.sym.BatchNorm(x, fix_gamma=False, name="bn1")
    x = mx.sym.Activation(x, act_type="relu", name="r1")
    x = mx.sym.Pooling(x, kernel=(3, 3), stride=(2, 2), pooling_convention="full", name="p1")
    x = mx.sym.Dropout(x, name="drop")
    x = mx.sym.FullyConnected(x, num_hidden=10, name="fc")
    return mx.sym.SoftmaxOutput(x, name="softmax")


def test_checkpoint_files_and_names(tmp_path):
    """Paths of a saved checkpoint in, MXNet's naming out (inputs, initializers, outputs)."""
    sym = small_cnn()
    args, aux = ec.random_params(sym, {"data": (2, 3, 9, 9)})
    prefix = str(tmp_path / "cnn")
    mx.model.save_checkpoint(prefix, 3, sym, {k: mx.nd.array(v) for k, v in args.items()},
                             {k: mx.nd.array(v) for k, v in aux.items()})  # fmt: skip
    out = str(tmp_path / "cnn.onnx")
    assert mx.onnx.export_model(prefix + "-symbol.json", prefix + "-0003.params",
                                [(2, 3, 9, 9)], np.float32, out) == out  # fmt: skip
    model = onnx.load(out)
    onnx.checker.check_model(model)
    assert [i.name for i in model.graph.input] == ["data"]  # the label is not an input
    assert [o.name for o in model.graph.output] == ["softmax"]
    assert {i.name for i in model.graph.initializer} == set(args) | set(aux)
    x = np.random.RandomState(3).standard_normal((2, 3, 9, 9)).astype("float32")
    got = ort.InferenceSession(out).run(None, {"data": x})
    assert_same(got, ec.mxmod_forward(sym, {"data": x}, args, aux))
    np.testing.assert_allclose(got[0].sum(axis=1), 1.0, rtol=1e-5)


def test_dynamic_batch(tmp_path):
    sym = small_cnn()
    args, aux = ec.random_params(sym, {"data": (2, 3, 9, 9)})
    out = str(tmp_path / "dyn.onnx")
    mx.onnx.export_model(sym, {**args, **aux}, [(2, 3, 9, 9)], onnx_file_path=out, dynamic=True,
                         run_shape_inference=True)  # fmt: skip
    dims = onnx.load(out).graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "batch" and [d.dim_value for d in dims[1:]] == [3, 9, 9]
    sess = ort.InferenceSession(out)
    for batch in (1, 4):
        x = np.random.RandomState(batch).standard_normal((batch, 3, 9, 9)).astype("float32")
        assert_same(sess.run(None, {"data": x}), ec.mxmod_forward(sym, {"data": x}, args, aux))


def test_dynamic_input_shapes(tmp_path):
    sym = mx.sym.Pooling(mx.sym.Variable("data"), kernel=(1, 1), global_pool=True)
    out = str(tmp_path / "d.onnx")
    mx.onnx.export_model(sym, {}, [(2, 3, 8, 8)], onnx_file_path=out, dynamic=True,
                         dynamic_input_shapes=[(None, 3, None, None)])  # fmt: skip
    dims = onnx.load(out).graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in dims] == ["batch", 3, "data_dim2", "data_dim3"]
    x = np.ones((1, 3, 5, 7), "float32")
    assert ort.InferenceSession(out).run(None, {"data": x})[0].shape == (1, 3, 1, 1)


@pytest.mark.parametrize("name", ["mobilenet0.25", "mobilenetv2_0.25"])
def test_zoo_small_representatives(tmp_path, name):
    """MobileNet v1/v2 from MXNet's zoo (grouped convs, BatchNorm, relu6 clip, residual
    adds, global pooling) at 32x32: exported at batch 1 with a dynamic batch, run at 3."""
    sym = ec.load_zoo_symbol(name)
    args, aux = ec.random_params(sym, {"data": (1, 3, 32, 32)})
    out = str(tmp_path / "zoo.onnx")
    mx.onnx.export_model(sym, [args, aux], [(1, 3, 32, 32)], onnx_file_path=out, dynamic=True)
    sess = ort.InferenceSession(out)
    x = np.random.RandomState(3).standard_normal((3, 3, 32, 32)).astype("float32")
    want = ec.mxmod_forward(sym, {"data": x}, args, aux, jit=True)
    assert_same(sess.run(None, {"data": x}), want)


@pytest.mark.slow
@pytest.mark.parametrize("name", ec.ZOO)
def test_zoo_family(tmp_path, name):
    """Every zoo family at its real input size: batch 1 and 4 through a dynamic export."""
    sym = ec.load_zoo_symbol(name)
    args, aux = ec.random_params(sym, {"data": ec.zoo_input_shape(name, 1)})
    out = str(tmp_path / "zoo.onnx")
    mx.onnx.export_model(sym, [args, aux], [ec.zoo_input_shape(name, 1)], onnx_file_path=out,
                         dynamic=True)  # fmt: skip
    sess = ort.InferenceSession(out)
    for x, want in ec.zoo_references(sym, args, aux, name):
        assert_same(sess.run(None, {"data": x}), [want])


def rnn_cell(kind):
    if kind == "rnn":
        return mx.rnn.RNNCell(6, prefix="r_")
    if kind == "lstm":
        return mx.rnn.LSTMCell(6, prefix="l_")
    if kind == "gru":
        return mx.rnn.GRUCell(6, prefix="g_")
    if kind == "stack_residual":
        cell = mx.rnn.SequentialRNNCell()
        cell.add(mx.rnn.LSTMCell(6, prefix="s0_"))
        cell.add(mx.rnn.ResidualCell(mx.rnn.GRUCell(6, prefix="s1_")))
        cell.add(mx.rnn.DropoutCell(0.3, prefix="s2_"))
        return cell
    if kind == "fused_lstm":  # the RNN operator
        return mx.rnn.FusedRNNCell(4, num_layers=2, mode="lstm", bidirectional=True, prefix="f_")
    return mx.rnn.BidirectionalCell(mx.rnn.LSTMCell(3, prefix="bl_"),
                                    mx.rnn.GRUCell(3, prefix="br_"))  # fmt: skip


@pytest.mark.parametrize("layout", ["NTC", "TNC"])
@pytest.mark.parametrize(
    "kind", ["rnn", "lstm", "gru", "stack_residual", "bidirectional", "fused_lstm"]
)
def test_rnn_cells_unrolled(tmp_path, kind, layout):
    """mx.rnn cells unrolled over 4 steps (zero begin states that follow the dynamic batch),
    merged outputs and the final states, at batch 1 and 3 of one export."""
    cell = rnn_cell(kind)
    outputs, states = cell.unroll(4, mx.sym.Variable("data"), layout=layout, merge_outputs=True)
    flat = [s for group in states for s in (group if isinstance(group, list) else [group])]
    sym = mx.sym.Group([outputs] + flat)
    shape, dyn = ((2, 4, 6), (None, 4, 6)) if layout == "NTC" else ((4, 2, 6), (4, None, 6))
    args, aux = ec.random_params(sym, {"data": shape})
    out = str(tmp_path / "rnn.onnx")
    mx.onnx.export_model(sym, args, [shape], onnx_file_path=out, dynamic=True,
                         dynamic_input_shapes=[dyn])  # fmt: skip
    sess = ort.InferenceSession(out)
    for batch in (1, 3):
        s = (batch, 4, 6) if layout == "NTC" else (4, batch, 6)
        x = np.random.RandomState(batch).standard_normal(s).astype("float32")
        assert_same(sess.run(None, {"data": x}), ec.mxmod_forward(sym, {"data": x}, args, aux))


# -- errors ------------------------------------------------------------------------------
def test_unsupported_operator_names_it_and_writes_nothing(tmp_path):
    data = mx.sym.Variable("data")
    x = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    x = mx.sym.sort(x, name="srt")
    x = mx.sym.gamma(x, name="gm")
    out = tmp_path / "never.onnx"
    with pytest.raises(NotImplementedError) as err:
        mx.onnx.export_model(x, {}, [(2, 3)], onnx_file_path=str(out))
    msg = str(err.value)
    assert "sort (node 'srt')" in msg and "gamma (node 'gm')" in msg
    assert "get_operator_support" in msg
    assert not out.exists()


@pytest.mark.parametrize(
    "sym, node, what",
    [
        (mx.sym.Pooling(mx.sym.Variable("data"), kernel=(2, 2), pooling_convention="same",
                        name="pool"), "pool", "pooling_convention='same'"),
        (mx.sym.Dropout(mx.sym.Variable("data"), mode="always", name="drop"), "drop",
         "mode='always'"),
        (mx.sym.BatchNorm(mx.sym.Variable("data"), output_mean_var=True, name="bn"), "bn",
         "output_mean_var=True"),
        (mx.sym.Pooling(mx.sym.Variable("data"), kernel=(3, 3), stride=(3, 3), pad=(2, 2),
                        pooling_convention="full", name="pf"), "pf",
         "pooling_convention='full' whose last window starts in the padding"),
    ],
)  # fmt: skip
def test_unsupported_option_names_it_and_writes_nothing(tmp_path, sym, node, what):
    out = tmp_path / "never.onnx"
    args, aux = ec.random_params(sym, {"data": (2, 3, 4, 4)})
    with pytest.raises(NotImplementedError, match=f"node '{node}': {what}"):
        mx.onnx.export_model(sym, [args, aux], [(2, 3, 4, 4)], onnx_file_path=str(out))
    assert not out.exists()


def test_without_onnx_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ImportError, match=r"pip install 'mxmod\[onnx\]'"):
        mx.onnx.export_model(small_cnn(), {}, [(1, 3, 9, 9)], str(tmp_path / "m.onnx"))
    assert "Convolution" in mx.onnx.get_operator_support()  # needs no onnx


def test_input_errors(tmp_path):
    sym = small_cnn()
    args, aux = ec.random_params(sym, {"data": (2, 3, 9, 9)})
    out = str(tmp_path / "m.onnx")
    with pytest.raises(ValueError, match=r"in_shapes is required.*\['data'\]"):
        mx.onnx.export_model(sym, [args, aux], onnx_file_path=out)
    with pytest.raises(ValueError, match=r"2 shape\(s\) but the graph has 1 input"):
        mx.onnx.export_model(sym, [args, aux], [(2, 3, 9, 9), (2,)], onnx_file_path=out)
    with pytest.raises(ValueError, match=r"bn1_moving_mean"):  # aux params forgotten
        mx.onnx.export_model(sym, args, [(2, 3, 9, 9)], onnx_file_path=out)
    with pytest.raises(ValueError, match="in_types has 2 type"):
        mx.onnx.export_model(sym, [args, aux], [(2, 3, 9, 9)], [np.float32] * 2, out)
    with pytest.raises(ValueError, match="dynamic_input_shapes needs dynamic=True"):
        mx.onnx.export_model(sym, [args, aux], [(2, 3, 9, 9)], onnx_file_path=out,
                             dynamic_input_shapes=[(None, 3, 9, 9)])  # fmt: skip
    with pytest.raises(ValueError, match=r"dynamic_input_shapes\[0\] \(None, 3\) has 2 dims"):
        mx.onnx.export_model(sym, [args, aux], [(2, 3, 9, 9)], onnx_file_path=out,
                             dynamic=True, dynamic_input_shapes=[(None, 3)])  # fmt: skip
    with pytest.raises(ValueError, match="params must be"):
        mx.onnx.export_model(sym, 3, [(2, 3, 9, 9)], onnx_file_path=out)
    with pytest.raises(ValueError, match="sym must be a Symbol"):
        mx.onnx.export_model(42, {}, [(2, 3, 9, 9)], onnx_file_path=out)
    with pytest.raises(NotImplementedError, match="opset_version=18"):
        mx.onnx.export_model(sym, [args, aux], [(2, 3, 9, 9)], onnx_file_path=out,
                             opset_version=18)  # fmt: skip
    with pytest.raises(NotImplementedError, match="model_specific_logics"):
        mx.onnx.export_model(sym, [args, aux], [(2, 3, 9, 9)], onnx_file_path=out,
                             model_specific_logics="gpt2")  # fmt: skip
    assert not os.path.exists(out)
    # MXNet's old keyword names still work
    mx.onnx.export_model(sym, [args, aux], input_shape=[(2, 3, 9, 9)], input_type=np.float32,
                         onnx_file_path=out)  # fmt: skip
    assert os.path.exists(out)


def test_fix_gamma_leaves_gamma_out(tmp_path):
    sym = mx.sym.BatchNorm(mx.sym.Variable("data"), fix_gamma=True, name="bn")
    got, want = export_and_run(tmp_path, sym, {"data": (2, 3, 4, 4)})
    assert_same(got, want)
    inits = {i.name for i in onnx.load(str(tmp_path / "model.onnx")).graph.initializer}
    assert "bn_gamma" not in inits and {"bn_beta", "bn_moving_var"} <= inits


def test_verbose_logs_each_node(tmp_path, caplog):
    sym = small_cnn()
    args, aux = ec.random_params(sym, {"data": (1, 3, 9, 9)})
    with caplog.at_level("INFO", logger="mxmod.onnx.export"):
        mx.onnx.export_model(sym, [args, aux], [(1, 3, 9, 9)], onnx_file_path=str(tmp_path / "v"),
                             verbose=True)  # fmt: skip
    converted = [r.getMessage() for r in caplog.records if "Converting" in r.getMessage()]
    assert len(converted) == 7 and "op: Convolution, name: c1" in converted[0]


def test_contrib_onnx_path():
    assert mx.contrib.onnx.export_model is mx.onnx.export_model
    assert mx.contrib.onnx.import_model.__module__ == "mxmod.onnx.import_graph"
