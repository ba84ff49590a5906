"""User errors with checkpoint files: symbol files that are not symbols, parameters whose
shapes do not fit the symbol, and the JSON details a load -> save round trip keeps."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

CKPT = Path(__file__).parent / "fixtures" / "checkpoint"


def copy_fixture(tmp_path, name):
    for f in CKPT.glob(f"{name}-*"):
        shutil.copy(f, tmp_path / f.name)
    return str(tmp_path / name)


@pytest.mark.parametrize(
    "text,match",
    [
        ('{"weights": [1, 2]}', "is JSON but not an MXNet symbol: it needs 'nodes' and 'heads'"),
        ("[1, 2, 3]", "is JSON but not an MXNet symbol"),
        (
            '{"nodes": [{"op": "null", "name": "a", "inputs": [[5, 0, 0]]}], "heads": [[0, 0, 0]]}',
            r"nodes\[0\]\.inputs\[0\]\[0\]: node id 5 does not exist",
        ),
        (
            '{"nodes": [{"op": "null", "name": "a", "inputs": []}], "heads": [[3, 0, 0]]}',
            r"heads\[0\]\[0\]: node id 3 does not exist",
        ),
        (
            '{"nodes": [{"op": "NoSuchOp", "name": "a", "inputs": []}], "heads": [[0, 0, 0]]}',
            "unknown operator 'NoSuchOp'",
        ),
        ("nodes: [", "is not valid JSON"),
    ],
)
def test_symbol_file_that_is_not_a_symbol(tmp_path, text, match):
    prefix = copy_fixture(tmp_path, "mlp")
    Path(prefix + "-symbol.json").write_text(text)
    with pytest.raises(MXNetError, match=match) as err:
        mx.model.load_checkpoint(prefix, 0)
    if "unknown operator" not in match:
        assert "mlp-symbol.json" in str(err.value)  # the message names the file


def test_params_file_given_as_symbol(tmp_path):
    path = tmp_path / "x-symbol.json"
    shutil.copy(CKPT / "lenet-0000.params", path)
    with pytest.raises(
        MXNetError,
        match=r"x-symbol\.json' is not a text file; expected an "
        r"MXNet symbol JSON file",
    ):
        mx.sym.load(str(path))


def save_params(prefix, epoch, **changes):
    """Rewrite a fixture checkpoint with some parameters replaced."""
    arg, aux = mx.model.load_params(prefix, 0)
    for key, value in changes.items():
        (aux if key.endswith(("_moving_mean", "_moving_var")) else arg)[key] = mx.nd.array(value)
    mx.model.save_checkpoint(prefix, epoch, None, arg, aux)


def test_params_with_wrong_shape_name_parameter_and_both_shapes(tmp_path):
    prefix = copy_fixture(tmp_path, "mlp")
    save_params(prefix, 1, fc2_weight=np.zeros((8, 15), "f4"))
    mod = mx.mod.Module.load(prefix, 1)
    with pytest.raises(
        MXNetError,
        match=r"parameter 'fc2_weight' has shape \(8, 15\) but the "
        r"symbol needs \(8, 16\)",
    ):
        mod.bind([("data", (4, 10))], [("softmax_label", (4,))])
    sym, arg, aux = mx.model.load_checkpoint(prefix, 1)
    mod = mx.mod.Module(sym)
    mod.bind([("data", (4, 10))], [("softmax_label", (4,))])
    for allow_missing in (False, True):
        with pytest.raises(
            MXNetError,
            match=r"'fc2_weight' has shape \(8, 15\) but the symbol "
            r"needs \(8, 16\)",
        ):
            mod.set_params(arg, aux, allow_missing=allow_missing)


def test_aux_state_with_wrong_shape(tmp_path):
    prefix = copy_fixture(tmp_path, "bn_net")
    save_params(prefix, 2, bn2_moving_var=np.ones((7,), "f4"))
    mod = mx.mod.Module.load(prefix, 2)
    with pytest.raises(
        MXNetError,
        match=r"parameter 'bn2_moving_var' has shape \(7,\) but the "
        r"symbol needs \(6,\)",
    ):
        mod.bind([("data", (5, 7))], [("softmax_label", (5,))])


def test_params_for_other_input_shapes(tmp_path):
    prefix = copy_fixture(tmp_path, "mlp")
    mod = mx.mod.Module.load(prefix, 0)
    with pytest.raises(
        MXNetError,
        match=r"parameter 'fc1_weight' has shape \(16, 10\) but the "
        r"symbol needs \(16, 12\)",
    ):
        mod.bind([("data", (4, 12))], [("softmax_label", (4,))])


def test_missing_and_extra_params(tmp_path):
    prefix = copy_fixture(tmp_path, "mlp")
    arg, aux = mx.model.load_params(prefix, 0)
    del arg["fc3_bias"]
    arg["unused_weight"] = mx.nd.ones((2,))
    mx.model.save_checkpoint(prefix, 3, None, arg, aux)
    sym, arg, aux = mx.model.load_checkpoint(prefix, 3)
    mod = mx.mod.Module(sym)
    mod.bind([("data", (4, 10))], [("softmax_label", (4,))])
    with pytest.raises(RuntimeError, match="fc3_bias is not presented"):
        mod.set_params(arg, aux)
    with pytest.raises(
        ValueError,
        match='Find name "unused_weight" that is not in the arguments; pass allow_extra=True',
    ):
        mod.set_params(arg, aux, allow_missing=True)
    mod.set_params(arg, aux, allow_missing=True, allow_extra=True)


def test_loaded_input_versions_survive_a_round_trip():
    """Gluon exports write aux inputs with version 2; MXNet keeps them on load -> save."""
    text = (CKPT / "bn_net-symbol.json").read_text()
    data = json.loads(text)
    bumped = text.replace(", 0, 1]", ", 0, 2]")
    assert bumped != text
    assert mx.sym.load_json(bumped).tojson() == bumped
    assert mx.sym.load_json(text).tojson() == text
    rebuilt = mx.sym.load_json(bumped)
    fresh = mx.sym.BatchNorm(rebuilt, name="bn3")  # new ops still count from 1
    last = json.loads(fresh.tojson())["nodes"][-1]
    assert [e[2] for e in last["inputs"]] == [0, 0, 0, 1, 1]
    assert len(data["nodes"]) + 5 == len(json.loads(fresh.tojson())["nodes"])
