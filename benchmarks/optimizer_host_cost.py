"""Host cost per batch of the optimizer calls the Module makes on every step:
``fused_hyper()`` (count the step, evaluate the schedule) and ``fused_signature()`` (the
compile key), for a model with N parameters, as the Module creates the optimizer (names
from ``param_idx2name``, a symbol-less lr/wd multiplier setup).

Run from the repository root (CPU is enough; nothing is compiled)::

    python3 benchmarks/optimizer_host_cost.py [--params 160] [--steps 2000]

To compare with another checkout of mxmod, put it first on ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import time

import jax.numpy as jnp


def measure(name: str, n: int, steps: int, **kwargs) -> float:
    import mxmod as mx

    names = [f"layer{i // 2}_{'weight' if i % 2 == 0 else 'bias'}" for i in range(n)]
    opt = mx.optimizer.create(
        name, param_idx2name=dict(enumerate(names)), rescale_grad=1 / 32, **kwargs
    )
    opt.fused_init({k: jnp.zeros((2,)) for k in names})
    for _ in range(10):  # warm the caches
        opt.fused_hyper()
        opt.fused_signature()
    best = float("inf")
    for _ in range(5):  # best of 5: the machine is shared
        t0 = time.perf_counter()
        for _ in range(steps):
            opt.fused_hyper()
            opt.fused_signature()
        best = min(best, (time.perf_counter() - t0) / steps * 1e6)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", type=int, nargs="+", default=[16, 160, 1600])
    ap.add_argument("--steps", type=int, default=400)
    args = ap.parse_args()
    import mxmod

    print(f"mxmod from {mxmod.__file__}")
    cases = [("sgd", {"momentum": 0.9}), ("adam", {}), ("lars", {"momentum": 0.9}),
             ("nadam", {})]  # fmt: skip
    for name, kw in cases:
        row = [f"{measure(name, n, args.steps, **kw):9.1f}" for n in args.params]
        print(
            f"{name:6s} fused_hyper()+fused_signature(), us/step (best of 5) at "
            f"{'/'.join(map(str, args.params))} params: {' '.join(row)}"
        )


if __name__ == "__main__":
    main()
