"""Module.export (mxmod's addition): StableHLO through jax.export, reloaded with
jax.export.deserialize and run against the module's own forward; ONNX through the same
method; the zoo families (a small one here, all under ``-m slow``); every error."""

import os
import sys

import jax
import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError
from mxmod.module.export import export_stablehlo

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "fixtures"))
import export_cases as ec  # noqa: E402


def small_cnn():
    data = mx.sym.Variable("data")
    x = mx.sym.Convolution(data, kernel=(3, 3), num_filter=8, pad=(1, 1), name="c1")
    x = mx.sym.BatchNorm(x, fix_gamma=False, name="bn1")
    x = mx.sym.Activation(x, act_type="relu", name="r1")
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), name="p1")
    x = mx.sym.FullyConnected(x, num_hidden=10, name="fc")
    return mx.sym.SoftmaxOutput(x, name="softmax")


def bound_module(sym=None, shape=(2, 3, 8, 8)):
    mod = mx.mod.Module(sym or small_cnn())
    mod.bind(data_shapes=[("data", shape)], label_shapes=[("softmax_label", shape[:1])],
             for_training=False)  # fmt: skip
    mod.init_params(mx.init.Xavier())
    arg, aux = mod.get_params()
    aux = {k: mx.nd.array(np.random.RandomState(1).uniform(0.5, 1.5, v.shape))
           for k, v in aux.items()}  # fmt: skip
    mod.set_params(arg, aux)
    return mod


def module_forward(mod, x):
    mod.forward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.zeros(x.shape[:1])]), is_train=False)
    return mod.get_outputs()[0].asnumpy()


@pytest.mark.parametrize("dynamic", [False, True])
def test_module_export_stablehlo_reloads_and_runs(tmp_path, dynamic):
    mod = bound_module()
    x = np.random.RandomState(0).standard_normal((2, 3, 8, 8)).astype("float32")
    want = module_forward(mod, x)
    path = str(tmp_path / "model.stablehlo")
    assert mod.export(path, dynamic_batch=dynamic) == path
    with open(path, "rb") as f:
        exported = jax.export.deserialize(bytearray(f.read()))
    assert set(exported.platforms) == {"cpu", "cuda", "tpu"}
    assert "stablehlo" in exported.mlir_module()
    # float32 convolutions/matmuls stay float32 on GPUs too (TF32 would give ~5e-4 errors)
    assert "precision HIGHEST" in exported.mlir_module()
    (got,) = exported.call(x)
    assert ec.rel_err(np.asarray(got), want) <= 1e-5
    batch_dim = exported.in_avals[0].shape[0]
    if not dynamic:
        assert batch_dim == 2
        return
    assert str(batch_dim) == "batch"
    mod4 = bound_module(shape=(4, 3, 8, 8))
    mod4.set_params(*mod.get_params())
    x4 = np.random.RandomState(4).standard_normal((4, 3, 8, 8)).astype("float32")
    (got4,) = exported.call(x4)
    assert ec.rel_err(np.asarray(got4), module_forward(mod4, x4)) <= 1e-5


def test_module_export_onnx(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    mod = bound_module()
    x = np.random.RandomState(0).standard_normal((2, 3, 8, 8)).astype("float32")
    path = str(tmp_path / "model.onnx")
    mod.export(path, format="onnx", dynamic_batch=True, opset_version=12)
    got = ort.InferenceSession(path).run(None, {"data": x[:1]})[0]
    assert ec.rel_err(got, module_forward(mod, x)[:1]) <= 1e-5


def test_multi_input_multi_output_order(tmp_path):
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    fc = mx.sym.FullyConnected(a, num_hidden=3, name="fc")
    sym = mx.sym.Group([fc + b, mx.sym.relu(b)])
    args, aux = ec.random_params(sym, {"a": (2, 5), "b": (2, 3)})
    data = export_stablehlo(sym, args, aux, [("b", (2, 3)), ("a", (2, 5))])
    xa, xb = np.ones((2, 5), "float32"), np.arange(6, dtype="float32").reshape(2, 3) - 2
    got = jax.export.deserialize(bytearray(data)).call(xb, xa)  # in data_shapes order
    want = ec.mxmod_forward(sym, {"a": xa, "b": xb}, args, aux)
    assert len(got) == 2
    for g, w in zip(got, want):
        assert ec.rel_err(np.asarray(g), w) <= 1e-6


def test_rnn_cell_static_export_and_dynamic_error(tmp_path):
    cell = mx.rnn.GRUCell(5, prefix="g_")
    out, states = cell.unroll(3, mx.sym.Variable("data"), layout="NTC", merge_outputs=True)
    sym = mx.sym.Group([out] + list(states))
    args, aux = ec.random_params(sym, {"data": (2, 3, 4)})
    x = np.random.RandomState(0).standard_normal((2, 3, 4)).astype("float32")
    data = export_stablehlo(sym, args, aux, [("data", (2, 3, 4))], platforms=("cpu",))
    got = jax.export.deserialize(bytearray(data)).call(x)
    for g, w in zip(got, ec.mxmod_forward(sym, {"data": x}, args, aux)):
        assert ec.rel_err(np.asarray(g), w) <= 1e-5
    # mx.rnn's begin states are zeros whose batch dim shape inference fills in
    with pytest.raises(NotImplementedError, match="dynamic_batch=False, once per batch"):
        export_stablehlo(sym, args, aux, [("data", (2, 3, 4))], dynamic_batch=True)


def test_export_errors(tmp_path):
    mod = mx.mod.Module(small_cnn())
    with pytest.raises(MXNetError, match=r"export\(\) needs a module that is bound"):
        mod.export(str(tmp_path / "m"))
    mod.bind(data_shapes=[("data", (2, 3, 8, 8))], for_training=False)
    with pytest.raises(MXNetError, match=r"export\(\) needs .*initialized"):
        mod.export(str(tmp_path / "m"))
    mod.init_params()
    with pytest.raises(ValueError, match=r"format='tflite' is not one of \('stablehlo', 'onnx'\)"):
        mod.export(str(tmp_path / "m"), format="tflite")
    assert not os.path.exists(tmp_path / "m")
    args, _ = mod.get_params()
    with pytest.raises(MXNetError, match=r"aux_params lacks \['bn1_moving_mean'"):
        export_stablehlo(small_cnn(), args, {}, [("data", (2, 3, 8, 8))])


@pytest.mark.parametrize(
    "name", ["mobilenet0.25", pytest.param("mobilenetv2_0.25", marks=pytest.mark.slow)]
)
def test_zoo_small_representative(name):
    sym = ec.load_zoo_symbol(name)
    args, aux = ec.random_params(sym, {"data": (1, 3, 32, 32)})
    data = export_stablehlo(sym, args, aux, [("data", (1, 3, 32, 32))], dynamic_batch=True)
    x = np.random.RandomState(3).standard_normal((3, 3, 32, 32)).astype("float32")
    (got,) = jax.export.deserialize(bytearray(data)).call(x)
    want = ec.mxmod_forward(sym, {"data": x}, args, aux, jit=True)
    assert ec.rel_err(np.asarray(got), want[0]) <= 1e-5


@pytest.mark.slow
@pytest.mark.parametrize("name", ec.ZOO)
def test_zoo_family(name):
    """Every zoo family at its input size, exported once with a dynamic batch, run at
    batch 1 and 4 against mxmod's Module forward."""
    sym = ec.load_zoo_symbol(name)
    args, aux = ec.random_params(sym, {"data": ec.zoo_input_shape(name, 1)})
    data = export_stablehlo(sym, args, aux, [("data", ec.zoo_input_shape(name, 1))],
                            dynamic_batch=True)  # fmt: skip
    exported = jax.export.deserialize(bytearray(data))
    for x, want in ec.zoo_references(sym, args, aux, name):
        (got,) = exported.call(x)
        assert ec.rel_err(np.asarray(got), want) <= 1e-5
