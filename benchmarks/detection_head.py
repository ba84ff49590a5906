"""A Faster R-CNN head, forward + backward per image: mxmod against real MXNet 1.9.1.

The head is what mx-rcnn/simpledet build on top of the backbone: ``contrib.Proposal`` on RPN
outputs over a 38x50 stride-16 feature map (a 600x800 image; 9 anchors per cell, 6000 boxes
before NMS, 300 after), ``contrib.ROIAlign`` (7x7, sample_ratio 2) of a 256-channel feature
map, then two 1024-unit FC layers with ReLU and a ``MakeLoss`` of their mean. One step is
``Module.forward(is_train=True)`` + ``Module.backward()`` (gradients for the FC layers and,
``inputs_need_grad``, for the feature map: what flows on into the backbone) then a wait on
the feature-map gradient and ``mx.nd.waitall()``; the figure is the best of ``--repeat``
timed rounds of ``--steps`` steps after a warm-up, over ``--rounds`` alternations of the
two frameworks.

The same script runs the MXNet side in a child process when a Python with mxnet 1.9.1 is
given (``--mxnet-python``, default ``$MXNET_PYTHON``: the MXNet venv of
tests/fixtures/README.md); both sides use identical inputs and weights.

Run:  MXNET_PYTHON=... python3 benchmarks/detection_head.py [--steps 5] [--repeat 2] [--rounds 3]
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

FEAT = (1, 256, 38, 50)
N_ANCHOR = 9
SHAPES = {
    "data": FEAT,
    "cls_prob": (1, 2 * N_ANCHOR, 38, 50),
    "bbox_pred": (1, 4 * N_ANCHOR, 38, 50),
    "im_info": (1, 3),
}


def head(mx):
    """The symbol, built with either framework's ``mx``."""
    data, cls = mx.sym.Variable("data"), mx.sym.Variable("cls_prob")
    bbox, info = mx.sym.Variable("bbox_pred"), mx.sym.Variable("im_info")
    rois = mx.sym.contrib.Proposal(
        cls,
        bbox,
        info,
        feature_stride=16,
        scales=(8, 16, 32),
        ratios=(0.5, 1, 2),
        rpn_pre_nms_top_n=6000,
        rpn_post_nms_top_n=300,
        threshold=0.7,
        rpn_min_size=16,
        name="rois",
    )
    pool = mx.sym.contrib.ROIAlign(
        data, rois, pooled_size=(7, 7), spatial_scale=1 / 16, sample_ratio=2, name="roi_pool"
    )
    fc6 = mx.sym.Activation(
        mx.sym.FullyConnected(pool, num_hidden=1024, name="fc6"), act_type="relu"
    )
    fc7 = mx.sym.Activation(
        mx.sym.FullyConnected(fc6, num_hidden=1024, name="fc7"), act_type="relu"
    )
    return mx.sym.MakeLoss(mx.sym.mean(fc7), name="loss")


def inputs():
    rng = np.random.RandomState(0)
    vals = {
        "data": rng.randn(*FEAT),
        "cls_prob": rng.uniform(0, 1, SHAPES["cls_prob"]),
        "bbox_pred": rng.randn(*SHAPES["bbox_pred"]) * 0.1,
        "im_info": np.array([[600, 800, 1]]),
        "fc6_weight": rng.randn(1024, 256 * 49) * 0.01,
        "fc6_bias": np.zeros(1024),
        "fc7_weight": rng.randn(1024, 1024) * 0.03,
        "fc7_bias": np.zeros(1024),
    }
    return {k: v.astype(np.float32) for k, v in vals.items()}


def setup(mx):
    """A bound Module and its step function for the framework ``mx``."""
    names = ("data", "cls_prob", "bbox_pred", "im_info")
    vals = inputs()
    mod = mx.mod.Module(head(mx), data_names=names, label_names=None, context=mx.cpu())
    mod.bind(data_shapes=[(n, SHAPES[n]) for n in names], for_training=True, inputs_need_grad=True)
    mod.init_params(
        arg_params={k: mx.nd.array(v) for k, v in vals.items() if k not in names},
        allow_missing=False,
    )
    batch = mx.io.DataBatch(data=[mx.nd.array(vals[n]) for n in names], label=None)

    def step():
        mod.forward(batch, is_train=True)
        mod.backward()
        mod.get_input_grads()[0].wait_to_read()  # also flushes mxmod's deferred step
        mx.nd.waitall()

    step()
    return mod, step


def timed(step, steps, repeat):
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(steps):
            step()
        best = min(best, (time.perf_counter() - t) / steps)
    return best * 1e3


def summary(mod, ms):
    grads = dict(zip(mod._exec_group.param_names, mod._exec_group.grad_arrays))
    g6 = grads["fc6_weight"]
    g6 = g6[0] if isinstance(g6, list) else g6
    return {
        "ms_per_image": ms,
        "loss": float(mod.get_outputs()[0].asnumpy().ravel()[0]),
        "grad_fc6": float(np.abs(g6.asnumpy()).sum()),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="alternate mxmod and MXNet this many times (best of each is kept), so "
        "that a busy machine slows both alike",
    )
    p.add_argument(
        "--mxnet-python",
        default=os.environ.get("MXNET_PYTHON", ""),
        help="a python with mxnet 1.9.1; the comparison is skipped without one",
    )
    p.add_argument("--worker", choices=("mxnet",), help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker == "mxnet":
        import mxnet

        mod, step = setup(mxnet)
        print(json.dumps(summary(mod, timed(step, a.steps, a.repeat))))
        return
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import mxmod

    mod, step = setup(mxmod)
    with_mxnet = bool(a.mxnet_python and os.path.exists(a.mxnet_python))
    ours, ref = None, None
    for _ in range(a.rounds):
        got = summary(mod, timed(step, a.steps, a.repeat))
        ours = got if ours is None or got["ms_per_image"] < ours["ms_per_image"] else ours
        if with_mxnet:
            out = subprocess.run(
                [
                    a.mxnet_python,
                    os.path.abspath(__file__),
                    "--worker",
                    "mxnet",
                    "--steps",
                    str(a.steps),
                    "--repeat",
                    str(a.repeat),
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            got = json.loads(out.stdout.strip().splitlines()[-1])
            ref = got if ref is None or got["ms_per_image"] < ref["ms_per_image"] else ref
    print(
        f"mxmod            : {ours['ms_per_image']:8.1f} ms/image  "
        f"({1e3 / ours['ms_per_image']:.2f} images/s, loss {ours['loss']:.6f})"
    )
    if ref is None:
        print("real MXNet 1.9.1 : skipped (give --mxnet-python or set MXNET_PYTHON)")
        return
    print(
        f"real MXNet 1.9.1 : {ref['ms_per_image']:8.1f} ms/image  "
        f"({1e3 / ref['ms_per_image']:.2f} images/s, loss {ref['loss']:.6f})"
    )
    print(
        f"speed: mxmod is {ref['ms_per_image'] / ours['ms_per_image']:.2f}x MXNet "
        f"(target >= 1.0); |loss diff| {abs(ref['loss'] - ours['loss']):.2e}, "
        f"|grad fc6| {ours['grad_fc6']:.4f} vs {ref['grad_fc6']:.4f}"
    )


if __name__ == "__main__":
    main()
