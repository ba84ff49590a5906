"""mx.model.save_checkpoint / load_checkpoint / load_params (spec 8.4)."""

import logging
import struct
from pathlib import Path

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

ND = Path(__file__).parent / "fixtures" / "nd"


def fc_net():
    return mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")


def fixture_params():
    """The values tests/fixtures/gen_ndarray_files.py checkpointed with real MXNet."""
    return {
        "fc_weight": mx.nd.array(np.arange(6).reshape(3, 2) / 4.0),
        "fc_bias": mx.nd.array([0.5, -0.5, 1.0]),
    }


def test_save_checkpoint_writes_mxnet_bytes_and_logs(tmp_path, caplog):
    prefix = str(tmp_path / "ckpt")
    with caplog.at_level(logging.INFO):
        mx.model.save_checkpoint(prefix, 3, fc_net(), fixture_params(), {})
    assert (tmp_path / "ckpt-symbol.json").read_bytes() == (ND / "ckpt-symbol.json").read_bytes()
    assert (tmp_path / "ckpt-0003.params").read_bytes() == (ND / "ckpt-0003.params").read_bytes()
    assert f'Saved checkpoint to "{prefix}-0003.params"' in caplog.messages
    assert caplog.records[-1].name == "root"


def test_load_checkpoint_reads_mxnet_files():
    sym, arg, aux = mx.model.load_checkpoint(str(ND / "ckpt"), 3)
    assert sym.list_arguments() == ["data", "fc_weight", "fc_bias"]
    assert sym.tojson() == (ND / "ckpt-symbol.json").read_text()
    assert list(arg) == ["fc_weight", "fc_bias"] and aux == {}
    for name, want in fixture_params().items():
        np.testing.assert_array_equal(arg[name].asnumpy(), want.asnumpy())
        assert arg[name].context == mx.cpu(0)


def test_round_trip_with_aux_and_other_context(tmp_path):
    prefix = str(tmp_path / "net")
    arg = {"w": mx.nd.ones((2, 2), ctx=mx.cpu(2))}
    aux = {"bn_moving_mean": mx.nd.array([1.0, 2.0]), "bn_moving_var": mx.nd.array([3.0, 4.0])}
    mx.model.save_checkpoint(prefix, 12, fc_net(), arg, aux)
    raw = (tmp_path / "net-0012.params").read_bytes()
    assert struct.unpack_from("<ii", raw, 24 + 12 + 16) == (1, 0)  # saved as cpu(0), as MXNet
    assert mx.nd.load(prefix + "-0012.params").keys() == {
        "arg:w",
        "aux:bn_moving_mean",
        "aux:bn_moving_var",
    }
    sym, arg2, aux2 = mx.model.load_checkpoint(prefix, 12)
    assert sym.tojson() == fc_net().tojson()
    assert list(arg2) == ["w"] and list(aux2) == ["bn_moving_mean", "bn_moving_var"]
    np.testing.assert_array_equal(aux2["bn_moving_var"].asnumpy(), [3.0, 4.0])
    assert mx.model.load_params(prefix, 12)[1].keys() == aux2.keys()


def test_epoch_padding_and_no_symbol(tmp_path):
    prefix = str(tmp_path / "p")
    mx.model.save_checkpoint(prefix, 0, None, {"a": mx.nd.ones((1,))}, None)
    mx.model.save_checkpoint(prefix, 12345, None, {"a": mx.nd.ones((1,))}, {})
    assert sorted(f.name for f in tmp_path.iterdir()) == ["p-0000.params", "p-12345.params"]
    assert list(mx.model.load_params(prefix, 12345)[0]) == ["a"]


def test_missing_files_name_the_file_and_fix(tmp_path):
    prefix = str(tmp_path / "m")
    with pytest.raises(
        MXNetError,
        match=r"m-0002\.params' does not exist \(no params file "
        r"exists under this prefix\); check the prefix and",
    ):
        mx.model.load_params(prefix, 2)
    mx.model.save_checkpoint(prefix, 1, None, {"a": mx.nd.ones((1,))}, {})
    mx.model.save_checkpoint(prefix, 5, None, {"a": mx.nd.ones((1,))}, {})
    with pytest.raises(MXNetError, match=r"epochs saved under this prefix: 1, 5"):
        mx.model.load_params(prefix, 2)
    with pytest.raises(
        MXNetError,
        match=r"m-symbol\.json' does not exist; check the prefix.*"
        r"load_params\(prefix, epoch\)",
    ):
        mx.model.load_checkpoint(prefix, 1)


def test_load_params_edge_cases(tmp_path, caplog):
    prefix = str(tmp_path / "e")
    fname = prefix + "-0001.params"
    mx.nd.save(fname, {})
    with caplog.at_level(logging.WARNING):
        assert mx.model.load_params(prefix, 1) == ({}, {})
    assert f"Params file '{fname}' is empty" in caplog.messages
    mx.nd.save(
        fname, {"arg:a": mx.nd.ones((1,)), "opt:x": mx.nd.ones((1,)), "aux:b:c": mx.nd.zeros((1,))}
    )
    arg, aux = mx.model.load_params(prefix, 1)
    assert list(arg) == ["a"] and list(aux) == ["b:c"]  # split at the first ':'
    mx.nd.save(fname, [mx.nd.ones((1,))])
    with pytest.raises(MXNetError, match="unnamed list of 1 arrays, not a checkpoint"):
        mx.model.load_params(prefix, 1)
    mx.nd.save(fname, {"dense0_weight": mx.nd.ones((1,))})
    with pytest.raises(ValueError, match="key 'dense0_weight' has no 'arg:'/'aux:' prefix"):
        mx.model.load_params(prefix, 1)
    with pytest.raises(TypeError, match="arg_params must be a dict name -> NDArray, got list"):
        mx.model.save_checkpoint(prefix, 1, None, [mx.nd.ones((1,))], {})


def test_module_package_is_below_model():
    """mxmod.model re-exports the checkpoint helpers of mxmod.module.checkpoint; importing
    the Module classes does not import mxmod.model (layers import downwards)."""
    import subprocess
    import sys

    code = (
        "import sys, mxmod.module; "
        "assert 'mxmod.model' not in sys.modules, sorted(m for m in sys.modules if 'mxmod' in m)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    from mxmod.module import checkpoint

    for name in ("save_checkpoint", "load_checkpoint", "load_params", "BatchEndParam"):
        assert getattr(mx.model, name) is getattr(checkpoint, name)
