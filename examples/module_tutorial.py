"""MXNet's Module tutorial (docs/tutorials/basic/module), top to bottom, on mxmod.

The tutorial trains an MLP on the UCI letter-recognition data (20,000 rows, 16
integer features, 26 classes): build the symbol, draw it with ``mx.viz``, train with
the intermediate-level loop (bind / init_params / init_optimizer / forward /
update_metric / backward / update), train with ``fit``, ``predict`` and ``score``,
save a checkpoint every epoch, load epoch 3 and resume training from it.

Run:  python examples/module_tutorial.py [--data letter-recognition.data] [--out out]
Without ``--data`` (mxmod never downloads) it uses synthetic letter-like data of the
same shape: 26 clusters of 16 features in 0..15. ``--fast`` shrinks the data and the
epochs (the test suite runs it that way). With Graphviz's ``dot`` installed the
network picture is written to ``<out>/module_tutorial_net.png``.
"""

import argparse
import logging
import os
import shutil

import numpy as np

import mxmod as mx


def load_letters(path):
    """The UCI file: a letter then 16 integers per line."""
    data = np.genfromtxt(path, delimiter=",")[:, 1:]
    with open(path) as f:
        label = np.array([ord(line.split(",")[0]) - ord("A") for line in f])
    return data.astype(np.float32), label.astype(np.float32)


def synthetic_letters(n, seed=0):
    """26 Gaussian clusters of 16 features, rounded and clipped to 0..15 like the UCI data."""
    rng = np.random.RandomState(seed)
    centers = rng.uniform(2, 13, size=(26, 16))
    label = rng.randint(0, 26, size=n)
    data = np.clip(np.round(centers[label] + rng.normal(0, 1.0, size=(n, 16))), 0, 15)
    return data.astype(np.float32), label.astype(np.float32)


def build_net():
    net = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(net, name="fc1", num_hidden=64)
    net = mx.sym.Activation(net, name="relu1", act_type="relu")
    net = mx.sym.FullyConnected(net, name="fc2", num_hidden=26)
    return mx.sym.SoftmaxOutput(net, name="softmax")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", help="path to letter-recognition.data (UCI)")
    parser.add_argument("--out", default="out", help="folder for checkpoints and the picture")
    parser.add_argument("--fast", action="store_true", help="small data, few epochs")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger().setLevel(logging.INFO)
    mx.random.seed(1234)
    np.random.seed(1234)
    os.makedirs(args.out, exist_ok=True)

    # Preliminary: the data, 80% for training.
    data, label = (
        load_letters(args.data) if args.data else synthetic_letters(2000 if args.fast else 20000)
    )
    batch_size = 32
    ntrain = int(data.shape[0] * 0.8)
    train_iter = mx.io.NDArrayIter(data[:ntrain, :], label[:ntrain], batch_size, shuffle=True)
    val_iter = mx.io.NDArrayIter(data[ntrain:, :], label[ntrain:], batch_size)
    epochs = (
        {"loop": 2, "fit": 3, "ckpt": 4, "resume": 6}
        if args.fast
        else {"loop": 5, "fit": 7, "ckpt": 5, "resume": 21}
    )

    # The network, drawn and summarised.
    net = build_net()
    mx.viz.print_summary(net, shape={"data": (batch_size, 16)})
    dot = mx.viz.plot_network(
        net, node_attrs={"shape": "oval", "fixedsize": "false"}, save_format="png"
    )
    if shutil.which("dot"):
        path = dot.render(filename="module_tutorial_net", directory=args.out, cleanup=True)
        print("network picture:", path)

    # Creating a module.
    mod = mx.mod.Module(
        symbol=net, context=mx.cpu(), data_names=["data"], label_names=["softmax_label"]
    )

    # Intermediate-level interface.
    mod.bind(data_shapes=train_iter.provide_data, label_shapes=train_iter.provide_label)
    mod.init_params(initializer=mx.init.Uniform(scale=0.1))
    mod.init_optimizer(optimizer="sgd", optimizer_params=(("learning_rate", 0.1),))
    metric = mx.metric.create("acc")
    for epoch in range(epochs["loop"]):
        train_iter.reset()
        metric.reset()
        for batch in train_iter:
            mod.forward(batch, is_train=True)
            mod.update_metric(metric, batch.label)
            mod.backward()
            mod.update()
        print("Epoch %d, Training %s" % (epoch, metric.get()))

    # High-level interface: fit, predict, score.
    train_iter.reset()
    mod = mx.mod.Module(
        symbol=net, context=mx.cpu(), data_names=["data"], label_names=["softmax_label"]
    )
    mod.fit(
        train_iter,
        eval_data=val_iter,
        optimizer="sgd",
        optimizer_params={"learning_rate": 0.1},
        eval_metric="acc",
        num_epoch=epochs["fit"],
    )
    y = mod.predict(val_iter)
    assert y.shape == (data.shape[0] - ntrain, 26), y.shape
    score = mod.score(val_iter, ["acc"])
    print("Accuracy score is %f" % (score[0][1]))

    # Save and load: a checkpoint every epoch, then resume from epoch 3.
    model_prefix = os.path.join(args.out, "mx_mlp")
    checkpoint = mx.callback.do_checkpoint(model_prefix)
    mod = mx.mod.Module(symbol=net)
    mod.fit(train_iter, num_epoch=epochs["ckpt"], epoch_end_callback=checkpoint)
    sym, arg_params, aux_params = mx.model.load_checkpoint(model_prefix, 3)
    assert sym.tojson() == net.tojson()
    mod.set_params(arg_params, aux_params)
    mod = mx.mod.Module(symbol=sym)
    mod.fit(
        train_iter,
        num_epoch=epochs["resume"],
        arg_params=arg_params,
        aux_params=aux_params,
        begin_epoch=3,
    )
    final = mod.score(val_iter, ["acc"])[0][1]
    print("Accuracy after resuming from epoch 3: %f" % final)
    return {"fit_accuracy": score[0][1], "resumed_accuracy": final}


if __name__ == "__main__":
    main()
