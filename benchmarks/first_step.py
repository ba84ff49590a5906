"""Time to the first training step of ResNet-50 v1 (issue 24's goal: within 1.5x MXNet).

Real MXNet 1.9.1 (``$MXNET_PYTHON``, the venv of tests/fixtures/README.md) exports the Gluon
model zoo's ``resnet50_v1`` symbol once (random weights, no download); then, each in a fresh
process, MXNet and mxmod load it, add a ``SoftmaxOutput``, bind a ``Module`` at batch 8 on
the CPU, initialise (Xavier, SGD with momentum) and run one ``forward_backward`` +
``update``, then a second; a step ends when its update is done (``mx.nd.waitall()``: MXNet's
engine would otherwise hand back the outputs with backward and update still running). mxmod
runs cold (an empty compilation cache) and warm (the cache the cold run filled). mxmod's
bytecode is compiled first, as an install does.

With ``PEERS_PYTHON`` (a Python with flax and optax on the same jax), a hand-written Flax
ResNet-50 v1 (NHWC, the same batch, SGD with momentum, one jitted step) runs the same two
steps cold: what a JAX program written by hand waits for on this machine, under XLA's
defaults and under mxmod's CPU options (``mxmod/xla_options.py``).

Run:  MXNET_PYTHON=/path/to/mxnet-venv/bin/python [PEERS_PYTHON=...] \
          python3 benchmarks/first_step.py [--repeat N]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

from short_jobs import compile_bytecode

from mxmod import xla_options

EXPORT = """
import sys, mxnet as mx
from mxnet.gluon.model_zoo import vision
net = vision.resnet50_v1(pretrained=False)
net.initialize()
net.hybridize()
net(mx.nd.zeros((1, 3, 224, 224)))
net.export(sys.argv[1])
"""

STEP = """
import sys, time
t0 = time.perf_counter()
if sys.argv[1] == "mxnet":
    import mxnet as mx
else:
    import mxmod as mx
import numpy as np
t_imp = time.perf_counter()
sym = mx.sym.SoftmaxOutput(mx.sym.load(sys.argv[2] + "-symbol.json"), name="softmax")
mod = mx.mod.Module(sym, context=mx.cpu())
mod.bind([("data", (8, 3, 224, 224))], [("softmax_label", (8,))])
mod.init_params(mx.init.Xavier())
mod.init_optimizer(optimizer_params={"learning_rate": 0.01, "momentum": 0.9})
rng = np.random.RandomState(0)
b = mx.io.DataBatch([mx.nd.array(rng.rand(8, 3, 224, 224))], [mx.nd.array(np.arange(8))])
t1 = time.perf_counter()
for _ in range(2):
    mod.forward_backward(b)
    mod.update()
    mod.get_outputs()[0].asnumpy()
    mx.nd.waitall()  # the step's backward and update too (MXNet's engine runs them later)
    if _ == 0:
        t2 = time.perf_counter()
t3 = time.perf_counter()
print("import %.1f s, bind+init %.1f s, first step %.1f s, second step %.2f s | %.2f"
      % (t_imp - t0, t1 - t_imp, t2 - t1, t3 - t2, t2 - t0))
"""


FLAX_STEP = """
import sys, time, json
t0 = time.perf_counter()
import functools, jax, jax.numpy as jnp, optax, flax.linen as nn
import numpy as np
t_imp = time.perf_counter()
options = json.loads(sys.argv[1])


class Bottleneck(nn.Module):
    width: int
    stride: int

    @nn.compact
    def __call__(self, x):
        bn = functools.partial(nn.BatchNorm, use_running_average=False, momentum=0.9)
        y = nn.relu(bn()(nn.Conv(self.width, (1, 1), use_bias=False)(x)))
        y = nn.relu(bn()(nn.Conv(self.width, (3, 3), self.stride, use_bias=False)(y)))
        y = bn()(nn.Conv(4 * self.width, (1, 1), use_bias=False)(y))
        if x.shape != y.shape:
            x = bn()(nn.Conv(4 * self.width, (1, 1), self.stride, use_bias=False)(x))
        return nn.relu(x + y)


class ResNet50(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.Conv(64, (7, 7), (2, 2), padding=[(3, 3), (3, 3)], use_bias=False)(x)
        x = nn.relu(nn.BatchNorm(use_running_average=False, momentum=0.9)(x))
        x = nn.max_pool(x, (3, 3), (2, 2), "SAME")
        for stage, blocks in enumerate((3, 4, 6, 3)):
            for b in range(blocks):
                x = Bottleneck(64 * 2**stage, 2 if stage and not b else 1)(x)
        return nn.Dense(1000)(jnp.mean(x, axis=(1, 2)))


model = ResNet50()
rng = np.random.RandomState(0)
x = jnp.asarray(rng.rand(8, 224, 224, 3).astype(np.float32))
y = jnp.arange(8)
v = model.init(jax.random.PRNGKey(0), x[:1])
params, stats = v["params"], v["batch_stats"]
tx = optax.sgd(0.01, momentum=0.9)
opt = tx.init(params)


@functools.partial(jax.jit, donate_argnums=(0, 1, 2), compiler_options=options or None)
def step(params, stats, opt, x, y):
    def loss(p):
        out, new = model.apply({"params": p, "batch_stats": stats}, x, mutable=["batch_stats"])
        return optax.softmax_cross_entropy_with_integer_labels(out, y).mean(), new

    (l, new), g = jax.value_and_grad(loss, has_aux=True)(params)
    upd, opt = tx.update(g, opt, params)
    return optax.apply_updates(params, upd), new["batch_stats"], opt, l


t1 = time.perf_counter()
for i in range(2):
    params, stats, opt, l = step(params, stats, opt, x, y)
    l.block_until_ready()
    if i == 0:
        t2 = time.perf_counter()
t3 = time.perf_counter()
print("import %.1f s, init %.1f s, first step %.1f s, second step %.2f s | %.2f"
      % (t_imp - t0, t1 - t_imp, t2 - t1, t3 - t2, t2 - t0))
"""


def run(python, args, env=None, program=STEP):
    out = subprocess.run(
        [python, "-c", program, *args], capture_output=True, text=True, env=env, check=True
    )
    line = out.stdout.strip().splitlines()[-1]
    text, total = line.split(" | ")
    return text, float(total)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="rounds (MXNet, mxmod cold, mxmod warm, in turn); "
        "each figure is its fastest round, the ratios are of those",
    )
    rounds = max(1, parser.parse_args().repeat)
    mxnet_python = os.environ.get("MXNET_PYTHON", "")
    if not os.path.exists(mxnet_python):
        sys.exit("set MXNET_PYTHON to a Python with mxnet 1.9.1 (tests/fixtures/README.md)")
    work = tempfile.mkdtemp(prefix="first_step_")
    prefix = os.path.join(work, "resnet50_v1")
    subprocess.run([mxnet_python, "-c", EXPORT, prefix], check=True, capture_output=True)
    compile_bytecode(sys.executable)
    best: dict = {}
    for r in range(rounds):
        cache = os.path.join(work, f"cache{r}")  # empty for this round's cold run
        env = {**os.environ, "MXMOD_CACHE_DIR": cache}
        env.pop("JAX_COMPILATION_CACHE_DIR", None)
        runs = [("mxnet", mxnet_python, None)]
        runs += [(kind, sys.executable, env) for kind in ("cold", "warm")]
        for kind, python, run_env in runs:
            text, total = run(python, ["mxnet" if kind == "mxnet" else "mxmod", prefix], run_env)
            if kind not in best or total < best[kind][1]:
                best[kind] = (text, total, os.getloadavg()[0])
    text, ref, load = best["mxnet"]
    fastest = f"fastest of {rounds} rounds; " if rounds > 1 else ""
    print(f"MXNet 1.9.1 : {ref:5.1f} s to the first step ({text}); {fastest}load {load:.1f}")
    for kind in ("cold", "warm"):
        text, total, _ = best[kind]
        ratio = total / ref
        print(f"mxmod {kind:5s} : {total:5.1f} s ({ratio:.1f}x MXNet; target <= 1.5x) ({text})")
    peers = os.environ.get("PEERS_PYTHON", "")
    if peers:
        env = {**os.environ, "JAX_ENABLE_COMPILATION_CACHE": "false"}
        for label, options in (("XLA defaults", {}), ("mxmod's options", xla_options.CPU_OPTIONS)):
            text, total = run(peers, [json.dumps(options)], env, FLAX_STEP)
            print(f"Flax, {label:15s}: {total:5.1f} s ({total / ref:.1f}x MXNet) ({text})")


if __name__ == "__main__":
    main()
