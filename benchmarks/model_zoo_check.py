"""Runs MXNet 1.9.1's Gluon vision model zoo through mxmod's Module and compares outputs.

For every model, real MXNet (``$MXNET_PYTHON``: the MXNet venv of tests/fixtures/README.md,
no network) runs
``tests/fixtures/gen_model_zoo.py``: random but fixed weights (``pretrained=False``, seeded),
random BatchNorm statistics, ``hybridize()``, one forward on a fixed random batch of 2
(3x224x224; 3x299x299 for Inception v3) and ``export(prefix)``. mxmod then does what an
MXNet user would do with those files::

    sym, arg, aux = mx.model.load_checkpoint(prefix, 0)
    mod = mx.mod.Module(sym, data_names=['data'], label_names=None)
    mod.bind(data_shapes=[('data', x.shape)], for_training=False)
    mod.set_params(arg, aux)
    mod.forward(mx.io.DataBatch([x]), is_train=False)

and reports, per model, ``max|mxmod - mxnet| / max|mxnet|`` (target <= 1e-4), the output
scale, whether ``sym.tojson()`` reproduces MXNet's symbol file byte for byte, and the time
mxmod took (load + compile + forward). The exported files go to a temporary folder (several
GB for the whole zoo) and each model's files are deleted once checked, unless ``--keep``.
Generation runs concurrently with checking.

Run:  python3 benchmarks/model_zoo_check.py [MODEL ...] [--tol 1e-4] [--keep DIR]
      python3 benchmarks/model_zoo_check.py --list
The whole zoo takes about 10 minutes on 2 CPU cores. Exits 1 if a model fails or exceeds
the tolerance. By default ``XLA_FLAGS`` gets a flag that keeps jax 0.10's CPU backend from
fusing dot chains into one slow YNNPACK kernel (VGG: 40 s -> 0.6 s per forward); pass
``--xla-default`` to measure without it.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(HERE, "..", "tests", "fixtures", "gen_model_zoo.py")
MXNET_PY = os.environ.get("MXNET_PYTHON", "")
MODELS = [
    "resnet18_v1",
    "resnet34_v1",
    "resnet50_v1",
    "resnet101_v1",
    "resnet152_v1",
    "resnet18_v2",
    "resnet34_v2",
    "resnet50_v2",
    "resnet101_v2",
    "resnet152_v2",
    "vgg11",
    "vgg13",
    "vgg16",
    "vgg19",
    "vgg11_bn",
    "vgg13_bn",
    "vgg16_bn",
    "vgg19_bn",
    "alexnet",
    "squeezenet1.0",
    "squeezenet1.1",
    "densenet121",
    "densenet161",
    "densenet169",
    "densenet201",
    "inceptionv3",
    "mobilenet1.0",
    "mobilenet0.75",
    "mobilenet0.5",
    "mobilenet0.25",
    "mobilenetv2_1.0",
    "mobilenetv2_0.75",
    "mobilenetv2_0.5",
    "mobilenetv2_0.25",
]


def check_model(prefix: str) -> dict:
    """Load ``prefix``'s MXNet export into an mxmod Module and compare with MXNet's output.

    Returns a dict with ``rel_err`` (max abs error over max abs reference), ``scale``
    (max abs reference), ``json_same`` (``tojson()`` equals the file) and ``seconds``.
    """
    import mxmod as mx

    tic = time.time()
    with np.load(prefix + "-io.npz") as io:
        x, ref = io["data"], io["output"]
    sym, arg, aux = mx.model.load_checkpoint(prefix, 0)
    with open(prefix + "-symbol.json", encoding="utf-8") as f:
        json_same = sym.tojson() == f.read()
    mod = mx.mod.Module(sym, data_names=["data"], label_names=None)
    mod.bind(data_shapes=[("data", x.shape)], for_training=False)
    mod.set_params(arg, aux)
    mod.forward(mx.io.DataBatch([mx.nd.array(x)]), is_train=False)
    out = mod.get_outputs()[0].asnumpy()
    if out.shape != ref.shape:
        raise AssertionError(f"output shape {out.shape} != MXNet's {ref.shape}")
    scale = float(np.abs(ref).max())
    return {
        "rel_err": float(np.abs(out - ref).max()) / max(scale, 1e-30),
        "scale": scale,
        "json_same": json_same,
        "seconds": time.time() - tic,
    }


def generate(out_dir: str, models: list[str], mxnet_py: str = MXNET_PY) -> subprocess.Popen:
    """Start the MXNet exporter; it prints ``ok <name> <s>`` / ``FAIL <name> ...`` lines."""
    return subprocess.Popen(
        [mxnet_py, GEN, out_dir, *models],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    )


def _remove(prefix: str) -> None:
    for path in glob.glob(glob.escape(prefix) + "-*"):
        os.remove(path)


def run(models: list[str], tol: float, keep: str | None, mxnet_py: str) -> int:
    out_dir = keep or tempfile.mkdtemp(prefix="mxmod_zoo_")
    os.makedirs(out_dir, exist_ok=True)
    print(f"{'model':<18} {'rel. max err':>12} {'scale':>9} {'json==':>6} {'mxmod s':>8}  status")
    rows, bad = {}, 0
    proc = generate(out_dir, models, mxnet_py)
    try:
        for line in proc.stdout:
            parts = line.split()
            if not parts or parts[0] not in ("ok", "FAIL") or len(parts) < 2:
                print("  mxnet:", line.rstrip(), flush=True)
                continue
            name = parts[1]
            if parts[0] == "FAIL":
                bad += 1
                rows[name] = None
                print(f"{name:<18} MXNet export failed: {line.rstrip()}", flush=True)
                continue
            prefix = os.path.join(out_dir, name)
            try:
                r = check_model(prefix)
            except Exception as e:  # report every model, keep going
                bad += 1
                rows[name] = None
                print(
                    f"{name:<18} {'-':>12} {'-':>9} {'-':>6} {'-':>8}  ERROR "
                    f"{type(e).__name__}: {str(e)[:300]}",
                    flush=True,
                )
            else:
                rows[name] = r
                ok = r["rel_err"] <= tol
                bad += not ok
                print(
                    f"{name:<18} {r['rel_err']:>12.2e} {r['scale']:>9.3g} "
                    f"{str(r['json_same']):>6} {r['seconds']:>8.1f}  "
                    f"{'ok' if ok else 'OVER TOLERANCE'}",
                    flush=True,
                )
            if not keep:
                _remove(prefix)
    finally:
        proc.wait()
        if not keep:
            shutil.rmtree(out_dir, ignore_errors=True)
    missing = [m for m in models if m not in rows]
    for name in missing:
        print(f"{name:<18} not exported (see the MXNet output above)")
    bad += len(missing)
    errs = [r["rel_err"] for r in rows.values() if r]
    worst = f"{max(errs):.2e}" if errs else "n/a"
    print(f"{len(models) - bad}/{len(models)} models within {tol:g} (worst {worst})")
    return 1 if bad else 0


YNN_FLAG = "--xla_cpu_experimental_ynn_fusion_type=individual_dot,individual_convolution"


def _use_individual_ynn_fusions() -> str:
    """Avoid an XLA:CPU slowdown, unless the user set ``XLA_FLAGS`` for it already.

    jax 0.10's CPU backend fuses chains such as pool -> dot -> relu -> dot into one YNNPACK
    fusion that runs VGG's classifier ~50x slower (40 s instead of 0.6 s per forward; ResNet-50
    ~3.5x). Limiting YNNPACK to single dots/convolutions avoids it; results are unchanged. The
    flag is experimental, so it is only set when this jaxlib accepts it.
    """
    flags = os.environ.get("XLA_FLAGS", "")
    if "ynn_fusion_type" in flags or "jax" in sys.modules:
        return "XLA_FLAGS left as given"
    env = dict(os.environ, XLA_FLAGS=f"{flags} {YNN_FLAG}".strip())
    probe = subprocess.run(
        [sys.executable, "-c", "import jax; jax.devices()"],
        env=env,
        capture_output=True,
        timeout=120,
    )
    if probe.returncode != 0:
        return "XLA_FLAGS unchanged (this jaxlib does not know the YNNPACK flag)"
    os.environ["XLA_FLAGS"] = env["XLA_FLAGS"]
    return f"XLA_FLAGS += {YNN_FLAG} (see --xla-default)"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="*", help="model names (default: the whole zoo)")
    ap.add_argument("--tol", type=float, default=1e-4, help="max relative error (1e-4)")
    ap.add_argument("--keep", metavar="DIR", help="export into DIR and keep the files")
    ap.add_argument("--mxnet-python", default=MXNET_PY, help=f"MXNet's python ({MXNET_PY})")
    ap.add_argument("--list", action="store_true", help="print the model names and exit")
    ap.add_argument(
        "--xla-default",
        action="store_true",
        help="keep XLA's default CPU fusions (VGG then takes ~90 s per model)",
    )
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(MODELS))
        return 0
    unknown = [m for m in args.models if m not in MODELS]
    if unknown:
        ap.error(f"unknown model(s) {unknown}; see --list")
    if not os.path.exists(args.mxnet_python):
        ap.error(f"real MXNet is needed at {args.mxnet_python} (see tests/fixtures/README.md)")
    if not args.xla_default:
        print(_use_individual_ynn_fusions())
    return run(args.models or MODELS, args.tol, args.keep, args.mxnet_python)


if __name__ == "__main__":
    sys.exit(main())
