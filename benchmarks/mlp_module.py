"""Module throughput against hand-written JAX+optax, measured side by side.

The task is ../shared/bench/mlp_jax.py's: a 784-512-512-10 MLP, batch 128, SGD with
momentum 0.9, accuracy counted each batch, 60,000 synthetic samples. Prints samples/s
for the reference, for ``Module.fit`` and for the hand-written
forward/update_metric/backward/update loop, and their ratios (targets: fit >= 1.0,
loop >= 0.9); then, over two host devices, ``fit`` of a Module subclass whose ``update``
goes through ``mx.model._update_params``/``_update_params_on_kvstore`` as user codebases
do, against plain ``fit`` on the same devices (target >= 0.5).

``fit`` places its NDArrayIter on the device (the data is copied once, batches are
gathered there); the reference copies each batch from numpy, as the hand-written loop
does in its first epoch (NDArrayIter places itself on a CPU after a while).

Every line is measured ``--rounds`` times, interleaved, and the median of each round's
ratio is printed, so other work on a shared machine loads every line alike.

Run:  python3 benchmarks/mlp_module.py [--n 60000] [--epochs 3] [--rounds 3] [--ref PATH]
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np

# two host devices for the per-device (_update_params) subclass case
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"
    ).strip()

import mxmod as mx  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_REF = os.path.join(HERE, "..", "..", "shared", "bench", "mlp_jax.py")
# real MXNet 1.9.1: the MXNet venv of tests/fixtures/README.md, named by $MXNET_PYTHON
MXNET_PYTHON = os.environ.get("MXNET_PYTHON", "")


def data(n):
    rng = np.random.RandomState(0)
    x = rng.rand(n, 784).astype("float32")
    w = rng.randn(784, 10).astype("float32")
    return x, (x @ w).argmax(1).astype("float32")


def mlp():
    net = mx.sym.Variable("data")
    net = mx.sym.Activation(mx.sym.FullyConnected(net, num_hidden=512, name="fc1"), act_type="relu")
    net = mx.sym.Activation(mx.sym.FullyConnected(net, num_hidden=512, name="fc2"), act_type="relu")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc3")
    return mx.sym.SoftmaxOutput(net, name="softmax")


class UpdateParamsModule(mx.mod.Module):
    """``update`` as MXNet's own Module writes it, through the model-level helpers."""

    def update(self):
        self._params_dirty = True
        g = self._exec_group
        if self._update_on_kvstore:
            mx.model._update_params_on_kvstore(
                g.param_arrays, g.grad_arrays, self._kvstore, g.param_names
            )
        else:
            mx.model._update_params(
                g.param_arrays,
                g.grad_arrays,
                updater=self._updater,
                num_device=len(self._context),
                kvstore=self._kvstore,
                param_names=g.param_names,
            )


def module(it, cls=None, ctx=None):
    mod = (cls or mx.mod.Module)(mlp(), context=ctx or mx.cpu())
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    return mod


def bench_fit(x, y, batch, epochs, cls=None, ctx=None):
    it = mx.io.NDArrayIter(x, y, batch_size=batch, last_batch_handle="discard")
    mod = module(it, cls, ctx)
    stamps = []
    mod.fit(
        it,
        num_epoch=epochs,
        eval_metric="acc",
        optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
        epoch_end_callback=lambda *a: stamps.append(time.perf_counter()),
    )
    n = (len(x) // batch) * batch
    return n / min(b - a for a, b in zip(stamps, stamps[1:]))


def bench_loop(x, y, batch, epochs):
    it = mx.io.NDArrayIter(x, y, batch_size=batch, last_batch_handle="discard")
    mod = module(it)
    metric = mx.metric.create("acc")
    times = []
    for _ in range(epochs):
        it.reset()
        metric.reset()
        t = time.perf_counter()
        for b in it:
            mod.forward(b, is_train=True)
            mod.update_metric(metric, b.label)
            mod.backward()
            mod.update()
        metric.get()
        times.append(time.perf_counter() - t)
    n = (len(x) // batch) * batch
    return n / min(times[1:])


def bench_ref(path, n, epochs):
    code = (
        f"import runpy,sys; sys.argv=['x']; m=runpy.run_path({path!r}); "
        f"m['main'](n={n}, epochs={epochs})"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(re.search(r"samples/s=(\d+)", out.stdout).group(1))


def bench_mxnet(ref_path, python):
    """Real MXNet 1.9.1's Module.fit on the same task (../shared/bench/mlp_mxnet.py)."""
    script = os.path.join(os.path.dirname(ref_path), "mlp_mxnet.py")
    if not (python and os.path.exists(python) and os.path.exists(script)):
        return None
    out = subprocess.run([python, script], capture_output=True, text=True, check=True)
    return float(re.search(r"samples/s=(\d+)", out.stdout).group(1))


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--n", type=int, default=60000)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--ref", default=DEFAULT_REF)
    p.add_argument(
        "--mxnet-python", default=MXNET_PYTHON, help="python with mxnet 1.9.1; skipped when absent"
    )
    p.add_argument("--rounds", type=int, default=3, help="interleaved repetitions")
    p.add_argument(
        "--one-device",
        action="store_true",
        help="skip the 2-device lines (XLA:CPU's all-reduce can abort on a starved machine)",
    )
    a = p.parse_args()
    if not os.path.exists(a.ref):
        raise SystemExit(f"reference script {a.ref} not found; pass --ref path/to/mlp_jax.py")
    x, y = data(a.n)
    two = [mx.cpu(0), mx.cpu(1)]
    ratios = {"fit": [], "loop": [], "sub": []}
    fit = None
    for r in range(a.rounds):
        ref = bench_ref(a.ref, a.n, a.epochs)
        fit = bench_fit(x, y, a.batch, a.epochs)
        loop = bench_loop(x, y, a.batch, a.epochs)
        ratios["fit"].append(fit / ref)
        ratios["loop"].append(loop / ref)
        line = (
            f"round {r}: jax+optax {ref:.0f}, fit {fit:.0f} ({fit / ref:.2f}), loop {loop:.0f} "
            f"({loop / ref:.2f}) samples/s"
        )
        if not a.one_device:
            fit2 = bench_fit(x, y, a.batch, a.epochs, ctx=two)
            sub2 = bench_fit(x, y, a.batch, a.epochs, cls=UpdateParamsModule, ctx=two)
            ratios["sub"].append(sub2 / fit2)
            line += f"; 2 devices: fit {fit2:.0f}, _update_params subclass {sub2:.0f} "
            line += f"({sub2 / fit2:.2f})"
        print(line, flush=True)
    med = {k: statistics.median(v) for k, v in ratios.items() if v}
    print(f"Module.fit / jax+optax        : median {med['fit']:.2f} (target >= 1.00)")
    print(f"hand-written loop / jax+optax : median {med['loop']:.2f} (target >= 0.90)")
    if "sub" in med:
        print(f"_update_params subclass / fit, 2 devices: median {med['sub']:.2f} (target >= 0.50)")
    mxnet = bench_mxnet(a.ref, a.mxnet_python)
    if mxnet is None:
        print("real MXNet 1.9.1    : skipped (set MXNET_PYTHON or pass --mxnet-python)")
    else:
        print(
            f"real MXNet 1.9.1    : {mxnet:10.0f} samples/s  ratio {mxnet / ref:.2f}; "
            f"Module.fit is {fit / mxnet:.2f}x MXNet"
        )


if __name__ == "__main__":
    main()
