"""Direct tests of the indexing and reduction OpDefs (helpers in test_tensor_ops.py).

Expected values marked "MXNet" were recorded with real MXNet 1.9.1.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mxmod.base import MXNetError
from mxmod.ops import LowerCtx, ShapeError, get_op

from .test_tensor_ops import f32, grad, one, out_shape, run


# ----------------------------------------------------------------- indexing
def test_slices():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    got = one("slice", {"begin": "(None, -1)", "end": "(None, None)", "step": "(1, -1)"}, x)
    np.testing.assert_array_equal(got, x[:, ::-1])
    np.testing.assert_array_equal(
        one(
            "slice", {"begin": "(None, None, 3)", "end": "(None, None, 0)", "step": "(1, 1, -2)"}, x
        )[0, 0],
        [3, 1],
    )
    assert one("slice", {"begin": "(0, 5)", "end": "(1, 6)"}, x).shape == (1, 0, 4)
    assert one("slice", {"begin": "(-10,)", "end": "(10,)"}, x).shape == (2, 3, 4)
    np.testing.assert_array_equal(
        one("slice_axis", {"axis": -1, "begin": -3, "end": "None"}, x), x[..., 1:]
    )
    with pytest.raises(ShapeError, match="not a valid range"):
        out_shape("slice_axis", {"axis": 1, "begin": 1, "end": 5}, (2, 3, 4))
    assert out_shape("slice_like", {"axes": "(-1,)"}, (3, 4), (2, 3)) == [(3, 3)]
    with pytest.raises(ShapeError, match="exceeds"):
        out_shape("slice_like", {}, (3, 4), (2, 5))
    g = grad("slice_axis", {"axis": 0, "begin": 1, "end": 2}, f32(1, 2, 3))
    assert g.tolist() == [0, 1, 0]


def test_take_pick_one_hot_where_match_mxnet():
    v = f32(4, 5, 6)
    assert one("take", {}, v, f32(-1, 1.7, 5)).tolist() == [4, 5, 6]
    assert one("take", {"mode": "wrap"}, v, f32(-1, 1.7, 5, -4)).tolist() == [6, 5, 6, 6]
    assert out_shape("take", {"axis": 1}, (2, 3, 4), (5, 6)) == [(2, 5, 6, 4)]
    assert grad("take", {}, v, f32(0, 0, 2)).tolist() == [2, 0, 1]
    with pytest.raises(NotImplementedError, match="mode='raise'"):
        get_op("take").parse({"mode": "raise"})
    m = f32(1, 2, 3, 4).reshape(2, 2)
    assert one("pick", {}, m, f32(0, 5)).tolist() == [1, 4]
    assert one("pick", {"mode": "wrap"}, m, f32(-1, 3)).tolist() == [2, 4]
    assert one("pick", {"axis": 0, "keepdims": True}, m, f32(1, 0)).tolist() == [[3, 2]]
    assert out_shape("pick", {}, (2, 3), None) == [(2,)]
    with pytest.raises(MXNetError, match="axis=None is not supported"):
        out_shape("pick", {"axis": "None"}, (2, 3), (2,))
    oh = one("one_hot", {"depth": 3, "on_value": 5, "off_value": -1}, f32(-1, 0, 2, 3, 1.7))
    np.testing.assert_array_equal(
        oh, [[-1, -1, -1], [5, -1, -1], [-1, -1, 5], [-1, -1, -1], [-1, 5, -1]]
    )
    assert one("one_hot", {"depth": 2, "dtype": "int32"}, f32(1)).dtype == np.int32
    w = one("where", {}, f32(1, 0), np.ones((2, 3), np.float32), np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(w, [[1, 1, 1], [0, 0, 0]])
    assert grad("where", {}, f32(1, 0), f32(1, 1), f32(2, 2), argnum=2).tolist() == [0, 1]


def test_sort_argsort_topk_match_mxnet():
    x = f32(3, 1, 2, 1, 5, 0).reshape(2, 3)
    np.testing.assert_array_equal(
        one("topk", {"k": 2, "ret_typ": "mask"}, x), [[1, 0, 1], [1, 1, 0]]
    )
    np.testing.assert_array_equal(
        one("topk", {"k": 0, "ret_typ": "value"}, x), [[3, 2, 1], [5, 1, 0]]
    )
    vals, idx = run("topk", {"axis": "None", "k": 2, "ret_typ": "both"}, x)
    assert vals.tolist() == [5, 3] and idx.tolist() == [4, 0]
    np.testing.assert_array_equal(one("topk", {"k": 2, "is_ascend": True}, x), [[1, 2], [2, 0]])
    np.testing.assert_array_equal(one("sort", {"axis": "None"}, x), [0, 1, 1, 2, 3, 5])
    got = one("argsort", {"is_ascend": False, "dtype": "int32"}, x)
    assert got.dtype == np.int32 and got.tolist() == [[0, 2, 1], [1, 0, 2]]
    t = f32(1, 3, 3, 1)  # ties keep input order, as MXNet's stable sort
    assert one("argsort", {"is_ascend": "False"}, t).tolist() == [1, 2, 0, 3]
    assert one("argsort", {}, t).tolist() == [0, 3, 1, 2]
    assert one("topk", {"k": 3}, t).tolist() == [1, 2, 0]
    assert one("topk", {"k": 3, "is_ascend": 1}, t).tolist() == [0, 3, 1]
    assert len(run("sort", {}, t)) == 2  # visible output0 plus MXNet's hidden indices
    op = get_op("topk")
    assert op.output_names(op.parse({"ret_typ": "value"})) == ["output0"]
    assert op.total_outputs(op.parse({"ret_typ": "value"})) == 2
    assert op.output_names(op.parse({})) == ["output"]
    assert grad("topk", {"k": 1, "ret_typ": "value"}, f32(1, 3, 2)).tolist() == [0, 1, 0]
    with pytest.raises(ShapeError, match="k=4 is larger"):
        out_shape("topk", {"k": 4}, (2, 3))


# ---------------------------------------------------------------- reductions
def test_reduce_shapes_match_mxnet():
    s = (2, 3, 4)
    assert out_shape("sum", {}, s) == [(1,)]
    assert out_shape("sum", {"keepdims": True}, s) == [(1, 1, 1)]
    assert out_shape("sum", {"axis": "()"}, s) == [(1,)]
    assert out_shape("sum", {"axis": "1", "exclude": True}, s) == [(3,)]
    assert out_shape("sum", {"axis": "(0, 2)", "exclude": True}, s) == [(2, 4)]
    assert out_shape("sum", {"axis": "None", "exclude": True}, s) == [(1,)]
    assert out_shape("sum", {"axis": "(0, 1, 2)", "exclude": True}, s) == [s]
    assert out_shape("sum", {"axis": "0"}, (3,)) == [(1,)]
    assert out_shape("argmax", {}, s) == [(1,)]
    assert out_shape("argmax", {"keepdims": True}, s) == [(1, 1, 1)]
    assert out_shape("argmax", {"axis": 1, "keepdims": True}, s) == [(2, 1, 4)]
    assert out_shape("norm", {"ord": 1, "axis": "(1, 2)"}, s) == [(2,)]
    with pytest.raises(ShapeError, match="duplicates"):
        out_shape("sum", {"axis": "(0, 0)"}, s)
    with pytest.raises(ShapeError, match="axis=3 is out of range"):
        out_shape("sum", {"axis": "3"}, s)


def test_reduce_values_and_gradients_match_mxnet():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_allclose(
        one("sum", {"axis": "(0, 2)", "keepdims": 1}, x), x.sum((0, 2), keepdims=True)
    )
    np.testing.assert_allclose(one("mean", {"axis": "1", "exclude": True}, x), x.mean((0, 2)))
    assert one("mean", {}, np.array([1, 2], np.int32)).tolist() == [1]
    assert one("nansum", {}, f32(1, np.nan)).tolist() == [1]
    assert one("nanprod", {}, f32(2, np.nan)).tolist() == [2]
    np.testing.assert_allclose(one("norm", {"axis": "1"}, f32(3, 4, 0, 0).reshape(2, 2)), [5, 0])
    np.testing.assert_allclose(one("norm", {"ord": 1}, f32(3, -4, 0, 1).reshape(2, 2)), [8])
    assert one("argmax_channel", {}, f32(0, 1, 2, 5, 4, 3).reshape(2, 3)).tolist() == [2, 0]
    assert one("argmax", {"axis": 1}, f32(1, 3, 3).reshape(1, 3)).tolist() == [1]
    am = one("argmin", {"axis": 1}, np.array([[1, 1, 3]], np.int32))
    assert am.dtype == np.int32 and am.tolist() == [0]
    g = grad("max", {"axis": 1}, f32(1, 3, 3, 2, 2, 1).reshape(2, 3))
    np.testing.assert_array_equal(g, [[0, 1, 1], [1, 1, 0]])  # MXNet: full gradient to ties
    np.testing.assert_array_equal(grad("min", {}, f32(1, 3, 1)), [1, 0, 1])
    with pytest.raises(NotImplementedError, match="ord=3"):
        get_op("norm").parse({"ord": "3"})


def test_softmax_family_match_mxnet():
    v = f32(1, 2, 3)
    np.testing.assert_allclose(
        one("softmax", {"temperature": "2.0"}, v), [0.18632373, 0.3071959, 0.5064804], rtol=1e-5
    )
    np.testing.assert_allclose(
        one("log_softmax", {}, v), [-2.4076037, -1.4076039, -0.40760383], rtol=1e-5
    )
    np.testing.assert_allclose(
        one("softmin", {}, v), [0.66524094, 0.24472848, 0.09003057], rtol=1e-5
    )
    assert one("softmax", {"dtype": "float16"}, v).dtype == np.float16
    with_length = get_op("softmax").parse({"use_length": "True"})
    assert get_op("softmax").input_names(with_length) == ["data", "length"]
    assert get_op("softmax").input_names(get_op("softmax").parse({"use_length": "False"})) == [
        "data"
    ]
    data, label = f32(1, 2, 3, 1, 1, 1).reshape(2, 3), f32(2, 0)
    np.testing.assert_allclose(
        one("softmax_cross_entropy", {}, data, label), [1.5062183], rtol=1e-5
    )
    p = np.exp(data) / np.exp(data).sum(1, keepdims=True)
    np.testing.assert_allclose(
        grad("softmax_cross_entropy", {}, data, label), p - np.eye(3)[[2, 0]], rtol=1e-5
    )


def test_dot_family():
    assert out_shape("dot", {}, (3,), (3,)) == [(1,)]
    assert out_shape("dot", {}, (3,), (3, 4)) == [(4,)]
    assert out_shape("dot", {"transpose_a": True}, (3, 2, 5), (3, 4)) == [(2, 5, 4)]
    assert out_shape("dot", {"transpose_b": True}, (2, 5, 3), (4, 7, 3)) == [(2, 5, 4, 7)]
    assert out_shape("batch_dot", {"transpose_b": True}, (2, 3, 4), (2, 5, 4)) == [(2, 3, 5)]
    assert out_shape("batch_dot", {}, (2, 2, 3, 4), (2, 2, 4, 5)) == [(2, 2, 3, 5)]
    assert out_shape("linalg_gemm2", {}, (2, 3, 4), (2, 4, 5)) == [(2, 3, 5)]
    with pytest.raises(ShapeError, match="contract axes of sizes 4 and 3"):
        out_shape("dot", {}, (2, 4), (3, 2))
    rng = np.random.RandomState(0)
    a, b = rng.randn(3, 2, 5).astype(np.float32), rng.randn(3, 4).astype(np.float32)
    np.testing.assert_allclose(
        one("dot", {"transpose_a": True}, a, b),
        np.einsum("kij,kl->ijl", a, b),
        rtol=1e-5,
        atol=1e-5,
    )
    A, B = rng.randn(2, 4, 3).astype(np.float32), rng.randn(2, 4, 5).astype(np.float32)
    np.testing.assert_allclose(
        one("_linalg_gemm2", {"transpose_a": True, "alpha": 2}, A, B),
        2 * np.einsum("bki,bkj->bij", A, B),
        rtol=1e-5,
        atol=1e-5,
    )
    # a row axis other than -2 is MXNet's swapaxes/gemm/swapaxes (issue #23)
    np.testing.assert_allclose(
        one("_linalg_gemm2", {"axis": -3, "transpose_a": 1}, A.swapaxes(0, 1), B.swapaxes(0, 1)),
        np.einsum("bki,bkj->ibj", A, B),
        rtol=1e-5,
        atol=1e-5,
    )


@pytest.mark.parametrize(
    "name,raw,shapes",
    [
        ("dot", {"transpose_b": True}, [(2, 3), (4, 3)]),
        ("batch_dot", {"transpose_a": True}, [(2, 3, 4), (2, 3, 5)]),
        ("softmax", {"axis": 0}, [(3, 4)]),
        ("log_softmax", {}, [(3, 4)]),
        ("norm", {"axis": "1"}, [(3, 4)]),
        ("Reshape", {"shape": "(-1, 2)"}, [(3, 4)]),
        ("Concat", {"num_args": 2}, [(2, 3), (2, 2)]),
        ("broadcast_hypot", {}, [(2, 3), (1, 3)]),
        ("_rpower_scalar", {"scalar": 2}, [(3,)]),
        ("mean", {"axis": 0}, [(3, 4)]),
        ("prod", {"axis": 1}, [(3, 4)]),
    ],
)
def test_gradients_match_finite_differences(name, raw, shapes):
    op = get_op(name)
    a = op.parse(raw)
    rng = np.random.RandomState(1)
    xs = [rng.uniform(0.5, 1.5, s) for s in shapes]
    w = rng.randn(*op.run_infer_shape(a, "t", shapes)[1][0])
    ctx = LowerCtx(False, "t")

    @jax.jit
    def f(*ins):
        return jnp.sum(op.lower(a, list(ins), [], ctx)[0] * w)

    with jax.enable_x64(True):
        xs64 = [jnp.asarray(x, jnp.float64) for x in xs]
        grads = jax.grad(f, argnums=tuple(range(len(xs))))(*xs64)
        for i, x in enumerate(xs):
            v = rng.randn(*x.shape)
            eps = 1e-6
            up = [x + eps * v if j == i else xx for j, xx in enumerate(xs)]
            dn = [x - eps * v if j == i else xx for j, xx in enumerate(xs)]
            fd = (float(f(*map(jnp.asarray, up))) - float(f(*map(jnp.asarray, dn)))) / (2 * eps)
            np.testing.assert_allclose(float(jnp.sum(grads[i] * v)), fd, rtol=1e-5, atol=1e-7)
