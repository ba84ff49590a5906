"""Dispatch-bound training: where host work per batch is everything.

A 64-64-64-10 MLP (8x8 digit-sized inputs), batch 32, SGD with momentum 0.9, accuracy
counted every batch, on the CPU. Measured side by side in one run:

* a hand-written jitted JAX+optax step over batches already on the device (the limit);
* ``Module.fit`` over an ``NDArrayIter`` (target >= 0.4x the limit);
* the hand-written Module loop (forward / update_metric / backward / update);
* ``Module.fit(steps_per_dispatch=N)``: N batches per compiled ``lax.scan`` (target >= 0.9x);
* Keras 3's ``fit`` on the JAX backend, when keras is installed.

Run:  python3 benchmarks/mlp_dispatch.py [--n 32768] [--epochs 3]
"""

import argparse
import os
import time

import numpy as np

D, H, C = 64, 64, 10


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
    times = []
    for _ in range(epochs):
        correct = jnp.zeros((), jnp.int32)
        t = time.perf_counter()
        for xb, yb in zip(xs, ys):
            ps, st, correct = step(ps, st, xb, yb, correct)
        correct.block_until_ready()
        times.append(time.perf_counter() - t)
    return nb * batch / min(times[1:])


def mlp(mx):
    net = mx.sym.Variable("data")
    for i in (1, 2):
        net = mx.sym.Activation(
            mx.sym.FullyConnected(net, num_hidden=H, name=f"fc{i}"), act_type="relu"
        )
    net = mx.sym.FullyConnected(net, num_hidden=C, name="fc3")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def bench_fit(x, y, batch, epochs, steps=1):
    import mxmod as mx

    it = mx.io.NDArrayIter(x, y, batch_size=batch, last_batch_handle="discard")
    mod = mx.mod.Module(mlp(mx), context=mx.cpu())
    stamps = []
    mod.fit(
        it,
        num_epoch=epochs,
        eval_metric="acc",
        initializer=mx.init.Xavier(),
        optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
        epoch_end_callback=lambda *a: stamps.append(time.perf_counter()),
        steps_per_dispatch=steps,
    )
    return (len(x) // batch) * batch / min(b - a for a, b in zip(stamps, stamps[1:]))


def bench_loop(x, y, batch, epochs):
    import mxmod as mx

    it = mx.io.NDArrayIter(x, y, batch_size=batch, last_batch_handle="discard")
    mod = mx.mod.Module(mlp(mx), context=mx.cpu())
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
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
    return (len(x) // batch) * batch / min(times[1:])


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
    cb = keras.callbacks.LambdaCallback(on_epoch_end=lambda *a: stamps.append(time.perf_counter()))
    model.fit(
        x,
        y.astype("int32"),
        batch_size=batch,
        epochs=epochs,
        verbose=0,
        shuffle=False,
        callbacks=[cb],
    )
    return (len(x) // batch) * batch / min(b - a for a, b in zip(stamps, stamps[1:]))


def main():
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
    a = p.parse_args()
    x, y = data(a.n)
    ref = bench_jax(x, y, a.batch, a.epochs)
    fit = bench_fit(x, y, a.batch, a.epochs)
    loop = bench_loop(x, y, a.batch, a.epochs)
    multi = bench_fit(x, y, a.batch, a.epochs, a.steps_per_dispatch)
    print(f"jax+optax jitted loop: {ref:10.0f} samples/s")
    print(f"Module.fit           : {fit:10.0f} samples/s  ratio {fit / ref:.2f} (target >= 0.40)")
    print(f"Module loop          : {loop:10.0f} samples/s  ratio {loop / ref:.2f}")
    print(
        f"Module.fit steps_per_dispatch={a.steps_per_dispatch}: {multi:10.0f} samples/s  ratio "
        f"{multi / ref:.2f} (target >= 0.90)"
    )
    keras = bench_keras(x, y, a.batch, a.epochs)
    if keras is None:
        print("keras 3 fit          : skipped (keras not installed)")
    else:
        print(f"keras 3 fit (jax)    : {keras:10.0f} samples/s  ratio {keras / ref:.2f}")


if __name__ == "__main__":
    main()
