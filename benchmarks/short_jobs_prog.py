"""The short jobs of ``benchmarks/short_jobs.py``, written once for MXNet 1.9.1 and mxmod.

Run by short_jobs.py in a fresh process per measurement:

    python benchmarks/short_jobs_prog.py --framework mxnet|mxmod --job seq2seq|cnn [--quick]

- ``seq2seq``: what an NMT toolkit on MXNet 1.x (Sockeye 1.x) does. An LSTM encoder-decoder
  with dot attention and input feeding, trained on a synthetic reverse-the-sentence task with
  ``BucketingModule`` (bucket key (source length, target length), ``sym_gen`` returning
  ``(sym, data_names, label_names)``, ``SoftmaxOutput`` with ``ignore_label``/``use_ignore``/
  ``normalization='valid'``) in a ``forward_backward``/``update``/``update_metric`` loop, then
  beam search over a few sentences: per source-length bucket an encoder and a one-step
  decoder ``Module`` bound ``for_training=False`` sharing parameters (``shared_module``), and
  the search itself in ``mx.nd`` (softmax, log, topk, take, where, concat, argsort,
  indexing; a minimum output length, as NMT decoders have, keeps it searching).
- ``cnn``: a fine-tune. A small conv/BatchNorm/pool network is "pretrained" (initialised and
  saved with ``save_checkpoint``), loaded back, given a new head, and trained for 20 batches
  with ``Module.fit`` after ``set_params``; then scored.

Parameters come from ``SeededUniform``, an ``mx.init.Initializer`` that draws each array from
numpy seeded by the parameter's name, so both frameworks start from the same weights and
their losses and outputs can be compared.

The last stdout line is ``SHORT_JOBS_RESULT {json}``: phase times, losses, outputs and, under
mxmod, JAX's compile counters.
"""

import argparse
import json
import os
import sys
import tempfile
import time
import zlib

START = time.perf_counter()

import numpy as np  # noqa: E402

PAD, BOS, EOS = 0, 1, 2
VOCAB = 24
EMBED, HIDDEN = 32, 64
SRC_BUCKETS = (4, 6, 8, 10)
BATCH, BEAM = 16, 3


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--framework", choices=("mxnet", "mxmod"), required=True)
    ap.add_argument("--job", choices=("seq2seq", "cnn"), required=True)
    ap.add_argument("--quick", action="store_true", help="fewer updates, batches, sentences")
    return ap.parse_args()


BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"
COMPILE_STATS = {"events": {}, "durations": {}, "by_name": {}}


def watch_compiles():
    """Count JAX's compile events (mxmod only); registered before mxmod is imported."""
    from jax._src import monitoring

    def on_duration(event, duration, fun_name=None, **_):
        entry = COMPILE_STATS["durations"].setdefault(event, [0, 0.0])
        entry[0] += 1
        entry[1] += duration
        if event == BACKEND_COMPILE:
            entry = COMPILE_STATS["by_name"].setdefault(str(fun_name), [0, 0.0])
            entry[0] += 1
            entry[1] += duration

    def on_event(event, **_):
        COMPILE_STATS["events"][event] = COMPILE_STATS["events"].get(event, 0) + 1

    monitoring.register_event_duration_secs_listener(on_duration)
    monitoring.register_event_listener(on_event)


def import_framework(name):
    if name == "mxnet":
        import mxnet as mx
    else:
        watch_compiles()
        import mxmod as mx
    return mx


def seeded_uniform_class(mx):
    class SeededUniform(mx.init.Initializer):
        """Uniform(-scale, scale) from numpy seeded by the parameter's name."""

        def __init__(self, scale=0.1):
            super().__init__(scale=scale)
            self.scale = scale

        def _init_weight(self, name, arr):
            rng = np.random.RandomState(zlib.crc32(str(name).encode()))
            arr[:] = rng.uniform(-self.scale, self.scale, arr.shape)

    return SeededUniform


# ----------------------------------------------------------------------------- seq2seq
class Seq2Seq:
    """The graph pieces, shared by the training unroll and the one-step inference decoder."""

    def __init__(self, mx):
        self.mx = mx
        sym = mx.sym
        self.src_embed = sym.Variable("src_embed_weight")
        self.tgt_embed = sym.Variable("tgt_embed_weight")
        self.enc_cell = mx.rnn.LSTMCell(HIDDEN, prefix="enc_")
        self.dec_cell = mx.rnn.LSTMCell(HIDDEN, prefix="dec_")
        self.fc = {
            name: (sym.Variable(name + "_weight"), sym.Variable(name + "_bias"))
            for name in ("init_h", "init_c", "att_query", "att_hidden", "logits")
        }

    def dense(self, data, name, num_hidden, tag=""):
        weight, bias = self.fc[name]
        return self.mx.sym.FullyConnected(
            data, weight=weight, bias=bias, num_hidden=num_hidden, name=name + tag
        )

    def encode(self, source, seq_len):
        """source (B, S) -> encoder outputs (B, S, H), decoder's first h and c, mask bias."""
        sym = self.mx.sym
        embed = sym.Embedding(source, weight=self.src_embed, input_dim=VOCAB, output_dim=EMBED)
        self.enc_cell.reset()
        enc_out, _ = self.enc_cell.unroll(seq_len, embed, layout="NTC", merge_outputs=True)
        lengths = sym.sum(source != PAD, axis=1)
        last = sym.SequenceLast(enc_out, sequence_length=lengths, use_sequence_length=True, axis=1)
        h0 = sym.Activation(self.dense(last, "init_h", HIDDEN), act_type="tanh")
        c0 = sym.Activation(self.dense(last, "init_c", HIDDEN), act_type="tanh")
        return enc_out, h0, c0

    def mask_bias(self, source):
        return (source == PAD) * -1e4  # (B, S): padded source positions get no attention

    def decode_step(self, word_embed, prev_hidden, states, enc_out, mask_bias, tag):
        """One decoder step with input feeding and dot attention: (attention hidden, states)."""
        sym = self.mx.sym
        rnn_in = sym.concat(word_embed, prev_hidden, dim=1)
        out, states = self.dec_cell(rnn_in, states)
        query = sym.expand_dims(self.dense(out, "att_query", HIDDEN, tag), axis=2)
        scores = sym.Reshape(sym.batch_dot(enc_out, query), shape=(0, -1)) + mask_bias
        alpha = sym.softmax(scores, axis=1)
        context = sym.Reshape(sym.batch_dot(sym.expand_dims(alpha, axis=1), enc_out), shape=(0, -1))
        joined = sym.concat(out, context, dim=1)
        hidden = sym.Activation(self.dense(joined, "att_hidden", HIDDEN, tag), act_type="tanh")
        return hidden, states

    def train_sym_gen(self, bucket_key):
        src_len, tgt_len = bucket_key
        sym = self.mx.sym
        source, target = sym.Variable("source"), sym.Variable("target")
        label = sym.Variable("target_label")
        enc_out, h0, c0 = self.encode(source, src_len)
        bias = self.mask_bias(source)
        embeds = sym.split(
            sym.Embedding(target, weight=self.tgt_embed, input_dim=VOCAB, output_dim=EMBED),
            num_outputs=tgt_len,
            axis=1,
            squeeze_axis=True,
        )
        self.dec_cell.reset()
        states, hidden, hiddens = [h0, c0], sym.zeros_like(h0), []
        for t in range(tgt_len):
            hidden, states = self.decode_step(embeds[t], hidden, states, enc_out, bias, f"_t{t}")
            hiddens.append(hidden)
        hiddens = sym.Reshape(sym.stack(*hiddens, axis=1), shape=(-1, HIDDEN))
        logits = self.dense(hiddens, "logits", VOCAB)
        out = sym.SoftmaxOutput(
            logits,
            sym.Reshape(label, shape=(-1,)),
            ignore_label=PAD,
            use_ignore=True,
            normalization="valid",
            name="softmax",
        )
        return out, ("source", "target"), ("target_label",)

    def encoder_sym(self, src_len):
        enc_out, h0, c0 = self.encode(self.mx.sym.Variable("source"), src_len)
        return self.mx.sym.Group([enc_out, h0, c0])

    def decoder_sym(self):
        sym = self.mx.sym
        names = ("source", "enc_out", "prev_word", "prev_hidden", "dec_h", "dec_c")
        source, enc_out, word, prev_hidden, h, c = (sym.Variable(n) for n in names)
        embed = sym.Embedding(word, weight=self.tgt_embed, input_dim=VOCAB, output_dim=EMBED)
        self.dec_cell.reset()
        bias = self.mask_bias(source)
        hidden, (h, c) = self.decode_step(embed, prev_hidden, [h, c], enc_out, bias, "")
        return sym.Group([self.dense(hidden, "logits", VOCAB), h, c, hidden]), names


def reverse_batch(rng, src_len, lo):
    """A bucket's batch of the reverse task: source, decoder input, label (PAD-padded)."""
    tgt_len = src_len + 1
    source = np.zeros((BATCH, src_len), np.float32)
    target = np.zeros((BATCH, tgt_len), np.float32)
    label = np.zeros((BATCH, tgt_len), np.float32)
    for i in range(BATCH):
        n = rng.randint(lo + 1, src_len + 1)
        words = rng.randint(EOS + 1, VOCAB, size=n)
        source[i, :n] = words
        label[i, :n] = words[::-1]
        label[i, n] = EOS
        target[i, 0] = BOS
        target[i, 1 : n + 1] = words[::-1]
    return source, target, label


def make_train_iter(mx, updates):
    class ReverseIter(mx.io.DataIter):
        """Bucketed batches of (source, target) -> target_label, as an NMT toolkit's iterator."""

        def __init__(self):
            super().__init__(BATCH)
            rng = np.random.RandomState(0)
            # the largest bucket first (BucketingModule binds it), then every bucket at least
            # once, shuffled as toolkits do
            rest = list(SRC_BUCKETS[:-1])
            rest += [int(b) for b in rng.choice(SRC_BUCKETS, size=updates - len(SRC_BUCKETS))]
            rng.shuffle(rest)
            order = [SRC_BUCKETS[-1]] + rest
            prev = {s: (SRC_BUCKETS[i - 1] if i else 0) for i, s in enumerate(SRC_BUCKETS)}
            self.batches = [reverse_batch(rng, s, min(prev[s], s - 2)) for s in order]
            self.default_bucket_key = (SRC_BUCKETS[-1], SRC_BUCKETS[-1] + 1)
            self.provide_data, self.provide_label = self.descs(self.default_bucket_key)
            self.cursor = 0

        @staticmethod
        def descs(key):
            data = [
                mx.io.DataDesc("source", (BATCH, key[0])),
                mx.io.DataDesc("target", (BATCH, key[1])),
            ]
            return data, [mx.io.DataDesc("target_label", (BATCH, key[1]))]

        def reset(self):
            self.cursor = 0

        def next(self):
            if self.cursor == len(self.batches):
                raise StopIteration
            source, target, label = self.batches[self.cursor]
            self.cursor += 1
            key = (source.shape[1], target.shape[1])
            data, labels = self.descs(key)
            return mx.io.DataBatch(
                [mx.nd.array(source), mx.nd.array(target)],
                [mx.nd.array(label)],
                bucket_key=key,
                provide_data=data,
                provide_label=labels,
            )

    return ReverseIter()


class BeamTranslator:
    """Per source bucket an encoder and a one-step decoder Module, sharing the parameters."""

    def __init__(self, mx, net, arg_params, aux_params):
        self.mx = mx
        ctx = mx.cpu()
        self.encoders, self.decoders = {}, {}
        dec_sym, dec_names = net.decoder_sym()
        for src_len in sorted(SRC_BUCKETS, reverse=True):  # the largest first, as BucketingModule
            enc = mx.mod.Module(net.encoder_sym(src_len), ("source",), None, context=ctx)
            enc.bind(
                [("source", (1, src_len))],
                for_training=False,
                shared_module=self.encoders.get(SRC_BUCKETS[-1]),
            )
            dec = mx.mod.Module(dec_sym, dec_names, None, context=ctx)
            shapes = {
                "source": (BEAM, src_len),
                "enc_out": (BEAM, src_len, HIDDEN),
                "prev_word": (BEAM,),
                "prev_hidden": (BEAM, HIDDEN),
                "dec_h": (BEAM, HIDDEN),
                "dec_c": (BEAM, HIDDEN),
            }
            dec.bind(
                [(n, shapes[n]) for n in dec_names],
                for_training=False,
                shared_module=self.decoders.get(SRC_BUCKETS[-1]),
            )
            if not self.encoders:
                enc.set_params(arg_params, aux_params, allow_extra=True)
                dec.set_params(arg_params, aux_params, allow_extra=True)
            self.encoders[src_len], self.decoders[src_len] = enc, dec

    def translate(self, words):
        mx, nd = self.mx, self.mx.nd
        src_len = min(s for s in SRC_BUCKETS if s >= len(words))
        source = np.zeros((1, src_len), np.float32)
        source[0, : len(words)] = words
        self.encoders[src_len].forward(mx.io.DataBatch([nd.array(source)]), is_train=False)
        enc_out, h, c = (
            nd.repeat(o, repeats=BEAM, axis=0) for o in self.encoders[src_len].get_outputs()
        )
        source = nd.repeat(nd.array(source), repeats=BEAM, axis=0)
        prev_hidden, word = nd.zeros((BEAM, HIDDEN)), nd.full((BEAM,), BOS)
        scores = nd.array([[0.0]] + [[np.inf]] * (BEAM - 1))  # only one live hypothesis at first
        finished = nd.zeros((BEAM,))
        max_len = len(words) + 3
        sequences = nd.zeros((BEAM, max_len))
        done_tail = nd.full((BEAM, VOCAB - 1), np.inf)  # a finished hypothesis only adds PAD
        decoder = self.decoders[src_len]
        for t in range(max_len):
            decoder.forward(
                mx.io.DataBatch([source, enc_out, word, prev_hidden, h, c]), is_train=False
            )
            logits, h, c, prev_hidden = decoder.get_outputs()
            step = nd.broadcast_add(-nd.log(nd.softmax(logits, axis=-1)), scores)
            if t < len(words):  # a minimum output length: the source's
                step[:, EOS] = np.inf
            step = nd.where(finished, nd.concat(scores, done_tail, dim=1), step)
            flat = step.reshape((1, -1))
            best = nd.topk(flat, axis=1, k=BEAM, ret_typ="indices", is_ascend=True).reshape((-1,))
            origin = nd.floor(best / VOCAB)
            word = best - origin * VOCAB
            scores = nd.take(flat.reshape((-1,)), best).reshape((BEAM, 1))
            sequences = nd.take(sequences, origin)
            sequences[:, t] = word
            h, c, prev_hidden = nd.take(h, origin), nd.take(c, origin), nd.take(prev_hidden, origin)
            finished = nd.maximum(nd.take(finished, origin), word == EOS)
            if finished.sum().asscalar() == BEAM:
                break
        order = nd.argsort(scores.reshape((-1,)))  # the n-best list, best first
        nbest, nbest_scores = [], []
        for row in order.asnumpy().astype(int):
            out = [int(w) for w in sequences[int(row)].asnumpy()]
            nbest.append(out[: out.index(EOS)] if EOS in out else [w for w in out if w != PAD])
            nbest_scores.append(round(float(scores[int(row)].asscalar()), 4))
        return nbest, nbest_scores


def run_seq2seq(mx, quick, timer):
    updates, n_sentences = (5, 2) if quick else (10, 6)
    mx.random.seed(0)
    net = Seq2Seq(mx)
    train = make_train_iter(mx, updates)
    model = mx.mod.BucketingModule(
        net.train_sym_gen, default_bucket_key=train.default_bucket_key, context=mx.cpu()
    )
    model.bind(train.provide_data, train.provide_label, for_training=True)
    model.init_params(initializer=seeded_uniform_class(mx)(0.1))
    model.init_optimizer(
        optimizer="adam", optimizer_params={"learning_rate": 0.003, "clip_gradient": 1.0}
    )
    metric = mx.metric.Perplexity(ignore_label=PAD)
    perplexities = []
    for batch in train:
        model.forward_backward(batch)
        model.update()
        metric.reset()
        model.update_metric(metric, batch.label)
        perplexities.append(round(float(metric.get()[1]), 4))
    timer("train")
    arg_params, aux_params = model.get_params()
    translator = BeamTranslator(mx, net, arg_params, aux_params)
    rng = np.random.RandomState(7)
    lengths = [3, 5, 7, 9, 10, 4][:n_sentences]
    sources = [[int(w) for w in rng.randint(EOS + 1, VOCAB, size=n)] for n in lengths]
    outputs, scores = zip(*(translator.translate(s) for s in sources))
    timer("translate")
    head, tail = np.mean(perplexities[:3]), np.mean(perplexities[-3:])
    return {
        "train_perplexity": perplexities,
        "loss_decreased": bool(tail < head),
        "sources": sources,
        "nbest": outputs,  # per sentence, the beam's hypotheses, best first
        "nbest_scores": scores,  # their summed -log p
        "correct": sum(o[0] == s[::-1] for o, s in zip(outputs, sources)),
    }


# ----------------------------------------------------------------------------- cnn
IMAGE, CLASSES, PRETRAIN_CLASSES = (3, 32, 32), 10, 100


def cnn_symbol(mx, classes, head):
    sym = mx.sym
    x = sym.Variable("data")
    for i, filters in enumerate((16, 32, 32)):
        x = sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=filters, name=f"conv{i}")
        x = sym.BatchNorm(x, fix_gamma=False, name=f"bn{i}")
        x = sym.Activation(x, act_type="relu", name=f"relu{i}")
        x = sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name=f"pool{i}")
    x = sym.Activation(
        sym.FullyConnected(sym.Flatten(x), num_hidden=64, name="fc1"),
        act_type="relu",
        name="relu_fc1",
    )
    x = sym.FullyConnected(x, num_hidden=classes, name=head)
    return sym.SoftmaxOutput(x, name="softmax")


def image_data(n, seed):
    rng = np.random.RandomState(seed)
    templates = np.random.RandomState(99).normal(size=(CLASSES,) + IMAGE).astype(np.float32)
    labels = rng.randint(0, CLASSES, size=n)
    images = templates[labels] + rng.normal(scale=1.0, size=(n,) + IMAGE).astype(np.float32)
    return images.astype(np.float32), labels.astype(np.float32)


def run_cnn(mx, quick, timer):
    batches, batch = (6, 16) if quick else (20, 16)
    mx.random.seed(0)
    init = seeded_uniform_class(mx)(0.1)
    with tempfile.TemporaryDirectory() as folder:
        prefix = os.path.join(folder, "pretrained")
        base = mx.mod.Module(cnn_symbol(mx, PRETRAIN_CLASSES, "fc_pre"), context=mx.cpu())
        base.bind([("data", (batch,) + IMAGE)], [("softmax_label", (batch,))], for_training=False)
        base.init_params(initializer=init)
        base.save_checkpoint(prefix, 0)
        timer("pretrain_ckpt")

        sym, arg_params, aux_params = mx.model.load_checkpoint(prefix, 0)
    features = sym.get_internals()["relu_fc1_output"]
    net = mx.sym.SoftmaxOutput(
        mx.sym.FullyConnected(features, num_hidden=CLASSES, name="fc_new"), name="softmax"
    )
    kept = {k: v for k, v in arg_params.items() if not k.startswith("fc_pre")}
    x, y = image_data(batches * batch, seed=1)
    train = mx.io.NDArrayIter(x, y, batch_size=batch, shuffle=False)
    vx, vy = image_data(4 * batch, seed=2)
    val = mx.io.NDArrayIter(vx, vy, batch_size=batch)
    mod = mx.mod.Module(net, context=mx.cpu())
    mod.bind(train.provide_data, train.provide_label)
    mod.init_params(initializer=init)
    mod.set_params(kept, aux_params, allow_missing=True)
    accuracy = []

    def every_5(param):
        if param.nbatch % 5 == 4:
            accuracy.append(round(float(param.eval_metric.get()[1]), 4))

    mod.fit(
        train,
        num_epoch=1,
        optimizer="sgd",
        optimizer_params={"learning_rate": 0.01, "momentum": 0.9, "wd": 1e-4},
        eval_metric="acc",
        batch_end_callback=every_5,
    )
    timer("fit")
    score = mod.score(val, ["acc", "ce"])
    timer("score")
    return {"train_accuracy_every_5": accuracy, "val": {k: round(float(v), 4) for k, v in score}}


def main():
    args = parse_args()
    phases = {}
    last = [START]

    def timer(name):
        now = time.perf_counter()
        phases[name] = round(now - last[0], 3)
        last[0] = now

    mx = import_framework(args.framework)
    timer("import")
    result = (run_seq2seq if args.job == "seq2seq" else run_cnn)(mx, args.quick, timer)
    result.update(framework=args.framework, job=args.job, phases=phases)
    result["in_process_s"] = round(time.perf_counter() - START, 3)
    if args.framework == "mxmod":
        durations = COMPILE_STATS["durations"]
        compiles = durations.get(BACKEND_COMPILE, [0, 0.0])
        result["compiles"], result["compile_s"] = compiles[0], round(compiles[1], 3)
        by_name = sorted(COMPILE_STATS["by_name"].items(), key=lambda kv: -kv[1][1])
        result["compiles_by_name"] = [[name, n, round(t, 3)] for name, (n, t) in by_name]
        result["jax_durations"] = {k: [n, round(s, 3)] for k, (n, s) in durations.items()}
        result["jax_events"] = COMPILE_STATS["events"]
    sys.stdout.flush()
    print("SHORT_JOBS_RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
