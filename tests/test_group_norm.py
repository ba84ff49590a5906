"""``GroupNorm`` (MXNet 1.9.1): per-group gamma/beta, hidden mean/std outputs, MXNet's
numbers and gradients (goldens: ``fixtures/contrib_misc/group_norm_*.npz``, recorded by
``fixtures/gen_contrib_misc_goldens.py``), a numpy reference forward and backward, finite
differences, inference, and the errors of data that does not fit."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

FIX = Path(__file__).resolve().parent / "fixtures" / "contrib_misc"


def load(case: str) -> dict:
    with np.load(FIX / f"{case}.npz") as z:
        return {k: z[k] for k in z.files}


def ref_forward(x, gamma, beta, groups, eps):
    """numpy GroupNorm: ``(output, mean, std)`` with mean/std of shape (N, groups)."""
    n = x.shape[0]
    xg = x.astype(np.float64).reshape(n, groups, -1)
    mean = xg.mean(-1, keepdims=True)
    std = np.sqrt(xg.var(-1, keepdims=True) + eps)
    y = (xg - mean) / std * gamma.reshape(1, -1, 1) + beta.reshape(1, -1, 1)
    return y.reshape(x.shape), mean.reshape(n, groups), std.reshape(n, groups)


def ref_backward(x, gamma, dy, groups, eps):
    """numpy gradients (data, gamma, beta) from the closed form MXNet's backward uses."""
    n = x.shape[0]
    xg = x.astype(np.float64).reshape(n, groups, -1)
    dyg = dy.astype(np.float64).reshape(n, groups, -1)
    mean = xg.mean(-1, keepdims=True)
    std = np.sqrt(xg.var(-1, keepdims=True) + eps)
    xhat = (xg - mean) / std
    w = dyg * gamma.reshape(1, -1, 1) / std
    dx = w - w.mean(-1, keepdims=True) - xhat * (w * xhat).mean(-1, keepdims=True)
    return dx.reshape(x.shape), (dyg * xhat).sum((0, 2)), dyg.sum((0, 2))


def run(sym, args, heads=None, is_train=True):
    """Bind ``sym`` to numpy ``args``; forward and (with ``heads``) backward."""
    ex = sym.simple_bind(mx.cpu(), **{k: v.shape for k, v in args.items()})
    for k, v in args.items():
        ex.arg_dict[k][:] = v
    outs = [o.asnumpy() for o in ex.forward(is_train=is_train)]
    if heads is not None:
        ex.backward([mx.nd.array(h) for h in heads])
    return outs, {k: g.asnumpy() for k, g in ex.grad_dict.items() if g is not None}


# -------------------------------------------------------------------- MXNet goldens
@pytest.mark.parametrize("case", ["group_norm_4d", "group_norm_3d", "group_norm_5d_one_group"])
def test_matches_mxnet(case):
    g = load(case)
    attrs = json.loads(str(g["attrs"]))
    sym = mx.sym.GroupNorm(mx.sym.var("data"), name="gn", **attrs)
    assert sym.list_outputs() == json.loads(str(g["outputs"]))
    args = {k[4:]: v for k, v in g.items() if k.startswith("arg:")}
    heads = [g[f"ograd:{i}"] for i in range(3)]  # non-zero mean/std heads: ignored
    outs, grads = run(sym, args, heads)
    for i, out in enumerate(outs):
        np.testing.assert_allclose(out, g[f"out:{i}"], rtol=1e-5, atol=1e-5)
    for name, grad in grads.items():
        np.testing.assert_allclose(grad, g[f"grad:{name}"], rtol=1e-4, atol=1e-4, err_msg=name)


# ------------------------------------------------------------- numpy reference
@pytest.mark.parametrize(
    "shape,groups,eps", [((2, 6, 4), 3, 1e-5), ((3, 4, 2, 3), 2, 1e-3), ((1, 8, 5), 8, 1e-5)]
)
def test_forward_and_backward_against_numpy(shape, groups, eps):
    rs = np.random.RandomState(sum(shape))
    x = (rs.randn(*shape) * 3 - 1).astype(np.float32)
    gamma = rs.uniform(0.5, 2, groups).astype(np.float32)
    beta = rs.randn(groups).astype(np.float32)
    dy = rs.randn(*shape).astype(np.float32)
    sym = mx.sym.GroupNorm(mx.sym.var("data"), num_groups=groups, eps=eps, output_mean_var=True)
    args = {"data": x, "groupnorm0_gamma": gamma, "groupnorm0_beta": beta}
    outs, grads = run(sym, args, [dy, np.zeros((shape[0], groups)), np.zeros((shape[0], groups))])
    for got, want in zip(outs, ref_forward(x, gamma, beta, groups, eps)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    dx, dgamma, dbeta = ref_backward(x, gamma, dy, groups, eps)
    np.testing.assert_allclose(grads["data"], dx, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(grads["groupnorm0_gamma"], dgamma, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(grads["groupnorm0_beta"], dbeta, rtol=1e-5, atol=1e-5)
    # inference runs the same normalisation (no moving statistics)
    infer, _ = run(sym, args, is_train=False)
    np.testing.assert_allclose(infer[0], outs[0], rtol=1e-6)


def test_gradient_against_finite_differences():
    rs = np.random.RandomState(0)
    sym = mx.sym.GroupNorm(mx.sym.var("data"), num_groups=2, eps=1e-3, name="gn")
    location = {
        "data": rs.randn(2, 4, 3).astype(np.float64),
        "gn_gamma": rs.uniform(0.5, 2, 2),
        "gn_beta": rs.randn(2),
    }
    mx.test_utils.check_numeric_gradient(
        sym, location, numeric_eps=1e-2, rtol=5e-2, atol=5e-3, dtype=np.float32
    )


def test_imperative_and_positional_attributes():
    rs = np.random.RandomState(1)
    x = rs.randn(2, 4, 3).astype(np.float32)
    gamma, beta = np.array([1.5, -0.5], np.float32), np.array([0.2, 0.1], np.float32)
    y = mx.nd.GroupNorm(mx.nd.array(x), mx.nd.array(gamma), mx.nd.array(beta), 2)
    np.testing.assert_allclose(y.asnumpy(), ref_forward(x, gamma, beta, 2, 1e-5)[0], atol=1e-5)
    outs = mx.nd.GroupNorm(
        mx.nd.array(x), mx.nd.array(gamma), mx.nd.array(beta), num_groups=2, output_mean_var=True
    )
    assert [o.shape for o in outs] == [(2, 4, 3), (2, 2), (2, 2)]


def test_float16_is_normalised_in_float32():
    rs = np.random.RandomState(2)
    x = (rs.randn(2, 4, 8) * 50 + 300).astype(np.float16)
    gamma, beta = np.ones(2, np.float16), np.zeros(2, np.float16)
    outs = mx.nd.GroupNorm(
        mx.nd.array(x, dtype="float16"),
        mx.nd.array(gamma, dtype="float16"),
        mx.nd.array(beta, dtype="float16"),
        num_groups=2,
        output_mean_var=True,
    )
    assert [o.dtype for o in outs] == [np.float16] * 3
    want = ref_forward(x.astype(np.float32), gamma, beta, 2, 1e-5)
    for got, ref in zip(outs, want):
        np.testing.assert_allclose(got.asnumpy(), ref, rtol=2e-3, atol=2e-3)


# ---------------------------------------------------------- shapes, types, names
def test_shapes_types_and_names():
    sym = mx.sym.GroupNorm(mx.sym.var("data"), num_groups=3, name="gn")
    assert sym.list_arguments() == ["data", "gn_gamma", "gn_beta"]
    assert sym.list_outputs() == ["gn_output"]
    args, outs, aux = sym.infer_shape(data=(2, 6, 5, 5))
    assert args == [(2, 6, 5, 5), (3,), (3,)] and outs == [(2, 6, 5, 5)] and aux == []
    full = mx.sym.GroupNorm(mx.sym.var("data"), num_groups=3, output_mean_var=True, name="gn")
    assert full.list_outputs() == ["gn_output", "gn_mean", "gn_std"]
    assert full.infer_shape(data=(2, 6, 5))[1] == [(2, 6, 5), (2, 3), (2, 3)]
    args, outs, _ = full.infer_type(data="float16")
    assert args == [np.float16] * 3 and outs == [np.float16] * 3
    # gamma's shape comes from num_groups alone, before data is known
    assert sym.infer_shape_partial()[0][1:] == [(3,), (3,)]
    loaded = mx.sym.load_json(full.tojson())
    assert loaded.infer_shape(data=(2, 6, 5))[1] == [(2, 6, 5), (2, 3), (2, 3)]
    assert json.loads(sym.tojson())["nodes"][-1]["attrs"] == {"num_groups": "3"}


def test_defaults():
    sym = mx.sym.GroupNorm(mx.sym.var("data"))
    assert sym.infer_shape(data=(2, 5, 3))[0][1:] == [(1,), (1,)]
    x = np.random.RandomState(3).randn(2, 5, 3).astype(np.float32)
    outs, _ = run(sym, {"data": x, "groupnorm0_gamma": np.ones(1), "groupnorm0_beta": np.zeros(1)})
    np.testing.assert_allclose(
        outs[0], ref_forward(x, np.ones(1), np.zeros(1), 1, 1e-5)[0], atol=1e-5
    )


# ------------------------------------------------------------------------ errors
def test_channels_not_divisible_by_groups():
    sym = mx.sym.GroupNorm(mx.sym.var("data"), num_groups=4)
    with pytest.raises(MXNetError, match=r"6 channels .* num_groups=4 does not divide.*1, 2, 3, 6"):
        sym.infer_shape(data=(2, 6, 3))
    with pytest.raises(MXNetError, match="num_groups=4 does not divide"):
        mx.nd.GroupNorm(mx.nd.ones((2, 6, 3)), mx.nd.ones((4,)), mx.nd.zeros((4,)), num_groups=4)


def test_data_needs_three_dims():
    with pytest.raises(MXNetError, match=r"data \(2, 6\) must have at least 3 dims"):
        mx.sym.GroupNorm(mx.sym.var("data"), num_groups=2).infer_shape(data=(2, 6))


def test_gamma_holds_one_value_per_group():
    with pytest.raises(MXNetError, match=r"gamma given \(6,\) .* needs \(2,\)"):
        mx.nd.GroupNorm(mx.nd.ones((2, 6, 3)), mx.nd.ones((6,)), mx.nd.zeros((6,)), num_groups=2)


def test_num_groups_must_be_positive():
    with pytest.raises(MXNetError, match="num_groups=.0. is invalid: expected an integer >= 1"):
        mx.sym.GroupNorm(mx.sym.var("data"), num_groups=0)
