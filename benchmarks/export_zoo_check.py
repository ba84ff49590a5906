"""Exports MXNet 1.9.1's Gluon model-zoo checkpoints to ONNX and StableHLO and checks both
against MXNet's own outputs.

For each model, real MXNet (``$MXNET_PYTHON``: the MXNet venv of tests/fixtures/README.md) runs
``tests/fixtures/gen_model_zoo.py`` (random fixed weights and BatchNorm statistics, one
inference forward on a batch of 2, ``export``). mxmod then converts the checkpoint as
``python -m mxmod.tools.export`` does, with a dynamic batch, and reports per format: the
export time, file size / parameter bytes, and ``max|y - mxnet| / max|mxnet|`` at batch 2
(MXNet's golden) and batch 1 / 4 against mxmod's own Module forward.

Run:  python3 benchmarks/export_zoo_check.py [MODEL ...] [--keep DIR]
(default: resnet50_v1 and one model per zoo family). Needs onnx and onnxruntime
(``pip install 'mxmod[onnx]'``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from model_zoo_check import _use_individual_ynn_fusions  # noqa: E402

# before JAX starts: keeps XLA:CPU from one slow YNNPACK fusion (VGG's forward 40 s -> 0.6 s)
XLA_NOTE = _use_individual_ynn_fusions()

import jax  # noqa: E402
import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402

import mxmod as mx  # noqa: E402
from mxmod.module.export import export_stablehlo  # noqa: E402

GEN = os.path.join(HERE, "..", "tests", "fixtures", "gen_model_zoo.py")
MXNET_PY = os.environ.get("MXNET_PYTHON", "")
DEFAULT = ["resnet50_v1", "resnet18_v2", "vgg11_bn", "alexnet", "squeezenet1.1",
           "densenet121", "inceptionv3", "mobilenet1.0", "mobilenetv2_1.0"]  # fmt: skip


def rel(got, want) -> float:
    return float(np.abs(np.asarray(got, "float64") - want).max() / np.abs(want).max())


def mxmod_forward(sym, arg, aux, x):
    mod = mx.mod.Module(sym, label_names=None)
    mod.bind(data_shapes=[("data", x.shape)], for_training=False)
    mod.set_params(arg, aux)
    mod.forward(mx.io.DataBatch([mx.nd.array(x)]), is_train=False)
    return mod.get_outputs()[0].asnumpy()


def check(prefix: str, formats=("onnx", "stablehlo")) -> list:
    sym, arg, aux = mx.model.load_checkpoint(prefix, 0)
    io = np.load(prefix + "-io.npz")
    x2, golden = io["data"], io["output"]
    nbytes = sum(v.asnumpy().nbytes for v in {**arg, **aux}.values())
    shape1 = (1,) + x2.shape[1:]
    rng = np.random.RandomState(0)
    xs = {1: rng.standard_normal(shape1).astype("float32"),
          4: rng.standard_normal((4,) + x2.shape[1:]).astype("float32")}  # fmt: skip
    refs = {b: mxmod_forward(sym, arg, aux, x) for b, x in xs.items()}
    rows = []
    for fmt in formats:
        path = f"{prefix}.{fmt}"
        tic = time.time()
        if fmt == "onnx":
            mx.onnx.export_model(sym, [arg, aux], [shape1], onnx_file_path=path, dynamic=True)
            sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            run = lambda x: sess.run(None, {"data": x})[0]  # noqa: E731
        else:
            export_stablehlo(sym, arg, aux, [("data", shape1)], path, dynamic_batch=True)
            with open(path, "rb") as f:
                exp = jax.export.deserialize(bytearray(f.read()))
            run = lambda x: np.asarray(exp.call(x)[0])  # noqa: E731
        secs = time.time() - tic
        errs = [rel(run(x2), golden)] + [rel(run(xs[b]), refs[b]) for b in (1, 4)]
        rows.append((fmt, secs, os.path.getsize(path) / nbytes, *errs))
        os.remove(path)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="*", default=DEFAULT)
    ap.add_argument("--formats", default="onnx,stablehlo", help="comma-separated")
    ap.add_argument("--keep", default=None, help="folder for MXNet's exports (kept, reused)")
    args = ap.parse_args()
    out = args.keep or tempfile.mkdtemp(prefix="export_zoo_")
    todo = [m for m in args.models if not os.path.exists(os.path.join(out, m + "-io.npz"))]
    if todo and not os.path.exists(MXNET_PY):
        print("set MXNET_PYTHON to a Python with mxnet 1.9.1 (tests/fixtures/README.md)")
        return 1
    res = subprocess.run([MXNET_PY, GEN, out, *todo], capture_output=True, text=True) if todo \
        else None  # fmt: skip
    if res is not None and res.returncode != 0:
        print(res.stdout + res.stderr)
        return 1
    print(XLA_NOTE)
    print(f"{'model':18s} {'format':9s} {'export s':>8s} {'size/params':>11s} "
          f"{'vs MXNet b2':>11s} {'vs mxmod b1':>11s} {'vs mxmod b4':>11s}")  # fmt: skip
    worst = 0.0
    for name in args.models:
        for fmt, secs, ratio, e2, e1, e4 in check(os.path.join(out, name),
                                                  args.formats.split(",")):  # fmt: skip
            worst = max(worst, e2, e1, e4)
            print(f"{name:18s} {fmt:9s} {secs:8.1f} {ratio:11.4f} {e2:11.1e} {e1:11.1e} "
                  f"{e4:11.1e}", flush=True)  # fmt: skip
    print(f"worst relative error {worst:.1e}")
    return 0 if worst <= 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
