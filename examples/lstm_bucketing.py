"""Bucketing LSTM language model on the toy PTB-format corpus, MXNet's
``example/rnn/bucketing/lstm_bucketing.py`` recipe with ``import mxmod as mx``.

Run:  python examples/lstm_bucketing.py [--num-epochs 3] [--num-hidden 200]
Sentences are bucketed by length (10/20/30/40 tokens); each bucket is an LSTM unrolled
to that length, all buckets sharing one set of weights. Prints the training and
validation perplexity per epoch (it falls as the model learns the grammar).
"""

import argparse
import logging
import os

import mxmod as mx

HERE = os.path.dirname(os.path.abspath(__file__))


def tokenize_text(fname, vocab=None, invalid_label=-1, start_label=0):
    with open(fname) as f:
        lines = [line.split() for line in f.read().splitlines() if line.strip()]
    return mx.rnn.encode_sentences(
        lines, vocab=vocab, invalid_label=invalid_label, start_label=start_label
    )


def main(argv=None):
    """Train; returns ``{'train': [...], 'val': [...]}`` perplexities per epoch."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--num-layers", type=int, default=2)
    parser.add_argument("--num-hidden", type=int, default=200)
    parser.add_argument("--num-embed", type=int, default=200)
    parser.add_argument("--num-epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--mom", type=float, default=0.9)
    parser.add_argument("--wd", type=float, default=0.00001)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--buckets", default="10,20,30,40")
    parser.add_argument(
        "--max-sentences",
        type=int,
        default=None,
        help="use only the first N training sentences (quick runs)",
    )
    parser.add_argument("--devices", type=int, default=1, help="number of CPU devices")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    mx.random.seed(1)

    buckets = [int(b) for b in args.buckets.split(",")]
    invalid_label, start_label = 0, 1
    train_sent, vocab = tokenize_text(
        os.path.join(HERE, "data", "toy_ptb.train.txt"),
        start_label=start_label,
        invalid_label=invalid_label,
    )
    train_sent = train_sent[: args.max_sentences]
    val_sent, _ = tokenize_text(
        os.path.join(HERE, "data", "toy_ptb.valid.txt"),
        vocab=vocab,
        start_label=start_label,
        invalid_label=invalid_label,
    )
    data_train = mx.rnn.BucketSentenceIter(
        train_sent, args.batch_size, buckets=buckets, invalid_label=invalid_label
    )
    data_val = mx.rnn.BucketSentenceIter(
        val_sent, args.batch_size, buckets=buckets, invalid_label=invalid_label
    )
    vocab_size = len(vocab) + start_label

    stack = mx.rnn.SequentialRNNCell()
    for i in range(args.num_layers):
        stack.add(mx.rnn.LSTMCell(num_hidden=args.num_hidden, prefix=f"lstm_l{i}_"))

    def sym_gen(seq_len):
        data = mx.sym.Variable("data")
        label = mx.sym.Variable("softmax_label")
        embed = mx.sym.Embedding(
            data=data, input_dim=vocab_size, output_dim=args.num_embed, name="embed"
        )
        stack.reset()
        outputs, _ = stack.unroll(seq_len, inputs=embed, merge_outputs=True)
        pred = mx.sym.Reshape(outputs, shape=(-1, args.num_hidden))
        pred = mx.sym.FullyConnected(data=pred, num_hidden=vocab_size, name="pred")
        label = mx.sym.Reshape(label, shape=(-1,))
        pred = mx.sym.SoftmaxOutput(data=pred, label=label, name="softmax")
        return pred, ("data",), ("softmax_label",)

    contexts = [mx.cpu(i) for i in range(args.devices)]
    model = mx.mod.BucketingModule(
        sym_gen=sym_gen, default_bucket_key=data_train.default_bucket_key, context=contexts
    )
    metric = mx.metric.Perplexity(invalid_label)
    history = {"train": [], "val": []}
    model.fit(
        train_data=data_train,
        eval_data=data_val,
        eval_metric=metric,
        epoch_end_callback=lambda *_: history["train"].append(metric.get()[1]),
        eval_end_callback=lambda p: history["val"].append(p.eval_metric.get()[1]),
        kvstore="device",
        optimizer="sgd",
        optimizer_params={"learning_rate": args.lr, "momentum": args.mom, "wd": args.wd},
        initializer=mx.init.Xavier(factor_type="in", magnitude=2.34),
        num_epoch=args.num_epochs,
        batch_end_callback=mx.callback.Speedometer(args.batch_size, 50, auto_reset=False),
    )
    return history


if __name__ == "__main__":
    main()
