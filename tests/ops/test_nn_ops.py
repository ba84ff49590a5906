"""Direct tests of the conv/pool/norm/nn/rnn OpDefs: shapes vs ``jax.eval_shape``, numpy
references, small values recorded with real MXNet 1.9.1, finite differences and errors."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mxmod.base import MXNetError
from mxmod.ops import LowerCtx, get_op
from mxmod.ops.rnn import param_size


def _prep(name, attrs, shapes, node="op"):
    op = get_op(name)
    raw = {k: str(v) for k, v in attrs.items()}
    if op.variadic:
        raw[op.variadic] = str(len(shapes))
    a = op.parse(raw, node)
    n_in, n_aux = len(op.input_names(a)), len(op.aux_names(a))
    full = list(shapes) + [None] * (n_in + n_aux - len(shapes))
    ins, outs = op.run_infer_shape(a, node, full)
    return op, a, ins, outs, n_in


def run(name, attrs, *arrays, is_train=True, aux=None, key=0):
    """Lower with given inputs (missing ones random); returns (outs, new_aux, op, a)."""
    op, a, ins, outs, n_in = _prep(name, attrs, [np.shape(x) for x in arrays])
    rng = np.random.RandomState(1)
    vals = [jnp.asarray(x, jnp.float32) for x in arrays]
    vals += [jnp.asarray(rng.randn(*s), jnp.float32) for s in ins[len(arrays) : n_in]]
    aux = (
        [jnp.asarray(x) for x in aux]
        if aux is not None
        else [jnp.asarray(rng.rand(*s) + 0.5, jnp.float32) for s in ins[n_in:]]
    )
    ctx = LowerCtx(is_train=is_train, node_name="op", rng=jax.random.PRNGKey(key))
    res = jax.jit(lambda *v: op.lower(a, list(v), aux, ctx))(*vals)
    got, new_aux = res if op.aux_names(a) else (res, None)
    # shape inference agrees with the lowering, for every (hidden included) output
    spec = jax.eval_shape(lambda *v: op.lower(a, list(v), aux, ctx), *vals)
    spec = spec[0] if op.aux_names(a) else spec
    assert len(got) == op.total_outputs(a) == len(outs)
    assert [tuple(s.shape) for s in spec] == [tuple(o) for o in outs]
    return [np.asarray(o) for o in got], new_aux, op, a


def fd_check(name, attrs, *arrays, is_train=True, out=0, eps=1e-3, tol=2e-2):
    """jax.vjp of output ``out`` vs central differences along a random direction."""
    op, a, ins, _, n_in = _prep(name, attrs, [np.shape(x) for x in arrays])
    rng = np.random.RandomState(3)
    xs = [np.asarray(x, np.float64) for x in arrays]
    xs += [rng.randn(*s) for s in ins[len(arrays) : n_in]]
    aux = [jnp.asarray(rng.rand(*s) + 0.5, jnp.float32) for s in ins[n_in:]]
    ctx = LowerCtx(is_train=is_train, node_name="op", rng=jax.random.PRNGKey(0))

    @jax.jit
    def f(*v):
        res = op.lower(a, list(v), aux, ctx)
        return (res[0] if op.aux_names(a) else res)[out]

    y, vjp = jax.vjp(f, *[jnp.asarray(x, jnp.float32) for x in xs])
    w = rng.randn(*y.shape)
    grads = vjp(jnp.asarray(w, jnp.float32))
    v = [rng.randn(*x.shape) for x in xs]
    analytic = sum(float(np.sum(np.asarray(g) * d)) for g, d in zip(grads, v))

    def val(s):
        shifted = [jnp.asarray(x + s * eps * d, jnp.float32) for x, d in zip(xs, v)]
        return float(np.sum(np.asarray(f(*shifted)) * w))

    numeric = (val(1) - val(-1)) / (2 * eps)
    assert abs(analytic - numeric) <= tol * max(1.0, abs(numeric)), (analytic, numeric)


def R(*shape, seed=0):
    return np.random.RandomState(seed).randn(*shape).astype(np.float32)


# ------------------------------------------------------------------ Convolution
def np_conv2d(x, w, b, stride, pad, dilate, groups):
    n, c, h, wd = x.shape
    f, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0],) * 2, (pad[1],) * 2))
    oh = (h + 2 * pad[0] - dilate[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dilate[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, f, oh, ow))
    fg = f // groups
    for o in range(f):
        g = o // fg
        for i in range(oh):
            for j in range(ow):
                patch = xp[
                    :,
                    g * cg : (g + 1) * cg,
                    i * stride[0] : i * stride[0] + dilate[0] * (kh - 1) + 1 : dilate[0],
                    j * stride[1] : j * stride[1] + dilate[1] * (kw - 1) + 1 : dilate[1],
                ]
                out[:, o, i, j] = np.sum(patch * w[o], axis=(1, 2, 3)) + b[o]
    return out


@pytest.mark.parametrize(
    "stride,pad,dilate,groups",
    [((1, 1), (0, 0), (1, 1), 1), ((2, 1), (1, 2), (1, 2), 2), ((2, 2), (1, 1), (2, 2), 4)],
)
def test_convolution_matches_numpy(stride, pad, dilate, groups):
    x, w, b = R(2, 4, 7, 8), R(4, 4 // groups, 3, 3, seed=1), R(4, seed=2)
    attrs = dict(
        kernel=(3, 3), num_filter=4, stride=stride, pad=pad, dilate=dilate, num_group=groups
    )
    (y,), _, _, _ = run("Convolution", attrs, x, w, b)
    np.testing.assert_allclose(
        y, np_conv2d(x, w, b, stride, pad, dilate, groups), rtol=1e-4, atol=1e-4
    )


def test_convolution_mxnet_values_and_shapes():
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    w = ((np.arange(9, dtype=np.float32) - 4) / 4).reshape(1, 1, 3, 3)
    (y,), _, _, _ = run(
        "Convolution",
        dict(kernel=(3, 3), num_filter=1, no_bias=True, pad=(1, 1), stride=(2, 2)),
        x,
        w,
    )
    np.testing.assert_allclose(y, [[[[8.25, 14.5], [18.75, 19.5]]]])  # MXNet 1.9.1
    _, _, ins, outs, _ = _prep(
        "Convolution", dict(kernel=(3, 3, 3), num_filter=4, layout="NDHWC"), [(1, 5, 5, 5, 3)]
    )
    assert ins[1:] == [(4, 3, 3, 3, 3), (4,)] and outs == [(1, 3, 3, 3, 4)]
    _, _, ins, outs, _ = _prep("Convolution", dict(kernel=(3,), num_filter=2), [(2, 3, 9)])
    assert ins[1] == (2, 3, 3) and outs == [(2, 2, 7)]


def test_convolution_nhwc_equals_nchw():
    x, w, b = R(2, 6, 7, 4), R(6, 3, 3, 2, seed=1), R(6, seed=2)
    attrs = dict(kernel=(3, 3), num_filter=6, stride=(2, 1), pad=(1, 1), num_group=2)
    (y,), _, _, _ = run("Convolution", dict(attrs, layout="NHWC"), x, w, b)
    (ref,), _, _, _ = run("Convolution", attrs, x.transpose(0, 3, 1, 2), w.transpose(0, 3, 1, 2), b)
    np.testing.assert_allclose(y, ref.transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-5)


def test_deconvolution_values_shapes_and_grad():
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2) + 1
    w = np.arange(18, dtype=np.float32).reshape(1, 2, 3, 3) / 10
    attrs = dict(kernel=(3, 3), num_filter=2, stride=(2, 2), pad=(1, 1), adj=(1, 1))
    (y,), _, _, _ = run("Deconvolution", attrs, x, w)
    np.testing.assert_allclose(y[0, 0, 0], [0.4, 1.1, 0.8, 1.0], rtol=1e-5)  # MXNet 1.9.1
    np.testing.assert_allclose(y[0, 1, 3], [4.8, 11.1, 6.4, 6.8], rtol=1e-5)
    _, _, _, outs, _ = _prep("Deconvolution", attrs, [(1, 2, 4, 4)])
    assert outs == [(1, 2, 8, 8)]  # spec 11.2
    _, _, ins, outs, _ = _prep(
        "Deconvolution",
        dict(kernel=(4, 4), num_filter=4, num_group=2, stride=(2, 2), target_shape=(15, 16)),
        [(2, 6, 7, 7)],
    )
    assert ins[1] == (6, 2, 4, 4) and len(ins) == 2 and outs == [(2, 4, 15, 16)]
    fd_check(
        "Deconvolution",
        dict(
            kernel=(3, 3),
            num_filter=4,
            stride=(2, 2),
            pad=(2, 0),
            num_group=2,
            no_bias=False,
            dilate=(1, 2),
        ),
        R(1, 2, 4, 3),
    )


def test_conv_pool_errors_name_op_node_and_attribute():
    with pytest.raises(
        MXNetError,
        match=r"Convolution 'conv1': kernel \(3, 3\) does not fit "
        r"input \(2, 2\)",
    ):
        _prep("Convolution", dict(kernel=(3, 3), num_filter=2), [(1, 1, 2, 2)], node="conv1")
    with pytest.raises(
        MXNetError, match="Convolution 'c': data channels 3 must be divisible by num_group 2"
    ):
        _prep(
            "Convolution", dict(kernel=(1, 1), num_filter=2, num_group=2), [(1, 3, 4, 4)], node="c"
        )
    with pytest.raises(MXNetError, match=r"stride \(2,\) must have as many dimensions"):
        _prep("Convolution", dict(kernel=(3, 3), num_filter=2, stride=(2,)), [(1, 1, 5, 5)])
    with pytest.raises(MXNetError, match="layout 'NCW' is for 1-D data"):
        _prep("Convolution", dict(kernel=(3, 3), num_filter=2, layout="NCW"), [(1, 1, 5, 5)])
    with pytest.raises(MXNetError, match="attribute layout='NWC' is invalid"):
        get_op("Convolution").parse({"kernel": "(3,)", "num_filter": "1", "layout": "NWC"}, "c")
    with pytest.raises(MXNetError, match="required attribute 'num_filter'"):
        get_op("Convolution").parse({"kernel": "(3,)"}, "c")
    with pytest.raises(MXNetError, match=r"adj \(2, 2\) must be smaller than stride"):
        _prep(
            "Deconvolution",
            dict(kernel=(4, 4), num_filter=4, stride=(2, 2), adj=(2, 2)),
            [(1, 2, 3, 3)],
        )
    with pytest.raises(MXNetError, match="target_shape .* is too big"):
        _prep(
            "Deconvolution",
            dict(kernel=(4, 4), num_filter=4, stride=(2, 2), target_shape=(30, 16)),
            [(1, 2, 7, 7)],
        )
    with pytest.raises(MXNetError, match="Pooling 'p': kernel is required unless global_pool"):
        _prep("Pooling", {}, [(1, 1, 4, 4)], node="p")
    with pytest.raises(MXNetError, match="needs p_value"):
        _prep("Pooling", dict(kernel=(2, 2), pool_type="lp"), [(1, 1, 4, 4)])
    with pytest.raises(MXNetError, match=r"kernel \(7, 7\) does not fit input \(6, 6\)"):
        _prep("Pooling", dict(kernel=(7, 7)), [(1, 1, 6, 6)])


# ---------------------------------------------------------------------- Pooling
def test_pooling_values_recorded_with_mxnet():
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    (y,), _, _, _ = run(
        "Pooling", dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg"), x
    )
    np.testing.assert_allclose(y, [[[[10 / 9, 24 / 9], [51 / 9, 10.0]]]], rtol=1e-6)
    (y,), _, _, _ = run(
        "Pooling",
        dict(
            kernel=(3, 3),
            stride=(2, 2),
            pad=(1, 1),
            pool_type="avg",
            pooling_convention="full",
            count_include_pad=False,
        ),
        x,
    )
    np.testing.assert_allclose(y[0, 0], [[2.5, 4, 5], [8.5, 10, 11], [12.5, 14, 15]])
    # lp: signed powers and cube root, as MXNet
    x1 = np.array([[[-1.0, 2, -3, 4, 0.5, -0.5]]], np.float32)
    for p, want in [(1, [1, 1, 0]), (2, [2.236068, 5, 0.707107]), (3, [1.912931, 3.332222, 0])]:
        (y,), _, _, _ = run(
            "Pooling", dict(kernel=(2,), stride=(2,), pool_type="lp", p_value=p), x1
        )
        np.testing.assert_allclose(y.ravel(), want, rtol=1e-5, atol=1e-6)
    # 'same': windows start at i*stride, padded only at the end (sum pooling, MXNet values)
    xs = np.arange(14, dtype=np.float32).reshape(2, 1, 7)
    (y,), _, _, _ = run(
        "Pooling", dict(kernel=(3,), stride=(2,), pool_type="sum", pooling_convention="same"), xs
    )
    np.testing.assert_allclose(y[0, 0], [3, 9, 15, 6])


def test_pooling_shapes_and_hidden_workspace():
    cases = [
        (dict(kernel=(2, 2), stride=(2, 2)), (1, 1, 5, 5), (1, 1, 2, 2), 2),
        (
            dict(kernel=(2, 2), stride=(2, 2), pooling_convention="full"),
            (1, 1, 5, 5),
            (1, 1, 3, 3),
            2,
        ),
        (dict(pool_type="avg", global_pool=True), (2, 3, 4, 5), (2, 3, 1, 1), 1),
        (dict(kernel=(3, 3), layout="NHWC"), (2, 6, 6, 3), (2, 4, 4, 3), 1),
        (dict(kernel=(2, 2, 2), pool_type="sum"), (1, 2, 3, 3, 3), (1, 2, 2, 2, 2), 1),
    ]
    for attrs, shape, want, n in cases:
        outs, _, op, a = run("Pooling", attrs, R(*shape))
        assert outs[0].shape == want and op.total_outputs(a) == n
        assert op.output_names(a) == ["output"]


def test_pooling_max_grad_and_finite_differences():
    x = np.zeros((1, 1, 4, 4), np.float32)
    op, a, _, _, _ = _prep("Pooling", dict(kernel=(2, 2), stride=(2, 2)), [x.shape])
    ctx = LowerCtx(True, "p")
    g = jax.grad(lambda v: op.lower(a, [v], [], ctx)[0].sum())(jnp.asarray(x))
    assert float(g.sum()) == 4.0  # ties: one winner per window, as MXNet
    for attrs in [
        dict(
            kernel=(3, 3),
            stride=(2, 2),
            pad=(1, 1),
            pool_type="avg",
            pooling_convention="full",
            count_include_pad=False,
        ),
        dict(kernel=(2, 3), stride=(1, 2), pool_type="max"),
        dict(kernel=(2, 2), pool_type="lp", p_value=2),
    ]:
        fd_check("Pooling", attrs, R(2, 2, 5, 6))


def test_upsampling():
    x = R(1, 2, 2, 3)
    (y,), _, op, a = run("UpSampling", dict(scale=2, sample_type="nearest"), x)
    np.testing.assert_array_equal(y, x.repeat(2, 2).repeat(2, 3))
    (y,), _, _, _ = run("UpSampling", dict(scale=2, sample_type="nearest"), x, R(1, 3, 1, 1))
    assert y.shape == (1, 5, 4, 6)
    op, a, ins, outs, _ = _prep(
        "UpSampling", dict(scale=3, sample_type="bilinear", num_filter=2), [(1, 2, 4, 4)]
    )
    assert op.input_names(a) == ["data", "weight"] and ins[1] == (2, 1, 5, 5)
    assert outs == [(1, 2, 12, 12)]
    assert json.loads(op.input_attrs["weight"]["__init__"]) == ["bilinear", {}]


# -------------------------------------------------------------------- BatchNorm
def test_batchnorm_training_updates_aux_with_biased_variance():
    x = np.array([1, 3, 5, 7], np.float32).reshape(4, 1)
    outs, new_aux, op, a = run(
        "BatchNorm",
        {},
        x,
        np.ones(1),
        np.zeros(1),
        aux=[np.zeros(1, np.float32), np.ones(1, np.float32)],
    )
    np.testing.assert_allclose(np.asarray(new_aux[1]), [1.4], rtol=1e-6)  # 0.9*1 + 0.1*5
    np.testing.assert_allclose(np.asarray(new_aux[0]), [0.4], rtol=1e-6)
    np.testing.assert_allclose(outs[0].ravel(), (x.ravel() - 4) / np.sqrt(5 + 1e-3), rtol=1e-5)
    np.testing.assert_allclose(outs[2], [1 / np.sqrt(5.001)], rtol=1e-6)  # MXNet: inv std
    assert op.output_names(a) == ["output"] and op.total_outputs(a) == 3
    assert op.input_attrs == {
        "moving_mean": {"__init__": '["zero", {}]'},
        "moving_var": {"__init__": '["one", {}]'},
    }
    _, kept, _, _ = run(
        "BatchNorm", {}, x, is_train=False, aux=[np.zeros(1, np.float32), np.ones(1, np.float32)]
    )
    np.testing.assert_array_equal(np.asarray(kept[1]), [1.0])


def test_batchnorm_fix_gamma_gradient_is_zero_and_axis():
    op, a, _, _, _ = _prep("BatchNorm", {}, [(4, 3, 2)])
    aux = [jnp.zeros(3), jnp.ones(3)]
    f = lambda x, g, b: op.lower(a, [x, g, b], aux, LowerCtx(True, "bn"))[0][0]  # noqa: E731
    _, vjp = jax.vjp(f, jnp.asarray(R(4, 3, 2)), jnp.full(3, 2.0), jnp.zeros(3))
    g = vjp(jnp.asarray(R(4, 3, 2, seed=5)))
    np.testing.assert_array_equal(np.asarray(g[1]), 0.0)
    outs, _, _, _ = run("BatchNorm", dict(axis=-1, fix_gamma=False), R(2, 3, 4))
    assert outs[1].shape == (4,)
    fd_check("BatchNorm", dict(fix_gamma=False), R(4, 3, 2, 2) * 2 + 1)
    fd_check("BatchNorm", dict(fix_gamma=False, use_global_stats=True), R(4, 3, 2))


def test_batchnorm_inference_backward_is_mxnet_formula():
    # MXNet 1.9.1: backward after forward(is_train=False) uses the batch-statistics formula
    # at the moving statistics (its dx is not the derivative of the affine forward).
    x, dy = R(4, 2, seed=7).astype(np.float64), R(4, 2, seed=8).astype(np.float64)
    mm, mv = np.array([0.1, -0.2]), np.array([0.5, 2.0])
    op, a, _, _, _ = _prep("BatchNorm", {}, [x.shape])

    def f(v):
        moving = [jnp.asarray(mm, jnp.float32), jnp.asarray(mv, jnp.float32)]
        return op.lower(a, [v, jnp.ones(2), jnp.zeros(2)], moving, LowerCtx(False, "bn"))[0][0]

    _, vjp = jax.vjp(f, jnp.asarray(x, jnp.float32))
    inv = 1 / np.sqrt(mv + 1e-3)
    xhat = (x - mm) * inv
    want = inv * (dy - dy.mean(0) - xhat * (dy * xhat).mean(0))
    np.testing.assert_allclose(
        np.asarray(vjp(jnp.asarray(dy, jnp.float32))[0]), want, rtol=1e-4, atol=1e-5
    )


def test_other_norms():
    x = R(2, 3, 4)
    (y, m, s), _, _, _ = run("LayerNorm", {}, x, np.ones(4), np.zeros(4))
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-5)
    assert m.shape == s.shape == (2, 3, 1)
    (y, _, _), _, _, _ = run("InstanceNorm", {}, R(2, 3, 5, 4), np.ones(3), np.zeros(3))
    np.testing.assert_allclose(y.mean((2, 3)), 0, atol=1e-5)
    (y, n), _, _, _ = run("L2Normalization", {}, np.array([[3.0, 4.0]], np.float32))
    np.testing.assert_allclose(y, [[0.6, 0.8]], rtol=1e-6)
    xl = np.arange(4, dtype=np.float32).reshape(1, 4, 1, 1)
    (y, _), _, _, _ = run("LRN", dict(nsize=3, alpha=0.3), xl)
    np.testing.assert_allclose(y.ravel(), [0, 0.5029734, 0.7987682, 1.2252812], rtol=1e-5)
    fd_check("LRN", dict(nsize=3), R(2, 5, 2, 2))
    fd_check("LayerNorm", dict(axis=1), R(2, 3, 4))
    with pytest.raises(MXNetError, match="nsize 4 must be a positive odd number"):
        _prep("LRN", dict(nsize=4), [(1, 4, 2, 2)])


# ------------------------------------------------------------------ Dropout etc.
def test_dropout():
    x = np.ones((50, 40), np.float32)
    (y, mask), _, op, a = run("Dropout", dict(p=0.3), x)
    kept = y != 0
    np.testing.assert_allclose(y[kept], 1 / 0.7, rtol=1e-6)  # spec: 1.428571
    assert 0.6 < kept.mean() < 0.8 and op.random and op.total_outputs(a) == 2
    np.testing.assert_array_equal(mask, y)
    (y2, _), _, _, _ = run("Dropout", dict(p=0.3), x)
    np.testing.assert_array_equal(y, y2)  # same key, same mask
    (yi, _), _, _, _ = run("Dropout", dict(p=0.3), x, is_train=False)
    np.testing.assert_array_equal(yi, x)
    (ya, _), _, _, _ = run("Dropout", dict(p=0.5, mode="always"), x, is_train=False)
    assert (ya == 0).any()
    (yx, _), _, _, _ = run("Dropout", dict(p=0.5, axes=(1,)), np.ones((6, 5, 4), np.float32))
    assert (yx == yx[:, :1, :]).all()  # mask shared along axis 1
    op, a, _, _, _ = _prep("Dropout", dict(p=0.5), [(3, 3)])
    g = jax.grad(
        lambda v: op.lower(a, [v], [], LowerCtx(True, "d", jax.random.PRNGKey(0)))[0].sum()
    )(jnp.ones((3, 3)))
    (yy, _) = op.lower(a, [jnp.ones((3, 3))], [], LowerCtx(True, "d", jax.random.PRNGKey(0)))
    np.testing.assert_array_equal(np.asarray(g), np.asarray(yy))  # backward uses the mask


def test_leaky_relu_family():
    x = np.array([[-1.0, -0.5, 0.5, 1]], np.float32)
    (y,), _, _, _ = run("LeakyReLU", dict(act_type="selu"), x)
    np.testing.assert_allclose(y, [[-1.1113307, -0.6917582, 0.5253505, 1.050701]], rtol=1e-6)
    op, a, _, _, _ = _prep("LeakyReLU", dict(act_type="selu"), [x.shape])
    g = jax.grad(lambda v: op.lower(a, [v], [], LowerCtx(True, "l"))[0].sum())(jnp.asarray(x))
    np.testing.assert_allclose(g, [[0.590423, 1.0312682, 1.050701, 1.050701]], rtol=1e-5)
    (y,), _, _, _ = run("LeakyReLU", dict(act_type="gelu"), np.array([[-1.0, 2]], np.float32))
    np.testing.assert_allclose(y, [[-0.15865527, 1.9544998]], rtol=1e-6)
    (y,), _, _, _ = run("LeakyReLU", dict(slope=0.1), x)
    np.testing.assert_allclose(y, [[-0.1, -0.05, 0.5, 1]], rtol=1e-6)
    op, a, ins, _, _ = _prep("LeakyReLU", dict(act_type="prelu"), [(2, 3, 4)])
    assert ins[1] == (3,) and json.loads(op.input_attrs["gamma"]["__init__"]) == [
        "Constant",
        {"value": 0.25},
    ]
    fd_check("LeakyReLU", dict(act_type="prelu"), R(2, 3, 4))
    fd_check("LeakyReLU", dict(act_type="elu", slope=0.7), R(3, 4))
    (y, m), _, op, a = run("LeakyReLU", dict(act_type="rrelu"), x, is_train=False)
    np.testing.assert_allclose(y[0, :2], [-0.2295, -0.11475], rtol=1e-5)
    assert op.output_names(a) == ["output", "mask"]
    (y, m), _, _, _ = run("LeakyReLU", dict(act_type="rrelu"), x)
    assert ((m >= 0.125) & (m <= 0.334)).all()


def test_embedding_softmax_activation_svm():
    idx = np.array([[0, 1.7, 4], [-2, 9, 3.2]], np.float32)
    w = R(5, 3)
    (y,), _, op, a = run("Embedding", dict(input_dim=5, output_dim=3), idx, w)
    np.testing.assert_array_equal(y, w[[[0, 1, 4], [0, 4, 3]]])  # truncate, then clip
    assert op.run_infer_type(a, ["int32", None]) == (["int32", "float32"], ["float32"])
    x = R(2, 3, 4)
    (y,), _, _, _ = run("SoftmaxActivation", {}, x)
    np.testing.assert_allclose(y.sum(-1), 1, rtol=1e-6)  # MXNet: rows over the last axis
    (y,), _, _, _ = run("SoftmaxActivation", dict(mode="channel"), x)
    np.testing.assert_allclose(y.sum(1), 1, rtol=1e-6)
    op, a, ins, _, _ = _prep("SVMOutput", {}, [(4, 3)])
    assert ins[1] == (4,) and op.is_loss
    data = np.array([[0.5, -2.0, 0.3]], np.float32)
    f = lambda d: op.lower(a, [d, jnp.array([0.0])], [], LowerCtx(True, "s"))[0]  # noqa
    y, vjp = jax.vjp(f, jnp.asarray(data))
    np.testing.assert_array_equal(np.asarray(y), data)
    g = vjp(jnp.full((1, 3), 7.0))[0]  # head gradient ignored
    np.testing.assert_allclose(g, [[-1.0, 0.0, 2.6]], rtol=1e-6)  # -2c(m-x_y), 2c(m+x_j)


def test_crop_pad_and_errors():
    x = R(1, 2, 5, 6)
    (y,), _, _, _ = run("Crop", dict(h_w=(2, 3), offset=(1, 2)), x)
    np.testing.assert_array_equal(y, x[:, :, 1:3, 2:5])
    (y,), _, op, a = run("Crop", dict(center_crop=True), x, R(1, 1, 3, 4))
    np.testing.assert_array_equal(y, x[:, :, 1:4, 1:5])
    assert op.input_names(a) == ["arg0", "arg1"]
    with pytest.raises(MXNetError, match=r"Crop 'op': cannot crop \(6, 6\)"):
        _prep("Crop", dict(h_w=(6, 6)), [(1, 1, 5, 5)])
    (y,), _, _, _ = run(
        "Pad",
        dict(mode="reflect", pad_width=(0, 0, 0, 0, 2, 2, 1, 1)),
        np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3),
    )
    assert y[0, 0, 0].tolist() == [7, 6, 7, 8, 7]  # MXNet 1.9.1
    with pytest.raises(MXNetError, match="must not pad the batch and channel axes"):
        _prep("Pad", dict(mode="edge", pad_width=(0, 1, 1, 0, 0, 1, 0, 0)), [(1, 1, 3, 3)])
    with pytest.raises(MXNetError, match="must be 4-D or 5-D"):
        _prep("Pad", dict(mode="edge", pad_width=(0, 0, 1, 1)), [(3, 3)])


def test_kl_sparse_reg():
    x = np.random.RandomState(0).uniform(0.1, 0.9, (4, 3)).astype(np.float32)
    avg = np.full(3, 0.3, np.float32)
    (y,), new, op, a = run("IdentityAttachKLSparseReg", {}, x, aux=[avg])
    np.testing.assert_array_equal(y, x)
    m = 0.9 * 0.3 + 0.1 * x.mean(0)
    np.testing.assert_allclose(np.asarray(new[0]), m, rtol=1e-6)
    g = jax.grad(lambda v: op.lower(a, [v], [jnp.asarray(avg)], LowerCtx(True, "k"))[0][0].sum())(
        jnp.asarray(x)
    )
    np.testing.assert_allclose(g, 1 + 0.001 * (-0.1 / m + 0.9 / (1 - m)) + 0 * x, rtol=1e-5)


# -------------------------------------------------------------------------- RNN
def test_rnn_values_recorded_with_mxnet():
    d = np.linspace(-1, 1, 6).reshape(3, 1, 2).astype(np.float32)
    outs, _, op, a = run(
        "RNN",
        dict(mode="lstm", state_size=2, num_layers=1, state_outputs=True),
        d,
        np.linspace(-1, 1, 48),
        np.zeros((1, 1, 2)),
        np.zeros((1, 1, 2)),
    )
    np.testing.assert_allclose(
        outs[0].ravel(), [0.661233, 0.656148, 0.741878, 0.779713, 0.451482, 0.609449], rtol=1e-5
    )
    np.testing.assert_allclose(outs[2].ravel(), [0.682613, 0.959756], rtol=1e-5)
    assert op.output_names(a) == ["output", "state_output", "statecell_output"]
    outs, _, _, _ = run(
        "RNN",
        dict(mode="gru", state_size=2, num_layers=1, state_outputs=True),
        d,
        np.linspace(-1, 1, 36),
        np.full((1, 1, 2), 0.5),
    )
    np.testing.assert_allclose(
        outs[0].ravel(), [0.538299, 0.536793, 0.614094, 0.607752, 0.386544, 0.575646], rtol=1e-5
    )


def test_rnn_shapes_names_and_gradients():
    op, a, ins, outs, _ = _prep(
        "RNN",
        dict(mode="lstm", state_size=3, num_layers=2, bidirectional=True, state_outputs=True),
        [(5, 2, 4)],
    )
    assert op.input_names(a) == ["data", "parameters", "state", "state_cell"]
    assert (
        ins[1]
        == (param_size(a, 4),)
        == (4 * 3 * (4 + 3) * 2 + 4 * 3 * (6 + 3) * 2 + 2 * 4 * 3 * 4,)
    )
    assert outs == [(5, 2, 6), (4, 2, 3), (4, 2, 3)]
    fd_check(
        "RNN", dict(mode="lstm", state_size=2, num_layers=2, bidirectional=True), R(3, 2, 3) * 0.5
    )
    fd_check("RNN", dict(mode="gru", state_size=2, num_layers=1), R(3, 2, 3) * 0.5)
    with pytest.raises(NotImplementedError, match="projection_size"):
        _prep("RNN", dict(mode="lstm", state_size=2, num_layers=1, projection_size=1), [(3, 2, 3)])


def test_rnn_sequence_length_and_dropout():
    attrs = dict(
        mode="gru",
        state_size=2,
        num_layers=1,
        state_outputs=True,
        use_sequence_length=True,
        bidirectional=True,
    )
    x, lens = R(4, 2, 3), np.array([2, 4], np.float32)
    params = R(param_size(get_op("RNN").parse({k: str(v) for k, v in attrs.items()}), 3))
    (y, h), _, op, a = run("RNN", attrs, x, params, np.zeros((2, 2, 2)), lens)
    assert np.all(y[2:, 0] == 0) and not np.all(y[:, 1] == 0)
    # batch column 0 (length 2) equals running the first 2 steps alone, both directions
    (y2, _), _, _, _ = run(
        "RNN", dict(attrs, use_sequence_length=False), x[:2, :1], params, np.zeros((2, 1, 2))
    )
    np.testing.assert_allclose(y[:2, :1], y2, rtol=1e-5, atol=1e-6)
    drop = dict(mode="rnn_tanh", state_size=8, num_layers=2, p=0.5)
    (yt,), _, _, _ = run("RNN", drop, R(3, 2, 3), is_train=True, key=1)
    (yi,), _, _, _ = run("RNN", drop, R(3, 2, 3), is_train=False)
    assert not np.allclose(yt, yi)


def test_sequence_ops():
    x = np.arange(12, dtype=np.float32).reshape(3, 2, 2)
    lens = np.array([2, 3], np.float32)
    (y,), _, _, _ = run("SequenceReverse", dict(use_sequence_length=True), x, lens)
    assert y[:, 0, 0].tolist() == [4, 0, 8] and y[:, 1, 0].tolist() == [10, 6, 2]
    (y,), _, _, _ = run(
        "SequenceMask", dict(use_sequence_length=True, value=-1), x, np.array([2.7, 0], np.float32)
    )
    assert y[:, 0, 0].tolist() == [0, 4, -1] and (y[:, 1] == -1).all()
    (y,), _, _, _ = run(
        "SequenceLast", dict(use_sequence_length=True, axis=1), x, np.array([2, 1, 2], np.float32)
    )
    assert y.tolist() == [[2, 3], [4, 5], [10, 11]]
    (y,), _, _, _ = run("SequenceLast", {}, x)
    np.testing.assert_array_equal(y, x[-1])
    with pytest.raises(MXNetError, match="needs axis=0"):
        _prep("SequenceReverse", dict(axis=1), [(3, 2, 2)])
