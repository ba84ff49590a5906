"""Issue #23: operators whose integer boundaries come from float arithmetic (bins, sampling
grids, shapes) against MXNet 1.9.1 goldens on random regions and inputs
(``tests/fixtures/gen_roi_goldens.py``). Integer-bin max pooling compares exactly; averages
and interpolations to 1e-5."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import mxmod as mx

FIX = Path(__file__).parent / "fixtures" / "roi_arith"

# op file -> (mx.sym function, input names in order, outputs compared)
OPS = {
    "ROIPooling": (mx.sym.ROIPooling, ("data", "rois"), 1),
    "ROIAlign": (mx.sym.contrib.ROIAlign, ("data", "rois"), 1),
    "PSROIPooling": (mx.sym.contrib.PSROIPooling, ("data", "rois"), 1),
    "DeformablePSROIPooling": (
        mx.sym.contrib.DeformablePSROIPooling,
        ("data", "rois", "trans"),
        1,
    ),
    "AdaptiveAvgPooling2D": (mx.sym.contrib.AdaptiveAvgPooling2D, ("data",), 1),
    "Pooling": (mx.sym.Pooling, ("data",), 1),
    "UpSampling": (mx.sym.UpSampling, ("data", "weight"), 1),
    "BilinearResize2D": (mx.sym.contrib.BilinearResize2D, ("data",), 1),
    "GridGenerator": (mx.sym.GridGenerator, ("data",), 1),
    "BilinearSampler": (mx.sym.BilinearSampler, ("data", "grid"), 1),
    "SpatialTransformer": (mx.sym.SpatialTransformer, ("data", "loc"), 1),
    "argmax_channel": (mx.sym.argmax_channel, ("data",), 1),
}
EXACT = {"ROIPooling", "argmax_channel"}
ROI_OPS = {"ROIPooling", "ROIAlign", "PSROIPooling", "DeformablePSROIPooling"}


def load_cases(name: str) -> list[dict]:
    z = np.load(FIX / f"{name}.npz")
    cases: dict[int, dict] = {}
    for key in z.files:
        idx, rest = key.split(":", 1)
        cases.setdefault(int(idx[1:]), {})[rest] = z[key]
    return [cases[i] for i in sorted(cases)]


def attrs_of(case: dict) -> dict:
    out = {}
    for k, v in json.loads(str(case["attrs"])).items():
        out[k] = tuple(v) if isinstance(v, list) else v
    return out


def run_case(name: str, case: dict):
    """mxmod's outputs and input gradients (for the inputs MXNet recorded gradients of)."""
    fn, names, n_out = OPS[name]
    inputs = {k[3:]: v for k, v in case.items() if k.startswith("in:")}
    names = [n for n in names if n in inputs]
    attrs = attrs_of(case)
    if name == "UpSampling":
        attrs.pop("num_args", None)
        sym = fn(*[mx.sym.var(n) for n in names], **attrs)
    else:
        sym = fn(**{n: mx.sym.var(n) for n in names}, **attrs)
    grad_names = [k[5:] for k in case if k.startswith("grad:")]
    args = {n: mx.nd.array(inputs[n]) for n in names}
    grads = {n: mx.nd.zeros(inputs[n].shape) for n in grad_names}
    req = {n: ("write" if n in grads else "null") for n in names}
    exe = sym.bind(mx.cpu(), args=args, args_grad=grads, grad_req=req)
    outs = [o.asnumpy() for o in exe.forward(is_train=bool(grads))[:n_out]]
    if grads:
        exe.backward([mx.nd.array(case["ograd"])])
    return outs, {n: g.asnumpy() for n, g in grads.items()}


def differing_regions(name: str, got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Indices of the leading-axis entries (regions, for ROI ops) that differ."""
    if name in EXACT:
        bad = got != want
    else:
        bad = ~np.isclose(got, want, rtol=1e-5, atol=1e-5)
    return np.nonzero(bad.reshape(bad.shape[0], -1).any(1))[0]


def compare(name: str, only=None) -> tuple[list[str], int]:
    """Mismatch report and region count of the cases of ``name`` (all, or indices ``only``)."""
    cases = load_cases(name)
    report, n_regions = [], 0
    for i, case in enumerate(cases):
        if only is not None and i not in only:
            continue
        outs, grads = run_case(name, case)
        for k, got in enumerate(outs):
            want = case[f"out:{k}"]
            assert got.shape == want.shape, (name, i, k, got.shape, want.shape)
            bad = differing_regions(name, got, want)
            n_regions += want.shape[0]
            if len(bad):
                report.append(f"case {i} out {k}: rows {bad.tolist()[:10]} of {want.shape[0]}")
        for n, got in grads.items():
            want = case[f"grad:{n}"]
            if not np.allclose(got, want, rtol=1e-5, atol=1e-5):
                err = float(np.abs(got - want).max())
                report.append(f"case {i} grad {n}: max err {err:.3g} {attrs_of(case)}")
    return report, n_regions


# Quick checks of the cases where XLA's reciprocal and fused multiply-add rewrites moved bins.
QUICK = {"ROIPooling": [1], "PSROIPooling": [6], "argmax_channel": None}


@pytest.mark.parametrize("name", sorted(QUICK))
def test_quick_cases_match_mxnet(name):
    report, _ = compare(name, QUICK[name])
    assert not report, f"{name} differs from MXNet:\n" + "\n".join(report)


@pytest.mark.slow  # about 3 minutes: one compile per case
@pytest.mark.parametrize("name", sorted(OPS))
def test_outputs_and_gradients_match_mxnet(name):
    report, n_regions = compare(name)
    if name in ROI_OPS:
        assert n_regions == 300
    assert not report, f"{name} differs from MXNet:\n" + "\n".join(report)


def test_bilinear_resize_shapes_scale_in_float32():
    for case in load_cases("BilinearResize2D_shapes"):
        sym = mx.sym.contrib.BilinearResize2D(mx.sym.var("data"), **attrs_of(case))
        got = sym.infer_shape(data=tuple(int(v) for v in case["in"]))[1][0]
        assert got == tuple(int(v) for v in case["out"]), attrs_of(case)


def test_bilinear_resize_scale_height_alone_is_refused():
    x = mx.nd.ones((1, 1, 9, 9))
    with pytest.raises(mx.MXNetError, match="scale_height without scale_width"):
        mx.nd.contrib.BilinearResize2D(x, scale_height=0.7)


@pytest.mark.slow
def test_proposal_matches_mxnet():
    """Proposal/MultiProposal: anchors, the padded-cell cut ``im_info / stride`` with strides
    that are not powers of two, box clipping, min-size filter, NMS."""
    report = []
    for i, case in enumerate(load_cases("Proposal")):
        fn = mx.sym.contrib.MultiProposal if bool(case["multi"]) else mx.sym.contrib.Proposal
        names = ("cls_prob", "bbox_pred", "im_info")
        sym = fn(**{n: mx.sym.var(n) for n in names}, **attrs_of(case))
        exe = sym.bind(mx.cpu(), args={n: mx.nd.array(case[f"in:{n}"]) for n in names})
        outs = [o.asnumpy() for o in exe.forward(is_train=False)]
        for k in range(2):
            if not np.allclose(outs[k], case[f"out:{k}"], rtol=1e-5, atol=1e-4):
                report.append(f"case {i} out {k}")
    assert not report, "\n".join(report)


def test_argmax_channel_reduces_axis_1():
    x = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)[:, ::-1].copy()
    got = mx.nd.argmax_channel(mx.nd.array(x)).asnumpy()
    assert got.shape == (1, 3, 4) and (got == 0).all()
    s = mx.sym.argmax_channel(mx.sym.var("d"))
    assert s.infer_shape(d=(2, 5, 3))[1] == [(2, 3)]


def test_argmax_channel_refuses_1d_data():
    with pytest.raises(mx.MXNetError, match="argmax_channel reduces axis 1"):
        mx.nd.argmax_channel(mx.nd.array([1.0, 3.0, 2.0]))
