"""Time to the first training step of ResNet-50 v1 (issue 24's goal: within 1.5x MXNet).

Real MXNet 1.9.1 (``$MXNET_PYTHON``, the venv of tests/fixtures/README.md) exports the Gluon
model zoo's ``resnet50_v1`` symbol once (random weights, no download); then, each in a fresh
process, MXNet and mxmod load it, add a ``SoftmaxOutput``, bind a ``Module`` at batch 8 on
the CPU, initialise (Xavier, SGD with momentum) and run one ``forward_backward`` +
``update``, then a second; a step ends when its update is done (``mx.nd.waitall()``: MXNet's
engine would otherwise hand back the outputs with backward and update still running). mxmod
runs cold (an empty compilation cache) and warm (the cache the cold run filled). mxmod's
bytecode is compiled first, as an install does.

Run:  MXNET_PYTHON=/path/to/mxnet-venv/bin/python python3 benchmarks/first_step.py
"""

import os
import subprocess
import sys
import tempfile

from short_jobs import compile_bytecode

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


def run(python, args, env=None):
    out = subprocess.run(
        [python, "-c", STEP, *args], capture_output=True, text=True, env=env, check=True
    )
    line = out.stdout.strip().splitlines()[-1]
    text, total = line.split(" | ")
    return text, float(total)


def main():
    mxnet_python = os.environ.get("MXNET_PYTHON", "")
    if not os.path.exists(mxnet_python):
        sys.exit("set MXNET_PYTHON to a Python with mxnet 1.9.1 (tests/fixtures/README.md)")
    work = tempfile.mkdtemp(prefix="first_step_")
    prefix = os.path.join(work, "resnet50_v1")
    subprocess.run([mxnet_python, "-c", EXPORT, prefix], check=True, capture_output=True)
    compile_bytecode(sys.executable)
    cache = os.path.join(work, "cache")
    env = {**os.environ, "MXMOD_CACHE_DIR": cache}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    text, ref = run(mxnet_python, ["mxnet", prefix])
    print(f"MXNet 1.9.1 : {ref:5.1f} s to the first step ({text}); load {os.getloadavg()[0]:.1f}")
    for kind in ("cold", "warm"):
        text, total = run(sys.executable, ["mxmod", prefix], env)
        ratio = total / ref
        print(f"mxmod {kind:5s} : {total:5.1f} s ({ratio:.1f}x MXNet; target <= 1.5x) ({text})")


if __name__ == "__main__":
    main()
