"""Train an MLP on the 8x8 handwritten digits with Module.fit, MXNet-style.

Run:  python examples/train_digits.py [--epochs 20] [--devices 1]
Writes checkpoints to ./out/digits-symbol.json and ./out/digits-NNNN.params and
prints a Speedometer log and the validation accuracy.
"""

import argparse
import logging
import os

import numpy as np

import mxmod as mx

HERE = os.path.dirname(os.path.abspath(__file__))


def load_digits():
    blob = np.load(os.path.join(HERE, "data", "digits.npz"))
    x = blob["images"].reshape(-1, 64).astype(np.float32) / 16.0
    y = blob["labels"].astype(np.float32)
    rng = np.random.RandomState(0)
    order = rng.permutation(len(x))
    return x[order], y[order]


def mlp():
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, name="fc1", num_hidden=128)
    net = mx.sym.Activation(net, name="relu1", act_type="relu")
    net = mx.sym.FullyConnected(net, name="fc2", num_hidden=64)
    net = mx.sym.Activation(net, name="relu2", act_type="relu")
    net = mx.sym.FullyConnected(net, name="fc3", num_hidden=10)
    return mx.sym.SoftmaxOutput(net, name="softmax")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=50)
    parser.add_argument("--devices", type=int, default=1, help="number of CPU devices")
    parser.add_argument("--out", default="out")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    mx.random.seed(42)

    x, y = load_digits()
    n_train = 1500
    train = mx.io.NDArrayIter(x[:n_train], y[:n_train], batch_size=args.batch_size, shuffle=True)
    val = mx.io.NDArrayIter(x[n_train:], y[n_train:], batch_size=args.batch_size)

    ctx = [mx.cpu(i) for i in range(args.devices)]
    mod = mx.mod.Module(mlp(), context=ctx)
    os.makedirs(args.out, exist_ok=True)
    mod.fit(
        train,
        eval_data=val,
        eval_metric="acc",
        num_epoch=args.epochs,
        optimizer="sgd",
        optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
        initializer=mx.init.Xavier(),
        batch_end_callback=mx.callback.Speedometer(args.batch_size, 10),
        epoch_end_callback=mx.callback.do_checkpoint(os.path.join(args.out, "digits"), 5),
    )
    acc = dict(mod.score(val, "acc"))["accuracy"]
    print(f"validation accuracy: {acc:.4f}")
    if acc < 0.9:
        raise SystemExit(f"validation accuracy {acc:.4f} is below the expected 0.90")


if __name__ == "__main__":
    main()
