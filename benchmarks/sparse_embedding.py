"""A large embedding trained with row_sparse gradients against the same one trained dense.

The model: ``Embedding(data, input_dim=ROWS, output_dim=64)`` (10M x 64 float32 = 2.56 GB
by default) -> ``FullyConnected(1)`` -> ``LinearRegressionOutput``, SGD (lr 0.1), one
fused training step per batch (``executor.programs.Programs.train_step``, the step
``Module`` runs). Each batch reads ``--batch`` random indices (about that many distinct
rows).

* sparse: ``Embedding(sparse_grad=True)``: the gradient is a ``RowParts`` of the rows the
  batch reads, applied lazily (``optimizer_rule(lazy_rows=...)``);
* dense: ``Embedding``: an (N, 64) gradient per step, the whole weight updated.

Each mode runs in its own process and prints its compile time, its median step time, its
peak resident memory (``getrusage`` maxrss, and before the first step) and XLA's
temporary buffer size of the compiled step (``memory_analysis``: the dense gradient shows
there). Run:  python3 benchmarks/sparse_embedding.py [--rows 10000000] [--steps 20]
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _fill(rows: int, dim: int):
    """Deterministic small weights made in one fused XLA loop (no temporaries)."""
    import jax
    import jax.numpy as jnp

    def make():
        i = jax.lax.broadcasted_iota(jnp.float32, (rows, dim), 0)
        j = jax.lax.broadcasted_iota(jnp.float32, (rows, dim), 1)
        return 0.01 * jnp.sin(i * 0.37 + j)

    return jax.jit(make)()


def run_mode(mode: str, rows: int, dim: int, batch: int, steps: int) -> dict:
    import jax
    import jax.numpy as jnp
    import numpy as np

    import mxmod as mx
    from mxmod.executor.executor import compiled_for
    from mxmod.executor.placement import OneDevice
    from mxmod.executor.programs import Programs
    from mxmod.executor.step import SUM, Batch, StepState, optimizer_rule, zero_key

    data, label = mx.sym.var("data"), mx.sym.var("label")
    emb = mx.sym.Embedding(data, input_dim=rows, output_dim=dim, sparse_grad=mode == "sparse",
                           name="emb")  # fmt: skip
    out = mx.sym.FullyConnected(emb, num_hidden=1, name="fc")
    sym = mx.sym.LinearRegressionOutput(out, label, name="lro")
    names = ["emb_weight", "fc_weight", "fc_bias"]
    progs = Programs(compiled_for(sym).graph, OneDevice(jax.devices()[0]),
                     {"data": 0, "label": 0}, [0], names, ["label"])  # fmt: skip
    params = {
        "emb_weight": _fill(rows, dim),  # one 2.56 GB buffer, built on the device
        "fc_weight": jnp.full((1, dim), 0.1, jnp.float32),
        "fc_bias": jnp.zeros((1,), jnp.float32),
    }
    opt = mx.optimizer.SGD(learning_rate=0.1)
    state = StepState(params=params, aux={}, opt=opt.fused_init(params))
    rule = optimizer_rule(opt, lazy_rows=progs.row_sparse)
    step = progs.train_step(("data", "label"), rule)
    rng = np.random.RandomState(0)
    batches = [
        {"data": jnp.asarray(rng.randint(0, rows, batch).astype(np.float32)),
         "label": jnp.asarray(rng.uniform(size=(batch, 1)).astype(np.float32))}
        for _ in range(4)
    ]  # fmt: skip
    jax.block_until_ready((state, batches))
    rss_before = _maxrss_mb()
    hyper = opt.fused_hyper(names)
    temp = None
    try:
        lowered = jax.jit(
            progs._step(("data", "label"), rule, None, (), SUM, None), donate_argnums=(0,)
        ).lower(state, Batch(batches[0], zero_key()), hyper)
        temp = lowered.compile().memory_analysis().temp_size_in_bytes / 2**20
    except Exception as e:  # noqa: BLE001 - a backend without memory analysis
        print(f"memory_analysis unavailable: {e}", file=sys.stderr)
    t0 = time.perf_counter()
    state, _ = step(state, Batch(batches[0], zero_key()), opt.fused_hyper(names))
    jax.block_until_ready(state.params)
    first = time.perf_counter() - t0
    times = []
    for i in range(steps):
        t0 = time.perf_counter()
        state, _ = step(state, Batch(batches[i % 4], zero_key()), opt.fused_hyper(names))
        jax.block_until_ready(state.params)
        times.append(time.perf_counter() - t0)
    return dict(mode=mode, row_sparse=list(progs.row_sparse), first_step_s=round(first, 3),
                step_ms=round(1000 * statistics.median(times), 2),
                maxrss_before_steps_mb=round(rss_before), maxrss_mb=round(_maxrss_mb()),
                step_temp_mb=None if temp is None else round(temp, 1))  # fmt: skip


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--batch", type=int, default=10_000)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--mode", choices=("sparse", "dense"))
    args = p.parse_args()
    if args.mode:
        print(json.dumps(run_mode(args.mode, args.rows, args.dim, args.batch, args.steps)))
        return
    size_gb = args.rows * args.dim * 4 / 1e9
    print(f"embedding {args.rows} x {args.dim} float32 ({size_gb:.2f} GB), batch {args.batch}")
    for mode in ("sparse", "dense"):
        cmd = [sys.executable, __file__, "--mode", mode] + [
            f"--{k}={getattr(args, k)}" for k in ("rows", "dim", "batch", "steps")
        ]
        res = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ))
        line = res.stdout.strip().splitlines()[-1] if res.stdout.strip() else res.stderr[-2000:]
        print(line)


if __name__ == "__main__":
    main()
