"""mx.engine, mx.error, mx.attribute, mx.log, mx.library and mx.rtc as MXNet 1.9.1's."""

import logging

import pytest

import mxmod as mx


def test_engine_bulk_size_is_kept_and_restored():
    first = mx.engine.set_bulk_size(10)
    assert mx.engine.set_bulk_size(3) == 10
    with mx.engine.bulk(7):
        assert mx.engine.set_bulk_size(7) == 7
    assert mx.engine.set_bulk_size(first) == 3
    with pytest.raises(ValueError, match="non-negative integer"):
        mx.engine.set_bulk_size(-1)


def test_error_registry():
    assert issubclass(mx.error.InternalError, mx.MXNetError)
    assert mx.error.error_class("ValueError") is ValueError
    assert mx.error.error_class("NoSuchError") is mx.MXNetError

    @mx.error.register
    class MyError(RuntimeError):
        pass

    assert mx.error.error_class("MyError") is MyError
    mx.error.register_error("Alias", MyError)
    assert mx.error.error_class("Alias") is MyError
    with pytest.raises(TypeError, match="not an exception class"):
        mx.error.register_error("Bad", int)


def test_attribute_scope_is_the_symbol_one():
    with mx.attribute.AttrScope(group="4"):
        v = mx.sym.var("x")
    assert v.attr("group") == "4" and mx.attribute.AttrScope is mx.AttrScope


def test_log_get_logger(tmp_path, capsys):
    path = tmp_path / "run.log"
    log = mx.log.get_logger("mxmod-test-file", filename=str(path), level=logging.INFO)
    log.info("hello %d", 3)
    log.debug("hidden")
    assert mx.log.get_logger("mxmod-test-file") is log and len(log.handlers) == 1
    for h in log.handlers:
        h.flush()
    text = path.read_text()
    assert text.startswith("I") and text.rstrip().endswith("] hello 3") and "hidden" not in text
    assert "test_small_modules.py:test_log_get_logger:" in text
    with pytest.warns(DeprecationWarning, match="get_logger"):
        assert mx.log.getLogger("mxmod-test-file") is log


def test_library_load_says_what_works():
    with pytest.raises(NotImplementedError, match="CustomOp"):
        mx.library.load("libcustom_op.so")


def test_rtc_says_what_to_write_instead():
    with pytest.raises(NotImplementedError, match="mx.rtc.CudaModule: mxmod compiles through XLA"):
        mx.rtc.CudaModule("extern \"C\" __global__ void axpy() {}")


def test_a_missing_opencv_is_named_with_its_install_command(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "cv2", None)  # as if opencv were not installed
    with pytest.raises(ImportError, match="mx.nd.image.resize needs OpenCV: pip install opencv"):
        mx.nd.image.resize(mx.nd.ones((4, 4, 3)), size=2)
    with pytest.raises(ImportError, match="mx.image needs OpenCV"):
        mx.image.imresize(mx.nd.ones((4, 4, 3)), 2, 2)
    with pytest.raises(ImportError, match="mx.recordio.pack_img/unpack_img needs OpenCV"):
        mx.recordio.unpack_img(mx.recordio.pack(mx.recordio.IRHeader(0, 1.0, 0, 0), b"x"))
