"""ImageRecordIter throughput: mxmod against real MXNet 1.9.1, same .rec, same parameters,
in one run (issue 11).

Makes a temporary .rec of 224x224-class JPEGs (shorter edge 256, as im2rec --resize 256
makes for ImageNet), then iterates it with ``rand_crop``, ``rand_mirror`` and mean/std
normalization, ``data_shape=(3, 224, 224)``, ``batch_size=64``, with mxmod and, when it
exists, with MXNet in its own venv (the MXNet venv of tests/fixtures/README.md; or
``--mxnet-python`` / ``$MXNET_PYTHON``). Each side runs one warm-up epoch, then times
``--epochs`` epochs, waiting for every batch's data to be ready; the two alternate
``--repeats`` times and each side's best counts (the CPUs may be shared).

    python3 benchmarks/image_record_iter.py [--images 640] [--epochs 2] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PARAMS = dict(
    data_shape=(3, 224, 224),
    batch_size=64,
    rand_crop=True,
    rand_mirror=True,
    mean_r=123.68,
    mean_g=116.28,
    mean_b=103.53,
    std_r=58.395,
    std_g=57.12,
    std_b=57.375,
    preprocess_threads=4,
    prefetch_buffer=4,
    shuffle=False,
)


def mxnet_python(arg):
    """MXNet's interpreter: the flag, $MXNET_PYTHON, or the venv named in
    tests/fixtures/README.md."""
    if arg:
        return arg
    if os.environ.get("MXNET_PYTHON"):
        return os.environ["MXNET_PYTHON"]
    readme = os.path.join(HERE, "..", "tests", "fixtures", "README.md")
    if os.path.exists(readme):
        m = re.search(r"-m venv (\S+)", open(readme).read())
        if m:
            return os.path.join(m.group(1), "bin", "python")
    return None


def make_rec(path, n, seed=0):
    """``n`` JPEG records (quality 90), shorter edge 256, natural-looking textures."""
    import cv2

    from mxmod import recordio

    rng = np.random.RandomState(seed)
    w = recordio.MXIndexedRecordIO(path[:-4] + ".idx", path, "w")
    total = 0
    for i in range(n):
        long_side = int(rng.randint(256, 342))
        h, wd = (256, long_side) if i % 2 else (long_side, 256)
        low = rng.randint(0, 256, (h // 16 + 1, wd // 16 + 1, 3)).astype(np.uint8)
        img = cv2.resize(low, (wd, h), interpolation=cv2.INTER_CUBIC)
        img = np.clip(img.astype(np.int16) + rng.randint(-20, 20, img.shape), 0, 255)
        s = recordio.pack_img(
            recordio.IRHeader(0, float(i % 10), i, 0), img.astype(np.uint8), quality=90
        )
        total += len(s)
        w.write_idx(i, s)
    w.close()
    return total


def run(framework, rec, epochs, threads=None):
    """Images per second over ``epochs`` timed epochs (after one warm-up epoch)."""
    if framework == "mxnet":
        import mxnet as mx

        def ready(batch):
            batch.data[0].wait_to_read()
    else:
        import mxmod as mx

        def ready(batch):
            batch.data[0]._data.block_until_ready()

    params = dict(PARAMS, preprocess_threads=threads or PARAMS["preprocess_threads"])
    it = mx.io.ImageRecordIter(path_imgrec=rec, **params)
    for batch in it:  # warm-up epoch
        ready(batch)
    it.reset()
    n, t0 = 0, time.perf_counter()
    for _ in range(epochs):
        for batch in it:
            ready(batch)
            n += PARAMS["batch_size"] - batch.pad
        it.reset()
    return n / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=640)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--mxnet-python", default=None)
    ap.add_argument("--worker", choices=["mxnet", "mxmod"], help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--rec", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps({"images_per_s": run(args.worker, args.rec, args.epochs, args.threads)}))
        return
    sys.path.insert(0, os.path.join(HERE, ".."))
    with tempfile.TemporaryDirectory() as tmp:
        rec = os.path.join(tmp, "bench.rec")
        size = make_rec(rec, args.images)
        print(
            f"{args.images} JPEGs, {size / args.images / 1024:.1f} KB each; params {PARAMS}; "
            f"{os.cpu_count()} CPU cores"
        )
        results = {}
        py = mxnet_python(args.mxnet_python)
        # MXNet 1.9.1 decodes on max(cores / 2 - 1, 1) threads whatever preprocess_threads
        # asks (it logs the number); "mxmod-1t" runs mxmod on one thread for a like-for-like
        order = [("mxmod", sys.executable, None), ("mxmod-1t", sys.executable, 1)] + (
            [("mxnet", py, None)] if py and os.path.exists(py) else []
        )
        for rep in range(args.repeats):  # alternate, keep each side's best (shared CPUs)
            for name, exe, threads in order:
                cmd = [
                    exe,
                    os.path.abspath(__file__),
                    "--worker",
                    name.split("-")[0],
                    "--rec",
                    rec,
                    "--epochs",
                    str(args.epochs),
                ]
                out = subprocess.run(
                    cmd + (["--threads", str(threads)] if threads else []),
                    capture_output=True,
                    text=True,
                    cwd=os.path.join(HERE, ".."),
                )
                used = re.search(r"use (\d+) threads for decoding", out.stderr)
                if used:
                    name_shown = f"{name} ({used.group(1)} decode thread(s) reported)"
                else:
                    name_shown = name
                if out.returncode:
                    print(f"{name} failed:\n{out.stderr[-2000:]}")
                    continue
                ips = json.loads(out.stdout.strip().splitlines()[-1])["images_per_s"]
                results[name] = max(results.get(name, 0.0), ips)
                print(f"run {rep}: {name_shown:40s} {ips:8.1f} images/s")
        if "mxnet" in results and "mxmod" in results:
            print(
                f"best: mxmod {results['mxmod']:.1f} ({results['mxmod-1t']:.1f} on one thread), "
                f"mxnet {results['mxnet']:.1f} images/s; ratio mxmod/mxnet: "
                f"{results['mxmod'] / results['mxnet']:.2f}x (one thread each: "
                f"{results['mxmod-1t'] / results['mxnet']:.2f}x)"
            )
        elif "mxnet" not in results:
            print("MXNet venv not found: pass --mxnet-python or set MXNET_PYTHON")


if __name__ == "__main__":
    main()
