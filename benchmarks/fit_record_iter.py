"""Does ImageRecordIter keep Module.fit fed? Time the same fit fed by ImageRecordIter
(JPEG decode + random crop/mirror + mean/std on worker threads, prefetched) and by
NDArrayIter over the already-decoded images in memory (issue 11: <= 10% slower).

A temporary .rec of small JPEGs (36x36, cropped to 32x32), a small conv net, batch 64,
SGD; one warm-up epoch (compilation) then ``--epochs`` timed epochs per feeder, the two
alternating ``--repeats`` times (best of each counts; the CPUs may be shared).

    python3 benchmarks/fit_record_iter.py [--images 1024] [--epochs 2] [--repeats 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

import mxmod as mx  # noqa: E402

MEAN, STD = (125.0, 123.0, 114.0), (63.0, 62.0, 66.0)


def make_rec(path, n, seed=0):
    """``n`` 36x36 JPEGs whose class (0-9) sets their colour pattern."""
    rng = np.random.RandomState(seed)
    w = mx.recordio.MXIndexedRecordIO(path[:-4] + ".idx", path, "w")
    yy, xx = np.mgrid[0:36, 0:36].astype(np.float32)
    for i in range(n):
        c = i % 10
        img = np.stack(
            [
                128 + 90 * np.sin(xx / (2 + c) + rng.rand() * 6),
                128 + 90 * np.cos(yy / (3 + c) + rng.rand() * 6),
                np.full_like(xx, 25 * c),
            ],
            axis=2,
        )
        img = np.clip(img + rng.randint(-30, 30, img.shape), 0, 255).astype(np.uint8)
        w.write_idx(
            i, mx.recordio.pack_img(mx.recordio.IRHeader(0, float(c), i, 0), img, quality=90)
        )
    w.close()


def in_memory(rec, batch_size):
    """Center-cropped, normalized images of ``rec`` as an NDArrayIter."""
    it = mx.io.ImageRecordIter(
        path_imgrec=rec,
        data_shape=(3, 32, 32),
        batch_size=batch_size,
        mean_r=MEAN[0],
        mean_g=MEAN[1],
        mean_b=MEAN[2],
        std_r=STD[0],
        std_g=STD[1],
        std_b=STD[2],
        round_batch=False,
    )
    data, label = [], []
    for b in it:
        data.append(b.data[0].asnumpy()[: batch_size - b.pad])
        label.append(b.label[0].asnumpy()[: batch_size - b.pad])
    return mx.io.NDArrayIter(
        np.concatenate(data),
        np.concatenate(label),
        batch_size=batch_size,
        shuffle=True,
        last_batch_handle="discard",
    )


def net():
    x = mx.sym.Variable("data")
    for i, nf in enumerate((32, 64)):
        x = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=nf, name=f"conv{i}")
        x = mx.sym.Activation(x, act_type="relu")
        x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max")
    x = mx.sym.FullyConnected(mx.sym.Flatten(x), num_hidden=10, name="fc")
    return mx.sym.SoftmaxOutput(x, name="softmax")


def timed_fit(train, epochs):
    mod = mx.mod.Module(net(), context=mx.cpu())
    kw = dict(
        optimizer="sgd",
        optimizer_params={"learning_rate": 0.05, "momentum": 0.9},
        initializer=mx.init.Xavier(),
        eval_metric="acc",
    )
    mod.fit(train, num_epoch=1, **kw)  # warm-up: compilation
    t0 = time.perf_counter()
    mod.fit(train, begin_epoch=1, num_epoch=1 + epochs, **kw)
    return time.perf_counter() - t0, mod.score(train, "acc")[0][1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=1024)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    bs = 64
    with tempfile.TemporaryDirectory() as tmp:
        rec = os.path.join(tmp, "small.rec")
        make_rec(rec, args.images)
        feeders = {
            "NDArrayIter (in memory)": lambda: in_memory(rec, bs),
            "ImageRecordIter": lambda: mx.io.ImageRecordIter(
                path_imgrec=rec,
                path_imgidx=rec[:-4] + ".idx",
                data_shape=(3, 32, 32),
                batch_size=bs,
                shuffle=True,
                rand_crop=True,
                rand_mirror=True,
                mean_r=MEAN[0],
                mean_g=MEAN[1],
                mean_b=MEAN[2],
                std_r=STD[0],
                std_g=STD[1],
                std_b=STD[2],
                round_batch=False,
                preprocess_threads=2,
            ),
        }
        best = {}
        for rep in range(args.repeats):
            for name, make in feeders.items():
                secs, acc = timed_fit(make(), args.epochs)
                best[name] = min(best.get(name, float("inf")), secs)
                print(
                    f"run {rep}: {name:24s} {secs:6.2f} s for {args.epochs} epochs "
                    f"({args.images * args.epochs / secs:7.1f} images/s), train acc {acc:.2f}"
                )
        mem, rec_t = best["NDArrayIter (in memory)"], best["ImageRecordIter"]
        print(
            f"best: in memory {mem:.2f} s, ImageRecordIter {rec_t:.2f} s; ImageRecordIter "
            f"costs {100 * (rec_t / mem - 1):+.1f}% ({os.cpu_count()} CPU cores)"
        )


if __name__ == "__main__":
    main()
