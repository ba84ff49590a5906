"""MXNet 1.9.1 contrib operators: ``BatchNormWithReLU``, ``index_array``, ``allclose``,
``box_encode``/``box_decode`` and the straight-through estimators ``round_ste``/``sign_ste``.

Goldens (``fixtures/contrib_misc/``, recorded by ``fixtures/gen_contrib_misc_goldens.py``)
for BatchNormWithReLU and the box coders; numpy references written here for the rest.
Expected values typed in below (allclose's edge cases, output names) were checked on
MXNet 1.9.1.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

FIX = Path(__file__).resolve().parent / "fixtures" / "contrib_misc"
INT64 = np.dtype(jax.dtypes.canonicalize_dtype(np.int64))  # int32 unless x64 is on


def load(case: str) -> dict:
    with np.load(FIX / f"{case}.npz") as z:
        return {k: z[k] for k in z.files}


def group(g: dict, prefix: str) -> dict:
    return {k[len(prefix) :]: v for k, v in g.items() if k.startswith(prefix)}


def bind(sym, args: dict, aux: dict | None = None, grad_req="write"):
    ex = sym.simple_bind(mx.cpu(), grad_req=grad_req, **{k: v.shape for k, v in args.items()})
    for k, v in args.items():
        ex.arg_dict[k][:] = v
    for k, v in (aux or {}).items():
        ex.aux_dict[k][:] = v
    return ex


def forward_backward(sym, args, heads, aux=None):
    ex = bind(sym, args, aux)
    outs = [o.asnumpy() for o in ex.forward(is_train=True)]
    ex.backward([mx.nd.array(h) for h in heads])
    grads = {k: g.asnumpy() for k, g in ex.grad_dict.items() if g is not None}
    return outs, grads, {k: v.asnumpy() for k, v in ex.aux_dict.items()}


# ------------------------------------------------------------ BatchNormWithReLU
BN_CASES = ["bn_relu_axis1", "bn_relu_fixed_gamma", "bn_relu_global_stats"]


def _bn_relu(case):
    g = load(case)
    attrs = json.loads(str(g["attrs"]))
    return g, mx.sym.contrib.BatchNormWithReLU(mx.sym.var("data"), name="bn", **attrs)


@pytest.mark.parametrize("case", BN_CASES)
def test_bn_relu_training_step_matches_mxnet(case):
    g, sym = _bn_relu(case)
    assert sym.list_outputs() == json.loads(str(g["outputs"]))
    heads = [g[f"ograd:{i}"] for i in range(len(sym.list_outputs()))]
    outs, grads, aux = forward_backward(sym, group(g, "arg:"), heads, group(g, "aux:"))
    for i, out in enumerate(outs):
        np.testing.assert_allclose(out, g[f"out:{i}"], rtol=1e-5, atol=1e-5)
    assert (outs[0] >= 0).all() and (outs[0] == 0).any()
    for name, want in group(g, "grad:").items():
        np.testing.assert_allclose(grads[name], want, rtol=1e-4, atol=1e-5, err_msg=name)
    for name, want in group(g, "auxout:").items():
        np.testing.assert_allclose(aux[name], want, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("case", BN_CASES)
def test_bn_relu_inference_matches_mxnet(case):
    g, sym = _bn_relu(case + "_inference")
    ex = bind(sym, group(g, "arg:"), group(g, "aux:"), grad_req="null")
    for i, out in enumerate(ex.forward(is_train=False)):
        np.testing.assert_allclose(out.asnumpy(), g[f"out:{i}"], rtol=1e-5, atol=1e-5)


def test_bn_relu_is_relu_of_batchnorm_in_both_modes():
    rs = np.random.RandomState(5)
    args = {
        "data": rs.randn(3, 2, 4, 5).astype(np.float32),
        "bn_gamma": np.array([1.5, 0.7], np.float32),
        "bn_beta": np.array([0.2, -0.3], np.float32),
    }
    aux = {"bn_moving_mean": np.array([0.1, -0.2], np.float32), "bn_moving_var": np.ones(2)}
    dy = rs.randn(3, 2, 4, 5).astype(np.float32)
    d = mx.sym.var("data")
    fused = mx.sym.contrib.BatchNormWithReLU(d, fix_gamma=False, name="bn")
    plain = mx.sym.relu(mx.sym.BatchNorm(d, fix_gamma=False, name="bn"))
    for is_train in (True, False):
        results = []
        for sym in (fused, plain):
            ex = bind(sym, args, aux)
            out = ex.forward(is_train=is_train)[0].asnumpy()
            ex.backward(mx.nd.array(dy))
            results.append((out, {k: v.asnumpy() for k, v in ex.grad_dict.items()}))
        (o1, g1), (o2, g2) = results
        np.testing.assert_allclose(o1, o2, rtol=1e-6, atol=1e-6)
        for k in g1:
            np.testing.assert_allclose(g1[k], g2[k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_bn_relu_slots_shapes_and_types():
    sym = mx.sym.contrib.BatchNormWithReLU(mx.sym.var("data"), name="bn")
    assert sym.list_arguments() == ["data", "bn_gamma", "bn_beta"]
    assert sym.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert sym.list_outputs() == ["bn_output"]
    assert mx.sym.contrib.BatchNormWithReLU(mx.sym.var("x")).name == "batchnormwithrelu0"
    full = mx.sym.contrib.BatchNormWithReLU(mx.sym.var("data"), output_mean_var=True, name="bn")
    assert full.list_outputs() == ["bn_output", "bn_mean", "bn_var"]
    args, outs, aux = full.infer_shape(data=(2, 3, 4, 4))
    assert args == [(2, 3, 4, 4), (3,), (3,)] and aux == [(3,), (3,)]
    assert outs == [(2, 3, 4, 4), (3,), (3,)]
    args, outs, aux = full.infer_type(data="float16")
    assert args == [np.float16, np.float32, np.float32] and aux == [np.float32] * 2
    assert outs == [np.float16, np.float32, np.float32]
    op = mx.ops.get_op("_contrib_BatchNormWithReLU")
    assert op.total_outputs(op.parse({})) == 4  # + MXNet's hidden ``workspace``
    assert list(op.params) == list(mx.ops.get_op("BatchNorm").params)
    nodes = {n["name"]: n for n in json.loads(full.tojson())["nodes"]}
    assert nodes["bn_moving_mean"]["attrs"]["__init__"] == '["zero", {}]'
    assert nodes["bn_moving_var"]["attrs"]["__init__"] == '["one", {}]'


# ------------------------------------------------------------------- index_array
def ref_index_array(shape, axes=None):
    grid = np.indices(shape)  # (ndim, *shape)
    axes = range(len(shape)) if axes is None else [a % len(shape) for a in axes]
    return np.stack([grid[a] for a in axes], axis=-1) if axes else np.zeros(shape + (0,))


@pytest.mark.parametrize(
    "shape,axes",
    [((3, 2), None), ((3, 2, 2), (1, 0)), ((2, 3, 4), (-1,)), ((4,), None), ((2, 3), ())],
)
def test_index_array(shape, axes):
    kwargs = {} if axes is None else {"axes": axes}
    got = mx.nd.contrib.index_array(mx.nd.ones(shape), **kwargs)
    assert got.dtype == INT64
    np.testing.assert_array_equal(got.asnumpy(), ref_index_array(shape, axes))


def test_index_array_documented_example_and_wrapping_axes():
    got = mx.nd.contrib.index_array(mx.nd.ones((3, 2)))
    assert got.asnumpy().tolist() == [[[0, 0], [0, 1]], [[1, 0], [1, 1]], [[2, 0], [2, 1]]]
    # MXNet takes every axis modulo ndim (2 -> 0, 5 -> 1 for 2-D data)
    wrapped = mx.nd.contrib.index_array(mx.nd.ones((3, 2)), axes=(2, 5)).asnumpy()
    np.testing.assert_array_equal(wrapped, ref_index_array((3, 2), (0, 1)))


def test_index_array_symbol_types_and_zero_gradient():
    sym = mx.sym.contrib.index_array(mx.sym.var("data"), axes=(0,))
    assert sym.list_outputs() == ["index_array0_output"]
    assert sym.infer_shape(data=(2, 3))[1] == [(2, 3, 1)]
    assert sym.infer_type(data="float16")[1] == [INT64]
    ex = bind(sym, {"data": np.ones((2, 3), np.float32)})
    out = ex.forward(is_train=True)[0]
    np.testing.assert_array_equal(out.asnumpy()[..., 0], [[0, 0, 0], [1, 1, 1]])
    ex.backward(mx.nd.ones(out.shape, dtype=out.dtype))
    np.testing.assert_array_equal(ex.grad_dict["data"].asnumpy(), np.zeros((2, 3)))


# ---------------------------------------------------------------------- allclose
def ref_allclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=True):
    """MXNet's rule in float32: ``a == b or |a - b| <= atol + rtol * |b|`` per element."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    rhs = np.float32(atol) + np.float32(rtol) * np.abs(b)
    with np.errstate(invalid="ignore"):
        close = (a == b) | (np.abs(a - b) <= rhs)
    nan = np.isnan(a) | np.isnan(b)
    close = np.where(nan, equal_nan & (np.isnan(a) == np.isnan(b)), close)
    return int(close.all())


def allclose(a, b, dtype="float32", **kw):
    out = mx.nd.contrib.allclose(mx.nd.array(a, dtype=dtype), mx.nd.array(b, dtype=dtype), **kw)
    assert out.shape == () and out.dtype == np.uint8
    return int(out.asnumpy())


def test_allclose_random_against_reference():
    rs = np.random.RandomState(7)
    for _ in range(40):
        b = rs.randn(3, 4).astype(np.float32) * 10 ** rs.randint(-3, 4)
        rtol, atol = 10.0 ** rs.randint(-4, -1), 10.0 ** rs.randint(-8, -2)
        a = b + (rs.rand() * 2 * (atol + rtol * np.abs(b))).astype(np.float32) * rs.choice([-1, 1])
        want = ref_allclose(a, b, rtol, atol)
        assert allclose(a, b, rtol=rtol, atol=atol) == want


def test_allclose_cases_checked_on_mxnet():
    assert allclose([1e10, 1e-7], [1.00001e10, 1e-8]) == 0
    assert allclose([1e10, 1e-8], [1.00001e10, 1e-9]) == 0  # float32 tolerance: 0
    nan, inf = float("nan"), float("inf")
    assert allclose([nan, 1], [nan, 1]) == 1  # equal_nan defaults to True
    assert allclose([nan, 1], [nan, 1], equal_nan=False) == 0
    assert allclose([nan, 1], [1, 1]) == 0
    assert allclose([inf, 1], [inf, 1]) == 1
    assert allclose([inf], [-inf]) == 1  # |inf - -inf| <= atol + rtol * inf
    # the tolerance scales with |b| only
    assert allclose([1.0], [1.1], rtol=0.091, atol=0) == 1
    assert allclose([1.1], [1.0], rtol=0.091, atol=0) == 0
    assert allclose([1, 2], [1, 3], dtype="int32", atol=1) == 1
    assert allclose([1, 2], [1, 4], dtype="int32", atol=1) == 0
    assert allclose([1, 2], [1, 2], dtype="float16") == 1


def test_allclose_symbol_and_errors():
    sym = mx.sym.contrib.allclose(mx.sym.var("a"), mx.sym.var("b"), rtol=0.1)
    assert sym.list_arguments() == ["a", "b"]
    assert sym.infer_shape(a=(2, 3), b=(2, 3))[1] == [()]
    assert sym.infer_type(a="float64", b="float64")[1] == [np.uint8]
    ex = bind(sym, {"a": np.ones((2, 3)), "b": np.full((2, 3), 1.05)}, grad_req="null")
    assert int(ex.forward()[0].asnumpy()) == 1
    with pytest.raises(MXNetError, match="non-differentiable"):
        sym.simple_bind(mx.cpu(), a=(2, 3), b=(2, 3))
    with pytest.raises(MXNetError, match=r"a \(2,\) and b \(3,\) must have the same shape"):
        mx.nd.contrib.allclose(mx.nd.ones((2,)), mx.nd.ones((3,)))
    with pytest.raises(MXNetError, match=r"does not broadcast"):
        sym.infer_shape(a=(2, 3), b=(3,))
    with pytest.raises(MXNetError, match=r"a \(float32\) and b \(int32\) must have the same dtype"):
        mx.nd.contrib.allclose(mx.nd.ones((2,)), mx.nd.ones((2,), dtype="int32"))


# ------------------------------------------------------------ round_ste, sign_ste
def ref_round(x):  # C's round, in float64 so that 0.49999997 stays below 0.5
    x = np.asarray(x, np.float64)
    return (np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(np.float32)


@pytest.mark.parametrize("name", ["round_ste", "sign_ste"])
def test_ste_forward_and_identity_gradient(name):
    rs = np.random.RandomState(11)
    x = np.concatenate(
        [rs.randn(30) * 4, [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999997, -0.49999997, 0]]
    ).astype(np.float32)
    want = ref_round(x) if name == "round_ste" else np.sign(x)
    np.testing.assert_array_equal(getattr(mx.nd.contrib, name)(mx.nd.array(x)).asnumpy(), want)
    sym = getattr(mx.sym.contrib, name)(mx.sym.var("x"))
    assert sym.list_outputs() == [f"{name}0_output"]
    dy = rs.randn(x.size).astype(np.float32)
    outs, grads, _ = forward_backward(sym, {"x": x}, [dy])
    np.testing.assert_array_equal(outs[0], want)
    np.testing.assert_array_equal(grads["x"], dy)  # straight through, not round's 0


def test_ste_documented_examples_and_special_values():
    rnd = mx.nd.contrib.round_ste(mx.nd.array([-1.5, 1.5, -1.9, 1.9, 2.7]))
    assert rnd.asnumpy().tolist() == [-2.0, 2.0, -2.0, 2.0, 3.0]
    sgn = mx.nd.contrib.sign_ste(mx.nd.array([-2, 0, 3, float("nan")]))
    assert sgn.asnumpy().tolist() == [-1.0, 0.0, 1.0, 0.0]  # MXNet's sign(NaN) is 0
    ints = mx.nd.contrib.round_ste(mx.nd.array([1, -2], dtype="int32"))
    assert ints.dtype == np.int32 and ints.asnumpy().tolist() == [1, -2]
    half = mx.nd.contrib.round_ste(mx.nd.array([0.5, -2.5], dtype="float16"))
    assert half.dtype == np.float16 and half.asnumpy().tolist() == [1.0, -3.0]


def test_ste_gradient_through_a_network():
    # a quantised weight: the gradient reaches w through round_ste as if it were identity
    x, w = mx.sym.var("x"), mx.sym.var("w")
    sym = mx.sym.sum(x * mx.sym.contrib.round_ste(w * 4) / 4)
    xs = np.array([1.0, -2.0, 3.0], np.float32)
    _, grads, _ = forward_backward(sym, {"x": xs, "w": np.array([0.3, 0.1, -0.6])}, [np.ones(1)])
    np.testing.assert_allclose(grads["w"], xs)
    np.testing.assert_allclose(grads["x"], [0.25, 0.0, -0.5])


# ---------------------------------------------------------------- box_encode/decode
def ref_box_encode(samples, matches, anchors, refs, means, stds):
    def center(b):
        w, h = b[..., 2] - b[..., 0], b[..., 3] - b[..., 1]
        return b[..., 0] + w / 2, b[..., 1] + h / 2, w, h

    ref = np.take_along_axis(refs, matches.astype(int)[..., None].repeat(4, -1), axis=1)
    rx, ry, rw, rh = center(ref)
    ax, ay, aw, ah = center(anchors)
    t = np.stack([(rx - ax) / aw, (ry - ay) / ah, np.log(rw / aw), np.log(rh / ah)], -1)
    valid = (samples > 0.5)[..., None]
    return np.where(valid, (t - means) / stds, 0), np.broadcast_to(valid, t.shape).astype(float)


def ref_box_decode(data, anchors, stds, clip, fmt):
    a = anchors.reshape(1, -1, 4).astype(np.float64)
    if fmt == "corner":
        w, h = a[..., 2] - a[..., 0], a[..., 3] - a[..., 1]
        a = np.stack([a[..., 0] + w / 2, a[..., 1] + h / 2, w, h], -1)
    d = data * np.asarray(stds)
    if clip > 0:
        d[..., 2:] = np.minimum(d[..., 2:], clip)
    cx, cy = d[..., 0] * a[..., 2] + a[..., 0], d[..., 1] * a[..., 3] + a[..., 1]
    hw, hh = np.exp(d[..., 2]) * a[..., 2] / 2, np.exp(d[..., 3]) * a[..., 3] / 2
    return np.stack([cx - hw, cy - hh, cx + hw, cy + hh], -1)


def test_box_encode_matches_mxnet_and_reference():
    g = load("box_encode")
    names = ["samples", "matches", "anchors", "refs", "means", "stds"]
    sym = mx.sym.contrib.box_encode(*[mx.sym.var(n) for n in names])
    assert sym.list_outputs() == json.loads(str(g["outputs"]))
    args = group(g, "arg:")
    outs, grads, _ = forward_backward(sym, args, [g["ograd:0"], g["ograd:1"]])
    for i, out in enumerate(outs):
        np.testing.assert_allclose(out, g[f"out:{i}"], rtol=1e-5, atol=1e-5)
    for got, want in zip(outs, ref_box_encode(*[args[n] for n in names])):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    for name in names:  # MXNet: zero gradients for every input
        np.testing.assert_array_equal(grads[name], g[f"grad:{name}"])
        assert not grads[name].any()


@pytest.mark.parametrize(
    "case",
    [
        "box_decode_center_clip-1",
        "box_decode_center_clip0.5",
        "box_decode_corner_clip-1",
        "box_decode_corner_clip0.5",
    ],
)
def test_box_decode_matches_mxnet_and_reference(case):
    g = load(case)
    attrs = json.loads(str(g["attrs"]))
    sym = mx.sym.contrib.box_decode(mx.sym.var("data"), mx.sym.var("anchors"), **attrs)
    assert sym.list_outputs() == json.loads(str(g["outputs"]))
    args = group(g, "arg:")
    outs, grads, _ = forward_backward(sym, args, [g["ograd:0"]])
    np.testing.assert_allclose(outs[0], g["out:0"], rtol=1e-5, atol=1e-4)
    stds = [attrs[f"std{i}"] for i in range(4)]
    want = ref_box_decode(args["data"], args["anchors"], stds, attrs["clip"], attrs["format"])
    np.testing.assert_allclose(outs[0], want, rtol=1e-5, atol=1e-4)
    assert not grads["data"].any() and not grads["anchors"].any()


def test_box_decode_round_trips_box_encode():
    rs = np.random.RandomState(4)
    xy = rs.uniform(0, 5, (1, 6, 2))
    anchors = np.concatenate([xy, xy + rs.uniform(0.5, 3, (1, 6, 2))], -1).astype(np.float32)
    xy = rs.uniform(0, 5, (1, 2, 2))
    refs = np.concatenate([xy, xy + rs.uniform(0.5, 3, (1, 2, 2))], -1).astype(np.float32)
    matches = np.array([[0, 1, 1, 0, 1, 0]], np.float32)
    stds = np.array([0.1, 0.1, 0.2, 0.2], np.float32)
    targets, masks = mx.nd.contrib.box_encode(
        mx.nd.ones((1, 6)),
        mx.nd.array(matches),
        mx.nd.array(anchors),
        mx.nd.array(refs),
        mx.nd.zeros((4,)),
        mx.nd.array(stds),
    )
    assert masks.asnumpy().all()
    decoded = mx.nd.contrib.box_decode(
        targets, mx.nd.array(anchors), 0.1, 0.1, 0.2, 0.2, format="corner"
    )
    np.testing.assert_allclose(decoded.asnumpy()[0], refs[0][matches[0].astype(int)], atol=1e-5)


def test_box_coding_shapes_and_errors():
    names = ["samples", "matches", "anchors", "refs", "means", "stds"]
    enc = mx.sym.contrib.box_encode(*[mx.sym.var(n) for n in names])
    args, outs, _ = enc.infer_shape(anchors=(2, 5, 4), refs=(2, 3, 4))
    assert args == [(2, 5), (2, 5), (2, 5, 4), (2, 3, 4), (4,), (4,)]
    assert outs == [(2, 5, 4), (2, 5, 4)]
    assert enc.infer_type(samples="float64")[1] == [np.float64] * 2
    with pytest.raises(MXNetError, match=r"samples \(2, 5, 1\) must be 2-D"):
        enc.infer_shape(samples=(2, 5, 1), anchors=(2, 5, 4), refs=(2, 3, 4))
    with pytest.raises(MXNetError, match=r"anchors \(2, 5, 3\) must be 3-D with a last dim"):
        enc.infer_shape(anchors=(2, 5, 3), refs=(2, 3, 4))
    with pytest.raises(MXNetError, match=r"samples \(2, 4\) does not fit \(2, 5\)"):
        enc.infer_shape(samples=(2, 4), anchors=(2, 5, 4), refs=(2, 3, 4))
    with pytest.raises(MXNetError, match=r"means \(3,\) must be \(4,\)"):
        mx.nd.contrib.box_encode(
            *[mx.nd.ones(s) for s in [(1, 2), (1, 2), (1, 2, 4), (1, 1, 4), (3,), (4,)]]
        )
    dec = mx.sym.contrib.box_decode(mx.sym.var("data"), mx.sym.var("anchors"))
    assert dec.list_arguments() == ["data", "anchors"]
    assert dec.infer_shape(data=(2, 5, 4), anchors=(1, 5, 4))[1] == [(2, 5, 4)]
    with pytest.raises(MXNetError, match=r"data \(2, 5\) must be 3-D"):
        dec.infer_shape(data=(2, 5), anchors=(1, 5, 4))
    with pytest.raises(MXNetError, match=r"anchors \(2, 5, 4\) must hold one box per anchor"):
        mx.nd.contrib.box_decode(mx.nd.ones((2, 5, 4)), mx.nd.ones((2, 5, 4)))
    with pytest.raises(MXNetError, match="format"):
        mx.sym.contrib.box_decode(mx.sym.var("data"), mx.sym.var("anchors"), format="xywh")


def test_straight_through_estimators_keep_sparse_storage():
    # MXNet 1.9.1: mx.nd.sparse._contrib_round_ste(csr) -> csr [[0, 2], [-3, 0]];
    # _contrib_sign_ste(row_sparse) -> row_sparse [[0, 1], [-1, 0]]; dense in, dense out
    x = mx.nd.array([[0, 1.5], [-2.5, 0]])
    rounded = mx.nd.sparse._contrib_round_ste(x.tostype("csr"))
    assert rounded.stype == "csr"
    np.testing.assert_array_equal(rounded.asnumpy(), [[0, 2], [-3, 0]])
    signs = mx.nd.sparse._contrib_sign_ste(x.tostype("row_sparse"))
    assert signs.stype == "row_sparse"
    np.testing.assert_array_equal(signs.asnumpy(), [[0, 1], [-1, 0]])
    assert mx.nd.contrib.round_ste(x.tostype("csr")).stype == "csr"
    dense = mx.nd.sparse._contrib_round_ste(mx.nd.array([0.5, -0.5, 1.49]))
    assert dense.stype == "default"
    np.testing.assert_array_equal(dense.asnumpy(), [1, -1, 1])
    node = mx.sym.sparse._contrib_round_ste(mx.sym.var("a"))
    assert node.get_internals().list_outputs() == ["a", "_contrib_round_ste0_output"]
