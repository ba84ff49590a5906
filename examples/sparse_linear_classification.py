"""Sparse linear classification (MXNet's example/sparse/linear_classification) on mxmod.

A logistic-regression model over LibSVM data: the data variable is ``stype='csr'``, the
weight ``stype='row_sparse'``, so each step reads only the weight rows of the features the
batch holds and the optimizer's lazy update moves only those rows (MXNet 1.9.1's
``sgd``/``adam`` ``lazy_update``). ``mx.io.LibSVMIter`` yields the csr batches and
``Module.fit`` trains; the weight comes back as a ``RowSparseNDArray``.

Data: ``examples/data/sparse_linear/{train,test}.libsvm``, written by :func:`make_data`
(deterministic, 4,000 + 500 rows, 1,000 features, about 12 non-zeros per row, labels 0/1
from a hidden sparse weight plus noise). ``--make-data`` rewrites them.

Run:  python examples/sparse_linear_classification.py [--epochs 5] [--optimizer adam]
"""

import argparse
import logging
import os

import numpy as np

import mxmod as mx

HERE = os.path.dirname(os.path.abspath(__file__))
DATA_DIR = os.path.join(HERE, "data", "sparse_linear")
NUM_FEATURES = 1000


def make_data(out_dir=DATA_DIR, seed=42):
    """Write ``train.libsvm`` and ``test.libsvm``: rows with 4..20 features (zero-based
    indices, values in (0, 1]), label 1 when the hidden weight's score beats 0."""
    rng = np.random.RandomState(seed)
    hidden = rng.normal(0, 1, NUM_FEATURES) * (rng.rand(NUM_FEATURES) < 0.3)
    os.makedirs(out_dir, exist_ok=True)
    for name, rows in (("train", 4000), ("test", 500)):
        lines = []
        for _ in range(rows):
            nnz = rng.randint(4, 21)
            cols = np.sort(rng.choice(NUM_FEATURES, nnz, replace=False))
            vals = np.round(rng.uniform(0.05, 1.0, nnz), 3)
            score = float(vals @ hidden[cols]) + rng.normal(0, 0.3)
            feats = " ".join(f"{c}:{v:g}" for c, v in zip(cols, vals))
            lines.append(f"{int(score > 0)} {feats}\n")
        with open(os.path.join(out_dir, f"{name}.libsvm"), "w") as f:
            f.writelines(lines)


def linear_model(num_features):
    """MXNet's sparse linear model: dot(csr data, row_sparse weight) + bias, logistic loss."""
    x = mx.sym.Variable("data", stype="csr")
    weight = mx.sym.Variable(
        "weight", shape=(num_features, 1), init=mx.init.Normal(0.01), stype="row_sparse"
    )
    bias = mx.sym.Variable("bias", shape=(1,))
    pred = mx.sym.broadcast_add(mx.sym.sparse.dot(x, weight), bias)
    label = mx.sym.Variable("softmax_label")
    return mx.sym.LogisticRegressionOutput(pred, mx.sym.reshape(label, (-1, 1)), name="out")


def iterator(name, batch_size):
    return mx.io.LibSVMIter(
        data_libsvm=os.path.join(DATA_DIR, f"{name}.libsvm"),
        data_shape=(NUM_FEATURES,),
        batch_size=batch_size,
    )


def accuracy(mod, it):
    """The share of rows whose predicted probability is on the label's side of 0.5
    (padding rows of the last batch left out)."""
    it.reset()
    right = total = 0
    for batch in it:
        mod.forward(batch, is_train=False)
        prob = mod.get_outputs()[0].asnumpy()[:, 0]
        keep = len(prob) - batch.pad
        label = batch.label[0].asnumpy()
        right += int(((prob[:keep] > 0.5) == (label[:keep] > 0.5)).sum())
        total += keep
    return right / total


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--optimizer", default="adam", choices=["adam", "sgd", "ftrl"])
    parser.add_argument("--make-data", action="store_true", help="rewrite the data files")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.make_data or not os.path.exists(os.path.join(DATA_DIR, "train.libsvm")):
        make_data()
    mx.random.seed(7)
    train, test = iterator("train", args.batch_size), iterator("test", args.batch_size)
    mod = mx.mod.Module(linear_model(NUM_FEATURES), data_names=["data"])
    lr = {"adam": 0.02, "sgd": 0.5, "ftrl": 0.2}[args.optimizer]
    mod.fit(
        train,
        eval_data=test,
        eval_metric="mse",
        optimizer=args.optimizer,
        optimizer_params={"learning_rate": lr},
        num_epoch=args.epochs,
        batch_end_callback=mx.callback.Speedometer(args.batch_size, 10),
    )
    weight = mod.get_params()[0]["weight"]
    results = {
        "train_accuracy": accuracy(mod, train),
        "test_accuracy": accuracy(mod, test),
        "weight_stype": weight.stype,
    }
    print("train accuracy %.3f, test accuracy %.3f" % (results["train_accuracy"],
                                                       results["test_accuracy"]))  # fmt: skip
    return results


if __name__ == "__main__":
    main()
