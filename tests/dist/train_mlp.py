"""A dist_sync worker (or a single-process reference run) for tests/test_dist_train.py.

    python tests/dist/train_mlp.py OUT NUM_DEVICES [--die-at-batch K] [--uneven] ...

Trains one small MLP with Module.fit on a fixed data set; the global batch of 16 rows is
split over the workers (each takes its rows of every global batch), so any number of
workers x devices sees the same batches. Writes OUT/params-rank<R>.npz (every worker),
OUT/steps-rank<R>.txt and do_checkpoint files OUT/ck-* (rank 0 only).
"""
import argparse
import logging
import os
import sys
import time

import numpy as np

import mxmod as mx

GLOBAL_BATCH = 16


def net(hidden=16):
    data = mx.sym.Variable("data")
    h = mx.sym.FullyConnected(data, num_hidden=hidden, name="fc1")
    h = mx.sym.Activation(h, act_type="relu", name="relu1")
    h = mx.sym.FullyConnected(h, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(h, name="softmax")


class HostSGD(mx.optimizer.Optimizer):
    """An optimizer whose update reads a host value (no compiled form). Not an SGD subclass:
    MXNet's Updater never calls an SGD subclass's update() (SGD's rule runs)."""

    def update(self, index, weight, grad, state):
        lr = self.learning_rate * float(grad.asnumpy().size > 0)
        weight[:] = weight - lr * grad


class DieAt:
    """Batch-end callback: this worker exits abruptly at batch ``k`` (a lost worker)."""

    def __init__(self, k):
        self.k = k

    def __call__(self, param):
        if param.nbatch == self.k:
            os._exit(7)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("num_devices", type=int)
    ap.add_argument("--die-at-batch", type=int, default=None, help="rank 1 exits there")
    ap.add_argument("--rank1-hidden", type=int, default=16, help="rank 1's fc1 width")
    ap.add_argument("--uneven", action="store_true", help="rank 1 gets one batch fewer")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--rows", type=int, default=64)
    ap.add_argument("--compress", type=float, default=None, help="2bit threshold")
    ap.add_argument("--host-optimizer", action="store_true")
    ap.add_argument("--inspect", action="store_true",
                    help="after fit: per-device gradients, outputs and predict of one batch")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO)
    job = "DMLC_ROLE" in os.environ or "JAX_PROCESS_ID" in os.environ
    kv = mx.kv.create("dist_sync") if job else None
    rank, workers = (kv.rank, kv.num_workers) if kv else (0, 1)
    rng = np.random.RandomState(0)
    x = rng.randn(args.rows, 10).astype(np.float32)
    y = rng.randint(0, 3, args.rows).astype(np.float32)
    b = GLOBAL_BATCH // workers
    rows = np.concatenate([np.arange(s, s + GLOBAL_BATCH)[rank * b:(rank + 1) * b]
                           for s in range(0, args.rows, GLOBAL_BATCH)])
    if args.uneven and rank == 1:
        rows = rows[:-b]
    it = mx.io.NDArrayIter(x[rows], y[rows], batch_size=b, shuffle=False)
    mx.random.seed(3)
    np.random.seed(3)
    ctx = [mx.cpu(i) for i in range(args.num_devices)]
    comp = {"type": "2bit", "threshold": args.compress} if args.compress else None
    mod = mx.mod.Module(net(args.rank1_hidden if rank == 1 else 16), context=ctx,
                        compression_params=comp)
    batch_cb = [DieAt(args.die_at_batch)] if args.die_at_batch is not None and rank == 1 else []
    steps = []
    batch_cb.append(lambda p: steps.append(p.nbatch))
    tic = time.time()
    opt = HostSGD(learning_rate=0.1, rescale_grad=1.0 / GLOBAL_BATCH) if args.host_optimizer \
        else "sgd"
    mod.fit(it, num_epoch=args.epochs, kvstore=kv if kv else "device", optimizer=opt,
            optimizer_params={"learning_rate": 0.1, "momentum": 0.9} if opt == "sgd" else (),
            initializer=mx.init.Xavier(), batch_end_callback=batch_cb,
            epoch_end_callback=mx.callback.do_checkpoint(os.path.join(args.out, "ck")))
    elapsed = time.time() - tic
    arg, _ = mod.get_params()
    np.savez(os.path.join(args.out, f"params-rank{rank}.npz"),
             **{k: v.asnumpy() for k, v in arg.items()})
    if args.inspect:
        it.reset()
        batch = next(iter(it))
        mod.forward_backward(batch)
        group = mod._exec_group
        look = {f"grad{k}": group.grad_arrays[0][k].asnumpy() for k in range(len(ctx))}
        look["out"] = mod.get_outputs()[0].asnumpy()
        look["out_dev1"] = mod.get_outputs(merge_multi_context=False)[0][-1].asnumpy()
        look["data_dev0"] = group.data_arrays[0][0][1].asnumpy()  # (slice, array)
        it.reset()
        look["predict"] = mod.predict(it).asnumpy()
        np.savez(os.path.join(args.out, f"inspect-rank{rank}.npz"), **look)
    with open(os.path.join(args.out, f"steps-rank{rank}.txt"), "w") as f:
        f.write(f"{len(steps)} {elapsed:.3f}\n")
    print(f"worker {rank}/{workers} done: {len(steps)} steps", file=sys.stderr)


if __name__ == "__main__":
    main()
