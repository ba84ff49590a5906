"""Python calls per training batch, counted with ``sys.setprofile``.

Counts the Python function calls (and the distinct files they run in) one steady-state
batch costs in ``Module.fit`` and in the hand-written imperative loop (``forward``,
``backward``, ``update``, ``update_metric``), over a small MLP on one CPU device. The
profile hook sees every Python-level call (C functions are not counted), so the figure is
the host-side work between dispatches, independent of machine load. Target (issue 22):
fewer than 40 calls of mxmod's own code per ``fit`` batch (98 before it).

Run:  python3 benchmarks/fit_calls.py [--batches 20]
"""

import argparse
import collections
import os
import sys

import numpy as np

import mxmod as mx


def net():
    d = mx.sym.Variable("data")
    h = mx.sym.FullyConnected(d, num_hidden=32, name="fc1")
    h = mx.sym.Activation(h, act_type="relu")
    h = mx.sym.FullyConnected(h, num_hidden=10, name="fc2")
    return mx.sym.SoftmaxOutput(h, name="softmax")


class CallCounter:
    """Counts Python calls while active, with the files they run in (mxmod's only)."""

    def __init__(self):
        self.calls = 0
        self.by_file = collections.Counter()
        self.by_function = collections.Counter()
        self.switches = 0
        self._last = None

    def __call__(self, frame, event, arg):
        if event != "call":
            return
        self.calls += 1
        path = frame.f_code.co_filename
        if "mxmod" + os.sep in path:
            name = path.split("mxmod" + os.sep, 1)[1]
            self.by_file[name] += 1
            self.by_function[f"{name}:{frame.f_code.co_name}"] += 1
            if name != self._last:
                self.switches += 1
            self._last = name
        else:
            self.by_function[f"(other) {os.path.basename(path)}:{frame.f_code.co_name}"] += 1


def count(run_batch, batches):
    counter = CallCounter()
    sys.setprofile(counter)
    try:
        for _ in range(batches):
            run_batch()
    finally:
        sys.setprofile(None)
    return counter


def fit_calls(batches):
    """Calls per batch of ``fit``: the difference between two epochs of different length
    cancels what each epoch costs once (reset, logging, epoch-end metric reads)."""
    rs = np.random.RandomState(0)
    counters = []
    for n in (batches, 2 * batches):
        x = rs.rand(16 * n, 20).astype("f4")
        y = rs.randint(0, 10, 16 * n).astype("f4")
        mod = mx.mod.Module(net(), context=mx.cpu())
        it = mx.io.NDArrayIter(x, y, batch_size=16)
        mod.fit(it, num_epoch=1, optimizer_params={"learning_rate": 0.1})  # compile, warm
        it.reset()
        done = []
        counters.append(
            count(
                lambda it=it, mod=mod: done.append(
                    mod.fit(it, begin_epoch=1, num_epoch=2, optimizer_params={"learning_rate": 0.1})
                ),
                1,
            )
        )
    per_batch = (counters[1].calls - counters[0].calls) / batches
    if VERBOSE:
        diff = counters[1].by_function - counters[0].by_function
        for f, n in diff.most_common(60):
            print(f"  {n / batches:5.1f} {f}")
    files = {
        f: (counters[1].by_file[f] - counters[0].by_file.get(f, 0)) / batches
        for f in counters[1].by_file
    }
    switches = (counters[1].switches - counters[0].switches) / batches
    return per_batch, {f: c for f, c in files.items() if c > 0}, switches


def loop_calls(batches):
    rs = np.random.RandomState(0)
    x = rs.rand(16, 20).astype("f4")
    y = rs.randint(0, 10, 16).astype("f4")
    mod = mx.mod.Module(net(), context=mx.cpu())
    mod.bind([("data", (16, 20))], [("softmax_label", (16,))])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer_params={"learning_rate": 0.1})
    metric = mx.metric.create("acc")
    batch = mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)])

    def step():
        mod.forward(batch, is_train=True)
        mod.backward()
        mod.update()
        mod.update_metric(metric, batch.label)

    step()  # compile
    c = count(step, batches)
    if VERBOSE:
        for f, n in c.by_function.most_common(60):
            print(f"  {n / batches:5.1f} {f}")
    return c.calls / batches, {f: n / batches for f, n in c.by_file.items()}, c.switches / batches


VERBOSE = False


def main():
    global VERBOSE
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--functions", action="store_true", help="calls by function")
    args = ap.parse_args()
    VERBOSE = args.functions
    for name, fn in (("fit", fit_calls), ("imperative loop", loop_calls)):
        calls, files, switches = fn(args.batches)
        own = sum(files.values())
        print(
            f"{name}: {own:.1f} Python calls per batch in mxmod's own code ({calls:.1f} in all, "
            f"jax's and the standard library's included), {len(files)} mxmod files, "
            f"{switches:.1f} switches between files"
        )
        for f, n in sorted(files.items(), key=lambda kv: -kv[1]):
            print(f"    {n:5.1f}  {f}")


if __name__ == "__main__":
    main()
