"""python -m mxmod.tools.export: a checkpoint to ONNX / StableHLO from the command line."""

import os
import subprocess
import sys

import jax
import numpy as np
import pytest

import mxmod as mx
from mxmod.tools import export as cli

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "fixtures"))
import export_cases as ec  # noqa: E402


@pytest.fixture()
def checkpoint(tmp_path):
    data = mx.sym.Variable("data")
    x = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, name="conv")
    x = mx.sym.BatchNorm(x, name="bn")
    x = mx.sym.FullyConnected(mx.sym.relu(x), num_hidden=5, name="fc")
    sym = mx.sym.SoftmaxOutput(x, name="softmax")
    args, aux = ec.random_params(sym, {"data": (1, 3, 6, 6)})
    prefix = str(tmp_path / "net")
    mx.model.save_checkpoint(prefix, 7, sym, {k: mx.nd.array(v) for k, v in args.items()},
                             {k: mx.nd.array(v) for k, v in aux.items()})  # fmt: skip
    return prefix, sym, args, aux


def test_stablehlo(checkpoint, capsys):
    prefix, sym, args, aux = checkpoint
    assert cli.main([prefix, "7", "--format", "stablehlo", "--shape", "data:1,3,6,6",
                     "--dynamic-batch"]) == 0  # fmt: skip
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"exporting {prefix}-0007 (5 operators, ")
    assert lines[1].startswith(f"wrote {prefix}-0007.stablehlo: 5 operators (5 kinds")
    assert "parameters (" in lines[1] and "% of the parameters)" in lines[1]
    with open(prefix + "-0007.stablehlo", "rb") as f:
        exported = jax.export.deserialize(bytearray(f.read()))
    x = np.random.RandomState(0).standard_normal((3, 3, 6, 6)).astype("float32")
    (got,) = exported.call(x)
    assert ec.rel_err(np.asarray(got), ec.mxmod_forward(sym, {"data": x}, args, aux)[0]) < 1e-5


def test_onnx_as_a_command(checkpoint, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    prefix, sym, args, aux = checkpoint
    out = str(tmp_path / "custom.onnx")
    res = subprocess.run(
        [sys.executable, "-m", "mxmod.tools.export", prefix, "7", "--shape", "data:2,3,6,6",
         "--output", out, "--opset", "12"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert f"wrote {out}: 5 operators" in res.stdout
    x = np.random.RandomState(0).standard_normal((2, 3, 6, 6)).astype("float32")
    got = ort.InferenceSession(out).run(None, {"data": x})[0]
    assert ec.rel_err(got, ec.mxmod_forward(sym, {"data": x}, args, aux)[0]) < 1e-5


@pytest.mark.parametrize("bad", ["data", "data:1,x", "data:0,3", ":1,2"])
def test_bad_shape(checkpoint, capsys, bad):
    with pytest.raises(SystemExit):
        cli.main([checkpoint[0], "7", "--shape", bad])
    assert "expected NAME:D0,D1,... with positive dims" in capsys.readouterr().err


def test_unknown_input_name(checkpoint):
    with pytest.raises(SystemExit, match=r"--shape names \['image'\] are not inputs"):
        cli.main([checkpoint[0], "7", "--shape", "image:1,3,6,6"])
