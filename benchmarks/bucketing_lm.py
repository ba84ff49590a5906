"""Bucketing LSTM language model: mxmod's BucketingModule against real MXNet 1.9.1's and a
hand-written JAX+optax LSTM padded to the same buckets.

The task is issue 12's recipe (MXNet's ``example/rnn/bucketing``): the toy PTB corpus of
examples/data, ``BucketSentenceIter`` with buckets 10/20/30/40 and batch 32, an
Embedding(200) -> 2 x LSTMCell(200) -> FC(vocab) -> SoftmaxOutput network unrolled per
bucket, SGD with momentum 0.9, ``Perplexity`` counted every batch. Each side runs one
warm-up epoch (compilation: every bucket is seen) and then times ``--epochs`` epochs;
the figure is training samples (sentences) per second.

The JAX reference is what one writes by hand: one ``jax.jit`` train step (embedding,
``lax.scan`` LSTMs, softmax cross-entropy, ``optax.sgd`` with momentum, the metric's
sums) compiled once per bucket shape, fed the same host batches; it is timed with the
time loop as a rolled ``lax.scan`` and fully unrolled (``unroll=True``, as the symbolic
graph is).

MXNet runs in a child process when a Python with mxnet 1.9.1 is given
(``--mxnet-python``, default ``$MXNET_PYTHON``: the MXNet venv of tests/fixtures/README.md).

Run:  MXNET_PYTHON=... python3 benchmarks/bucketing_lm.py [--epochs 1] [--sentences 4000]
"""

import argparse
import json
import os
import random
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "examples", "data", "toy_ptb.train.txt")
BUCKETS, BATCH, HIDDEN, LAYERS = [10, 20, 30, 40], 32, 200, 2


def sentences(mx, n):
    with open(CORPUS) as f:
        lines = [line.split() for line in f.read().splitlines() if line.strip()][:n]
    return mx.rnn.encode_sentences(lines, invalid_label=0, start_label=1)


def make_iter(mx, n):
    random.seed(0)
    np.random.seed(0)
    sent, vocab = sentences(mx, n)
    return mx.rnn.BucketSentenceIter(sent, BATCH, buckets=BUCKETS, invalid_label=0), len(vocab) + 1


def run_module(mx, n, epochs):
    """The recipe with ``mx`` = mxnet or mxmod: (samples/s, final train perplexity)."""
    it, vocab = make_iter(mx, n)
    stack = mx.rnn.SequentialRNNCell()
    for i in range(LAYERS):
        stack.add(mx.rnn.LSTMCell(num_hidden=HIDDEN, prefix=f"lstm_l{i}_"))

    def sym_gen(seq_len):
        data = mx.sym.Variable("data")
        label = mx.sym.Variable("softmax_label")
        embed = mx.sym.Embedding(data, input_dim=vocab, output_dim=HIDDEN, name="embed")
        stack.reset()
        outputs, _ = stack.unroll(seq_len, inputs=embed, merge_outputs=True)
        pred = mx.sym.FullyConnected(
            mx.sym.Reshape(outputs, shape=(-1, HIDDEN)), num_hidden=vocab, name="pred"
        )
        pred = mx.sym.SoftmaxOutput(pred, mx.sym.Reshape(label, shape=(-1,)), name="softmax")
        return pred, ("data",), ("softmax_label",)

    model = mx.mod.BucketingModule(
        sym_gen, default_bucket_key=it.default_bucket_key, context=mx.cpu()
    )
    metric = mx.metric.Perplexity(0)
    opt = {"learning_rate": 0.01, "momentum": 0.9}
    model.fit(
        it,
        eval_metric=metric,
        num_epoch=1,
        optimizer="sgd",
        optimizer_params=opt,
        initializer=mx.init.Xavier(factor_type="in", magnitude=2.34),
    )
    mx.nd.waitall()
    batches = sum(1 for _ in it)
    it.reset()
    tic = time.perf_counter()
    model.fit(it, eval_metric=metric, begin_epoch=1, num_epoch=1 + epochs)
    ppl = metric.get()[1]  # reading the metric waits for the last step
    mx.nd.waitall()
    return batches * BATCH * epochs / (time.perf_counter() - tic), float(ppl)


def run_jax(n, epochs, unroll=1):
    """Hand-written JAX+optax LSTM LM over the same padded bucket batches (``unroll``:
    ``lax.scan``'s; True unrolls the time loop as the symbolic graph does)."""
    import jax
    import jax.numpy as jnp
    import optax

    import mxmod as mx

    it, vocab = make_iter(mx, n)
    batches = [
        (b.data[0].asnumpy().astype(np.int32), b.label[0].asnumpy().astype(np.int32)) for b in it
    ]
    it.reset()
    rng = np.random.RandomState(0)

    def xavier(shape):
        return jnp.asarray(rng.uniform(-1, 1, shape) * np.sqrt(3 * 2.34 / shape[-1]), jnp.float32)

    params = {
        "embed": xavier((vocab, HIDDEN)),
        "pred_w": xavier((HIDDEN, vocab)),
        "pred_b": jnp.zeros(vocab),
    }
    for i in range(LAYERS):
        params[f"l{i}_wx"] = xavier((HIDDEN, 4 * HIDDEN))
        params[f"l{i}_wh"] = xavier((HIDDEN, 4 * HIDDEN))
        params[f"l{i}_b"] = jnp.zeros(4 * HIDDEN)
    tx = optax.sgd(0.01, momentum=0.9)
    state = tx.init(params)

    def loss_fn(p, x, y):
        h = p["embed"][x].transpose(1, 0, 2)  # (T, N, H)
        for i in range(LAYERS):
            xs = h @ p[f"l{i}_wx"] + p[f"l{i}_b"]

            def cell(carry, xt, i=i):
                hp, cp = carry
                g = xt + hp @ p[f"l{i}_wh"]
                ig, fg, gg, og = jnp.split(g, 4, axis=-1)
                c = jax.nn.sigmoid(fg) * cp + jax.nn.sigmoid(ig) * jnp.tanh(gg)
                hn = jax.nn.sigmoid(og) * jnp.tanh(c)
                return (hn, c), hn

            zero = jnp.zeros((x.shape[0], HIDDEN))
            _, h = jax.lax.scan(cell, (zero, zero), xs, unroll=unroll)
        logits = h.transpose(1, 0, 2) @ p["pred_w"] + p["pred_b"]
        logp = jax.nn.log_softmax(logits)
        nll = -jnp.take_along_axis(logp, y[..., None], -1)[..., 0]
        mask = (y != 0).astype(jnp.float32)
        # SoftmaxOutput's gradient is summed over positions and rescaled by 1/batch
        return nll.sum() / x.shape[0], ((nll * mask).sum(), mask.sum())

    @jax.jit
    def step(p, s, x, y):
        (_, stats), g = jax.value_and_grad(loss_fn, has_aux=True)(p, x, y)
        upd, s = tx.update(g, s, p)
        return optax.apply_updates(p, upd), s, stats

    def epoch(p, s):
        tot = jnp.zeros(()), jnp.zeros(())
        for x, y in batches:
            p, s, st = step(p, s, x, y)
            tot = (tot[0] + st[0], tot[1] + st[1])
        return p, s, tot

    params, state, _ = epoch(params, state)  # warm-up: one compile per bucket
    jax.block_until_ready(params)
    tic = time.perf_counter()
    for _ in range(epochs):
        params, state, tot = epoch(params, state)
    ppl = float(jnp.exp(tot[0] / tot[1]))
    return len(batches) * BATCH * epochs / (time.perf_counter() - tic), ppl


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--sentences", type=int, default=4000)
    p.add_argument(
        "--mxnet-python",
        default=os.environ.get("MXNET_PYTHON", ""),
        help="a python with mxnet 1.9.1; the comparison is skipped without one",
    )
    p.add_argument("--worker", choices=("mxnet",), help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker == "mxnet":
        import mxnet

        print(json.dumps(run_module(mxnet, a.sentences, a.epochs)))
        return
    sys.path.insert(0, os.path.join(HERE, ".."))
    import mxmod

    ours, ppl = run_module(mxmod, a.sentences, a.epochs)
    print(f"mxmod BucketingModule : {ours:9.1f} samples/s (train perplexity {ppl:.1f})")
    for name, unroll in (("scan", 1), ("unrolled scan", True)):
        ref, ref_ppl = run_jax(a.sentences, a.epochs, unroll)
        print(f"JAX+optax ({name:13s}): {ref:9.1f} samples/s (train perplexity {ref_ppl:.1f})")
        print(f"mxmod / JAX+optax ({name}): {ours / ref:.2f}x (target >= 0.8)")
    if not (a.mxnet_python and os.path.exists(a.mxnet_python)):
        print("real MXNet 1.9.1      : skipped (give --mxnet-python or set MXNET_PYTHON)")
        return
    out = subprocess.run(
        [
            a.mxnet_python,
            os.path.abspath(__file__),
            "--worker",
            "mxnet",
            "--sentences",
            str(a.sentences),
            "--epochs",
            str(a.epochs),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    mx_sps, mx_ppl = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"real MXNet 1.9.1      : {mx_sps:9.1f} samples/s (train perplexity {mx_ppl:.1f})")
    print(f"mxmod / MXNet         : {ours / mx_sps:.2f}x (target >= 1.0)")


if __name__ == "__main__":
    main()
