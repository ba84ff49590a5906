"""Dispatch-bound training: where host work per batch is everything.

A 64-64-64-10 MLP (8x8 digit-sized inputs), batch 32, SGD with momentum 0.9, accuracy
counted every batch, on the default JAX device (the GPU on a GPU machine). Measured
side by side in one run:

* a hand-written jitted JAX+optax step over batches already on the device (the limit);
* ``Module.fit`` over an ``NDArrayIter`` (target >= 0.4x the limit);
* the hand-written Module loop (forward / update_metric / backward / update);
* ``Module.fit(steps_per_dispatch=N)``: N batches per compiled ``lax.scan`` (target >= 0.9x);
* Keras 3's ``fit`` on the JAX backend, when keras is installed.

``fit`` places the NDArrayIter on the device (``place_on``): the data is copied once and
each batch is gathered there. The hand-written loop never binds the iterator to the
Module, so its batches are copied from the host each time, as in MXNet.

Each line is measured ``--rounds`` times, interleaved (jax, fit, loop, ... then again), so
a machine shared with other work loads every line alike; printed are the median ratios to
the JAX line of the same round, by wall time and by CPU time of this process (all threads).

Steady state is what is measured (each line's fastest epoch), so mxmod compiles as
``MXMOD_COMPILE=sync`` here unless the environment says otherwise: by default (``tiered``)
a light program starts on a quick build and switches to the optimised one after up to 50
calls and a background compile, later than this benchmark's 0.1 s epochs end (the whole
run is then shorter, its fastest epoch slower).

Run:  python3 benchmarks/mlp_dispatch.py [--n 32768] [--epochs 3] [--rounds 3]
      python3 benchmarks/mlp_dispatch.py --sizes 784,512,10 --batch 128  (the wider MLP)
"""

import argparse
import os
import statistics
import time

import numpy as np

os.environ.setdefault("MXMOD_COMPILE", "sync")  # steady state (see above)
D, H, C = 64, 64, 10


def _now():
    return time.perf_counter(), time.process_time()


def _best_rate(samples, stamps):
    """(samples/s, samples per CPU-s) of the fastest interval between ``stamps``."""
    wall = min(b[0] - a[0] for a, b in zip(stamps, stamps[1:]))
    cpu = min(b[1] - a[1] for a, b in zip(stamps, stamps[1:]))
    return samples / wall, samples / max(cpu, 1e-9)


def data(n):
    rng = np.random.RandomState(0)
    x = rng.rand(n, D).astype("float32")
    w = rng.randn(D, C).astype("float32")
    return x, (x @ w).argmax(1).astype("float32")


def bench_jax(x, y, batch, epochs):
    import jax
    import jax.numpy as jnp
    import optax

    key = jax.random.PRNGKey(0)
    sizes = (D, H, H, C)
    ps = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        key, k = jax.random.split(key)
        lim = np.sqrt(6.0 / (a + b))
        ps.append((jax.random.uniform(k, (a, b), minval=-lim, maxval=lim), jnp.zeros(b)))
    tx = optax.sgd(0.1, momentum=0.9)
    st = tx.init(ps)

    def apply(ps, x):
        for w, b in ps[:-1]:
            x = jax.nn.relu(x @ w + b)
        w, b = ps[-1]
        return x @ w + b

    @jax.jit
    def step(ps, st, x, y, correct):
        def loss(ps):
            lo = apply(ps, x)
            return optax.softmax_cross_entropy_with_integer_labels(lo, y).mean(), lo

        (_, lo), g = jax.value_and_grad(loss, has_aux=True)(ps)
        up, st = tx.update(g, st, ps)
        return optax.apply_updates(ps, up), st, correct + (lo.argmax(1) == y).sum()

    nb = len(x) // batch
    xs = [jax.device_put(x[i * batch : (i + 1) * batch]) for i in range(nb)]
    ys = [jax.device_put(y[i * batch : (i + 1) * batch].astype("int32")) for i in range(nb)]
    stamps = []
    for _ in range(epochs):
        correct = jnp.zeros((), jnp.int32)
        for xb, yb in zip(xs, ys):
            ps, st, correct = step(ps, st, xb, yb, correct)
        correct.block_until_ready()
        stamps.append(_now())
    return _best_rate(nb * batch, stamps)


def mlp(mx):
    net = mx.sym.Variable("data")
    for i in (1, 2):
        net = mx.sym.Activation(
            mx.sym.FullyConnected(net, num_hidden=H, name=f"fc{i}"), act_type="relu"
        )
    net = mx.sym.FullyConnected(net, num_hidden=C, name="fc3")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def _context(mx):
    """The JAX default device as an mxmod context (the GPU on a GPU machine, as the JAX loop)."""
    import jax

    return mx.gpu(0) if jax.default_backend() == "gpu" else mx.cpu()


def bench_fit(x, y, batch, epochs, steps=1):
    import mxmod as mx

    it = mx.io.NDArrayIter(x, y, batch_size=batch, last_batch_handle="discard")
    mod = mx.mod.Module(mlp(mx), context=_context(mx))
    stamps = []
    mod.fit(
        it,
        num_epoch=epochs,
        eval_metric="acc",
        initializer=mx.init.Xavier(),
        optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
        epoch_end_callback=lambda *a: stamps.append(_now()),
        steps_per_dispatch=steps,
    )
    return _best_rate((len(x) // batch) * batch, stamps)


def bench_loop(x, y, batch, epochs):
    import mxmod as mx

    it = mx.io.NDArrayIter(x, y, batch_size=batch, last_batch_handle="discard")
    mod = mx.mod.Module(mlp(mx), context=_context(mx))
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    metric = mx.metric.create("acc")
    stamps = []
    for _ in range(epochs):
        it.reset()
        metric.reset()
        for b in it:
            mod.forward(b, is_train=True)
            mod.update_metric(metric, b.label)
            mod.backward()
            mod.update()
        metric.get()
        stamps.append(_now())
    return _best_rate((len(x) // batch) * batch, stamps)


def bench_keras(x, y, batch, epochs):
    os.environ.setdefault("KERAS_BACKEND", "jax")
    try:
        import keras
    except ImportError:
        return None
    model = keras.Sequential(
        [
            keras.Input((D,)),
            keras.layers.Dense(H, activation="relu"),
            keras.layers.Dense(H, activation="relu"),
            keras.layers.Dense(C),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.SGD(0.1, momentum=0.9),
        metrics=["accuracy"],
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    stamps = []
    cb = keras.callbacks.LambdaCallback(on_epoch_end=lambda *a: stamps.append(_now()))
    model.fit(
        x,
        y.astype("int32"),
        batch_size=batch,
        epochs=epochs,
        verbose=0,
        shuffle=False,
        callbacks=[cb],
    )
    return _best_rate((len(x) // batch) * batch, stamps)


def main():
    global D, H, C
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--n", type=int, default=32768)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument(
        "--steps-per-dispatch",
        type=int,
        default=16,
        help="the fit(steps_per_dispatch=...) line (lax.scan blocks)",
    )
    p.add_argument("--rounds", type=int, default=3, help="interleaved repetitions")
    p.add_argument("--sizes", default=f"{D},{H},{C}", help="inputs,hidden,classes of the MLP")
    a = p.parse_args()
    D, H, C = (int(v) for v in a.sizes.split(","))
    x, y = data(a.n)
    spd = a.steps_per_dispatch
    lines = {
        "Module.fit": (lambda: bench_fit(x, y, a.batch, a.epochs), 0.40),
        "Module loop": (lambda: bench_loop(x, y, a.batch, a.epochs), None),
        f"Module.fit steps_per_dispatch={spd}": (
            lambda: bench_fit(x, y, a.batch, a.epochs, spd),
            0.90,
        ),
        "keras 3 fit (jax)": (lambda: bench_keras(x, y, a.batch, a.epochs), None),
    }
    refs, ratios = [], {name: ([], []) for name in lines}
    for r in range(a.rounds):
        ref = bench_jax(x, y, a.batch, a.epochs)
        refs.append(ref[0])
        for name, (run, _) in lines.items():
            got = run()
            if got is None:
                continue
            ratios[name][0].append(got[0] / ref[0])
            ratios[name][1].append(got[1] / ref[1])
            print(
                f"round {r}: {name}: {got[0]:.0f} samples/s, wall ratio "
                f"{got[0] / ref[0]:.2f}, CPU ratio {got[1] / ref[1]:.2f}",
                flush=True,
            )
    med = statistics.median
    print(f"MXMOD_COMPILE={os.environ['MXMOD_COMPILE']}")
    print(f"jax+optax jitted loop: {med(refs):10.0f} samples/s (median of {a.rounds})")
    for name, (_, target) in lines.items():
        wall, cpu = ratios[name]
        if not wall:
            print(f"{name}: skipped (not installed)")
            continue
        goal = "" if target is None else f" (target >= {target:.2f})"
        print(f"{name}: median ratio wall {med(wall):.2f}, CPU {med(cpu):.2f}{goal}")


if __name__ == "__main__":
    main()
