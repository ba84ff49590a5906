"""dist_sync throughput: 1 process x 4 devices against 2 processes x 2 devices.

The same MLP (784-512-512-10, SGD momentum 0.9, accuracy each batch) and the same global
batch (256 = 4 devices x 64) trained with ``Module.fit``: once in one process over 4
simulated CPU devices (kvstore ``'device'``), once as 2 worker processes of a ``dist_sync``
job started by ``python -m mxmod.launch`` (2 devices each, loopback gloo all-reduce).
Prints samples/s of each (epochs after the first, which compiles) and their ratio. On a
machine with few cores the simulated devices share them, so read the ratio as the cost of
the cross-process all-reduce and the per-batch step agreement, not as scaling.

Run:  python3 benchmarks/dist_throughput.py [--n 16384] [--epochs 3]
"""

import argparse
import os
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
GLOBAL_BATCH = 256


def mlp(mx):
    net = mx.sym.Variable("data")
    for i in (1, 2):
        net = mx.sym.FullyConnected(net, num_hidden=512, name=f"fc{i}")
        net = mx.sym.Activation(net, act_type="relu")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc3")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def worker(n: int, epochs: int, devices: int) -> None:
    import mxmod as mx

    kv = mx.kv.create("dist_sync") if "DMLC_ROLE" in os.environ else "device"
    rank, workers = (kv.rank, kv.num_workers) if not isinstance(kv, str) else (0, 1)
    rng = np.random.RandomState(0)
    x = rng.rand(n, 784).astype("float32")
    y = (x @ rng.randn(784, 10).astype("float32")).argmax(1).astype("float32")
    part = slice(rank * n // workers, (rank + 1) * n // workers)  # this worker's share
    it = mx.io.NDArrayIter(x[part], y[part], batch_size=GLOBAL_BATCH // workers)
    times = []
    mod = mx.mod.Module(mlp(mx), context=[mx.cpu(i) for i in range(devices)])
    mod.fit(
        it,
        num_epoch=epochs,
        kvstore=kv,
        optimizer="sgd",
        optimizer_params={"learning_rate": 0.05, "momentum": 0.9},
        epoch_end_callback=lambda *a: times.append(time.perf_counter()),
    )
    rate = (epochs - 1) * n / (times[-1] - times[0])
    if rank == 0:
        print(f"SAMPLES_PER_S={rate:.1f}", flush=True)


def run(cmd, devices):
    env = dict(
        os.environ,
        JAX_PLATFORMS="cpu",
        PYTHONPATH=ROOT,
        XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
    )
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1200, check=False)
    found = re.search(r"SAMPLES_PER_S=([\d.]+)", out.stdout)
    if out.returncode != 0 or not found:
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
    return float(found.group(1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=16384)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.epochs < 2:
        sys.exit("--epochs must be at least 2 (the first compiles)")
    if args.worker is not None:
        worker(args.n, args.epochs, args.worker)
        return
    me = [
        sys.executable,
        os.path.abspath(__file__),
        "--n",
        str(args.n),
        "--epochs",
        str(args.epochs),
    ]
    one = run(me + ["--worker", "4"], 4)
    two = run(
        [sys.executable, "-m", "mxmod.launch", "-n", "2", "--cpu-devices", "2"]
        + me
        + ["--worker", "2"],
        2,
    )
    print(
        f"MLP 784-512-512-10, global batch {GLOBAL_BATCH}, {args.n} samples, "
        f"{args.epochs - 1} timed epochs, {os.cpu_count()} CPU cores"
    )
    print(f"1 process  x 4 devices: {one:10.1f} samples/s")
    print(f"2 processes x 2 devices: {two:10.1f} samples/s  (ratio {two / one:.2f})")


if __name__ == "__main__":
    main()
