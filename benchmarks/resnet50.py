"""ResNet-50 v1 trained with ``Module.fit`` on synthetic data, on whatever devices are present.

The network is the Gluon model zoo's ``resnet50_v1`` layout written with ``mx.sym``
(``--variant v1``: stride in the first 1x1 conv of a bottleneck, as the model zoo;
``v1.5``: stride in the 3x3 conv, as the Flax reference and MLPerf). Mixed precision goes
through MXNet's API: ``mx.contrib.amp.convert_symbol(sym, 'bfloat16'|'float16')`` and
``multi_precision=True`` SGD (float16 adds dynamic loss scaling: ``amp.insert_loss_scale``
and ``amp.init_trainer(module)``); data are fed in the low-precision type, already on the devices
(one synthetic batch, as the Flax reference). Prints img/s (steady state: the second epoch),
the compile time of the first step, and peak device memory (where the backend reports it).

With ``--flax-ref FILE`` (the hand-written Flax ResNet-50 train step of the project's shared
bench folder, ``resnet50_flax.py``) the reference runs in a child process in the same run,
with the same batch, dtype and step count, and the ratio is printed.

Run on a GPU:  python3 benchmarks/resnet50.py --batch 256 --dtype bfloat16 --flax-ref FILE
               python3 benchmarks/resnet50.py --batch 128 --dtype float32 --flax-ref FILE
Reduced CPU configuration (a smoke run; CPU figures are not the target):
               python3 benchmarks/resnet50.py --batch 4 --image 64 --steps 3
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time

import numpy as np

_STAGES = [(3, 64), (4, 128), (6, 256), (3, 512)]


def resnet50(mx, variant="v1", classes=1000):
    """ResNet-50 v1 (``variant='v1.5'``: stride on the 3x3 conv) as an MXNet symbol."""

    def bn(x, name):
        return mx.sym.BatchNorm(x, name=name, fix_gamma=False, momentum=0.9, eps=1e-5)

    def conv(x, name, filters, kernel, stride=1):
        pad = (kernel // 2, kernel // 2)
        return mx.sym.Convolution(
            x,
            name=name,
            num_filter=filters,
            kernel=(kernel, kernel),
            stride=(stride, stride),
            pad=pad,
            no_bias=True,
        )

    x = mx.sym.Variable("data")
    x = conv(x, "conv0", 64, 7, 2)
    x = mx.sym.Activation(bn(x, "bn0"), act_type="relu", name="relu0")
    x = mx.sym.Pooling(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max", name="pool0")
    for s, (blocks, width) in enumerate(_STAGES):
        for b in range(blocks):
            stride = 2 if s > 0 and b == 0 else 1
            p = f"stage{s + 1}_unit{b + 1}_"
            s1, s3 = (stride, 1) if variant == "v1" else (1, stride)
            y = mx.sym.Activation(
                bn(conv(x, p + "conv1", width, 1, s1), p + "bn1"), act_type="relu"
            )
            y = mx.sym.Activation(
                bn(conv(y, p + "conv2", width, 3, s3), p + "bn2"), act_type="relu"
            )
            y = bn(conv(y, p + "conv3", width * 4, 1), p + "bn3")
            if b == 0:
                x = bn(conv(x, p + "sc", width * 4, 1, stride), p + "sc_bn")
            x = mx.sym.Activation(x + y, act_type="relu")
    x = mx.sym.Pooling(x, global_pool=True, pool_type="avg", kernel=(1, 1), name="gpool")
    x = mx.sym.FullyConnected(mx.sym.Flatten(x), num_hidden=classes, name="fc")
    return mx.sym.SoftmaxOutput(x, name="softmax")


class SyntheticIter:
    """``steps`` copies of one batch that already lives on the devices (a DataIter)."""

    def __init__(self, mx, batch, image, dtype, steps, classes=1000):
        self.mx = mx
        self.batch_size = batch
        self.steps = steps
        shape = (batch, 3, image, image)
        rng = np.random.RandomState(0)
        self.provide_data = [mx.io.DataDesc("data", shape, dtype)]
        self.provide_label = [mx.io.DataDesc("softmax_label", (batch,), "float32")]
        self.data = mx.nd.array(rng.rand(*shape), dtype=dtype)
        self.label = mx.nd.array(rng.randint(0, classes, batch), dtype="float32")
        self.i = 0

    def place_on(self, shardings):
        import jax

        self.data._set_data(jax.device_put(self.data._data, shardings["data"]))
        self.label._set_data(jax.device_put(self.label._data, shardings["softmax_label"]))

    def __iter__(self):
        return self

    def reset(self):
        self.i = 0

    def __next__(self):
        if self.i >= self.steps:
            raise StopIteration
        self.i += 1
        return self.mx.io.DataBatch([self.data], [self.label], pad=0)

    next = __next__


def peak_bytes():
    import jax

    stats = jax.devices()[0].memory_stats() or {}
    return stats.get("peak_bytes_in_use")


def bench_mxmod(a):
    import jax
    import mxmod as mx
    from mxmod.contrib import amp

    sym = resnet50(mx, a.variant)
    if a.dtype != "float32":
        sym = amp.convert_symbol(sym, a.dtype)
    scaled = a.dtype == "float16" and not a.no_loss_scale
    if scaled:
        sym = amp.insert_loss_scale(sym)
    devices = jax.devices()[: a.devices] if a.devices else jax.devices()
    kind = {"gpu": "gpu", "tpu": "tpu"}.get(devices[0].platform, "cpu")
    ctx = [mx.Context(kind, d.id if kind != "cpu" else i) for i, d in enumerate(devices)]
    it = SyntheticIter(mx, a.batch * len(ctx), a.image, a.dtype, a.steps)
    mod = mx.mod.Module(sym, context=ctx, fixed_param_names=["amp_loss_scale"] if scaled else None)
    if scaled:
        mod.bind(it.provide_data, it.provide_label)
        amp.init_trainer(mod)  # dynamic loss scaling inside the compiled steps
    marks = {}

    def first_step(p):
        if p.epoch == 0 and p.nbatch == 0:
            jax.block_until_ready(mod._exec_group.state.params)
            marks["first"] = time.perf_counter()

    def epoch_end(epoch, *_):
        marks[epoch] = time.perf_counter()

    t0 = time.perf_counter()
    mod.fit(
        it,
        num_epoch=2,
        optimizer="sgd",
        initializer=mx.init.Xavier(),
        optimizer_params={
            "learning_rate": 0.1,
            "momentum": 0.9,
            "multi_precision": a.dtype != "float32",
        },
        batch_end_callback=first_step,
        epoch_end_callback=epoch_end,
        steps_per_dispatch=a.steps_per_dispatch,
    )
    ips = a.steps * it.batch_size / (marks[1] - marks[0])
    return ips, marks["first"] - t0, peak_bytes(), [str(d) for d in devices]


def bench_flax(a):
    if not a.flax_ref:
        return None
    if not os.path.exists(a.flax_ref):
        return f"skipped: {a.flax_ref} not found"
    code = (
        "import runpy, sys, jax\n"
        f"sys.argv = [{a.flax_ref!r}, '{a.batch}', '{a.dtype}', '{a.steps}']\n"
        f"runpy.run_path({a.flax_ref!r}, run_name='__main__')\n"
        "s = jax.devices()[0].memory_stats() or {}\n"
        "print('peak_bytes', s.get('peak_bytes_in_use'))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if res.returncode:
        return "failed: " + (res.stderr.strip().splitlines() or ["?"])[-1]
    m = re.search(r"img/s=([\d.]+) compile_s=([\d.]+)", res.stdout)
    peak = re.search(r"peak_bytes (\S+)", res.stdout)
    return float(m.group(1)), float(m.group(2)), peak.group(1) if peak else None


def _mb(b):
    return "n/a" if b in (None, "None") else f"{int(b) / 2**20:.0f} MiB"


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--batch", type=int, default=256, help="per device")
    p.add_argument("--dtype", default="bfloat16", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--image", type=int, default=224)
    p.add_argument("--steps", type=int, default=30, help="steps per epoch (2 epochs run)")
    p.add_argument("--steps-per-dispatch", type=int, default=1)
    p.add_argument("--variant", default="v1", choices=["v1", "v1.5"])
    p.add_argument("--devices", type=int, default=0, help="use the first N devices (0: all)")
    p.add_argument("--flax-ref", default=None, help="path of resnet50_flax.py")
    p.add_argument(
        "--no-loss-scale",
        action="store_true",
        help="float16 without dynamic loss scaling (amp.init_trainer)",
    )
    a = p.parse_args()
    import jax

    ips, comp, peak, devs = bench_mxmod(a)
    print(f"jax {jax.__version__}, devices {devs}")
    print(
        f"mxmod Module.fit resnet50_{a.variant} {a.dtype} batch={a.batch}/device "
        f"image={a.image} steps_per_dispatch={a.steps_per_dispatch}: {ips:.1f} img/s, "
        f"first step (compile) {comp:.1f} s, peak device memory {_mb(peak)}"
    )
    ref = bench_flax(a)
    if isinstance(ref, tuple):
        print(
            f"flax reference (one device, v1.5, 224x224): {ref[0]:.1f} img/s, compile "
            f"{ref[1]:.1f} s, peak {_mb(ref[2])}; ratio mxmod/flax {ips / ref[0]:.2f}, "
            f"compile ratio {comp / ref[1]:.2f}"
        )
    elif ref is not None:
        print(f"flax reference {ref}")


if __name__ == "__main__":
    main()
