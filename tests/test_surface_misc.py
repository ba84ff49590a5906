"""Small parts of MXNet's Python surface: mx.base.NotImplementedForSymbol, mx.nd.waitall,
mx.context.num_gpus, mx.runtime.Features, mx.util, the mx.gluon and mx.contrib stand-ins."""

import os

import jax
import pytest

import mxmod as mx


def test_not_implemented_for_symbol_message():
    def argsort(*args):
        return args

    err = mx.base.NotImplementedForSymbol(argsort, "_internal._argsort", mx.sym.Variable("x"))
    assert isinstance(err, mx.MXNetError)
    assert str(err) == (
        "Function argsort (namely operator \"_internal._argsort\") with arguments "
        "(<class 'mxmod.symbol.symbol.Symbol'>) is not implemented for Symbol "
        "and only available in NDArray."
    )
    assert str(mx.base.NotImplementedForSymbol(argsort, None)) == (
        "Function argsort is not implemented for Symbol and only available in NDArray."
    )


def test_waitall_and_num_gpus():
    a = mx.nd.ones((3,)) * 2
    mx.nd.waitall()
    assert a.asnumpy().tolist() == [2, 2, 2]
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    assert mx.context.num_gpus() == len(gpus) == mx.util.get_gpu_count()


def test_runtime_features():
    feats = mx.runtime.Features()
    assert feats is mx.runtime.Features()  # one instance per process, as MXNet
    assert list(feats)[:5] == ["CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT"]
    assert feats.is_enabled("cuda") == (mx.context.num_gpus() > 0)
    assert feats.is_enabled("PROFILER") and not feats.is_enabled("MKLDNN")
    assert repr(feats["PROFILER"]) == "✔ PROFILER"
    with pytest.raises(RuntimeError, match="Feature 'FOO' is unknown, known features are"):
        feats.is_enabled("foo")


def test_util_env_and_numpy_switches(monkeypatch):
    monkeypatch.delenv("MXMOD_TEST_ENV", raising=False)
    assert mx.util.getenv("MXMOD_TEST_ENV") is None
    mx.util.setenv("MXMOD_TEST_ENV", "1")
    assert os.environ["MXMOD_TEST_ENV"] == "1" and mx.util.getenv("MXMOD_TEST_ENV") == "1"
    mx.util.setenv("MXMOD_TEST_ENV", None)
    assert "MXMOD_TEST_ENV" not in os.environ
    assert not mx.util.is_np_shape() and not mx.util.is_np_array()
    assert mx.util.set_np_shape(False) is False
    with mx.util.np_shape(False):
        pass
    with pytest.raises(NotImplementedError, match="NumPy semantics"):
        mx.util.set_np()
    with pytest.raises(NotImplementedError, match="np_shape"):
        mx.util.np_shape(True)

    @mx.util.use_np
    def f():
        return 1

    with pytest.raises(NotImplementedError, match="use_np on f"):
        f()
    with pytest.raises(ValueError, match="gpu context"):
        mx.util.get_cuda_compute_capability(mx.cpu())


def test_numpy_switches_are_exported_at_top_level_as_in_mxnet():
    assert not mx.is_np_shape() and not mx.is_np_array()
    assert mx.set_np_shape(False) is False
    with mx.np_shape(False):
        assert not mx.is_np_shape()
    with pytest.raises(NotImplementedError, match="np_shape"):
        mx.np_shape(True)
    assert {"np_shape", "use_np", "is_np_shape"} <= set(dir(mx))


def test_gluon_imports_but_refuses_use():
    from mxmod import gluon
    from mxmod.gluon import nn  # an unused import must load

    with pytest.raises(
        NotImplementedError,
        match="mx.gluon.nn.Dense(..)? is not available in mxmod: Gluon is outside mxmod",
    ):
        nn.Dense(10)

    class Net(gluon.HybridBlock):  # defining a subclass works (MXNet's RBM example)
        pass

    with pytest.raises(NotImplementedError, match=r"Net\(\), a mx.gluon.HybridBlock subclass,"):
        Net()

    with pytest.raises(NotImplementedError, match="mx.mod.Module"):
        gluon.Trainer()
    from mxmod.gluon.data.vision import MNIST  # submodule imports load too
    import mxmod.gluon.model_zoo.vision as vision

    with pytest.raises(NotImplementedError, match="mx.gluon.data.vision.MNIST.. is not"):
        MNIST(train=True)
    with pytest.raises(NotImplementedError, match="mx.gluon.model_zoo.vision.resnet18_v1"):
        vision.resnet18_v1(pretrained=False)


def test_contrib_missing_parts_import_and_name_themselves():
    from mxmod.contrib import onnx, quantization  # noqa: F401

    with pytest.raises(
        NotImplementedError, match=r"mx.contrib.quantization.quantize_model is not available"
    ):
        quantization.quantize_model()
    with pytest.raises(NotImplementedError, match="mx.contrib.onnx.import_to_gluon"):
        onnx.import_to_gluon("model.onnx")
    from mxmod.contrib.io import DataLoaderIter

    with pytest.raises(NotImplementedError, match="io.DataLoaderIter.. is not available"):
        DataLoaderIter()
    from mxmod.contrib.svrg_optimization.svrg_module import SVRGModule  # a real part

    assert SVRGModule.__mro__[1] is mx.mod.Module
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        mx.contrib.nonexistent  # noqa: B018
    with pytest.raises(ImportError, match="mxmod.contrib.nonexistent"):
        import mxmod.contrib.nonexistent  # noqa: F401
    assert mx.contrib.sym is mx.sym.contrib  # real parts are real modules
