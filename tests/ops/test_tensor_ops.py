"""Direct tests of the elemwise/shape/indexing/reduce OpDefs.

Expected values marked "MXNet" were recorded with real MXNet 1.9.1. Every `run` also
checks that shape and type inference agree with what the lowering produces.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mxmod.base import MXNetError
from mxmod.ops import LowerCtx, ShapeError, get_op


def run(name, raw, *ins, n_out=None):
    """Parse, infer, lower; check inference against the outputs; return numpy outputs."""
    op = get_op(name)
    a = op.parse(raw)
    arrs = [jnp.asarray(x) for x in ins]
    outs = jax.jit(lambda *xs: op.lower(a, list(xs), [], LowerCtx(False, "t")))(*arrs)
    _, shapes = op.run_infer_shape(a, "t", [tuple(x.shape) for x in arrs])
    _, types = op.run_infer_type(a, [np.dtype(x.dtype) for x in arrs])
    assert len(shapes) == op.total_outputs(a) and len(outs) <= len(shapes)
    for o, s, t in zip(outs, shapes, types):
        assert tuple(o.shape) == s, (name, o.shape, s)
        assert np.dtype(o.dtype) == np.dtype(t), (name, o.dtype, t)
    return [np.asarray(o) for o in outs]


def one(name, raw, *ins):
    return run(name, raw, *ins)[0]


def out_shape(name, raw, *shapes):
    op = get_op(name)
    return op.run_infer_shape(op.parse(raw), "t", list(shapes))[1]


def grad(name, raw, *ins, argnum=0, ograd=None):
    op = get_op(name)
    a = op.parse(raw)

    def f(*xs):
        y = op.lower(a, list(xs), [], LowerCtx(False, "t"))[0]
        return jnp.sum(y * (1.0 if ograd is None else ograd))

    g = jax.jit(jax.grad(f, argnums=argnum))
    return np.asarray(g(*[jnp.asarray(x, jnp.float32) for x in ins]))


def f32(*v):
    return np.array(v, np.float32)


# ------------------------------------------------------------------ aliases
@pytest.mark.parametrize(
    "alias,canon",
    [
        ("_plus", "elemwise_add"),
        ("_Plus", "elemwise_add"),
        ("_add", "elemwise_add"),
        ("_minus", "elemwise_sub"),
        ("_sub", "elemwise_sub"),
        ("_Minus", "elemwise_sub"),
        ("_mul", "elemwise_mul"),
        ("_Mul", "elemwise_mul"),
        ("_div", "elemwise_div"),
        ("_Div", "elemwise_div"),
        ("ElementWiseSum", "add_n"),
        ("identity", "_copy"),
        ("broadcast_plus", "broadcast_add"),
        ("broadcast_minus", "broadcast_sub"),
        ("cast", "Cast"),
        ("flatten", "Flatten"),
        ("reshape", "Reshape"),
        ("concat", "Concat"),
        ("split", "SliceChannel"),
        ("swapaxes", "SwapAxis"),
        ("flip", "reverse"),
        ("broadcast_axes", "broadcast_axis"),
        ("sum_axis", "sum"),
        ("max_axis", "max"),
        ("linalg_gemm2", "_linalg_gemm2"),
        ("_PlusScalar", "_plus_scalar"),
        ("crop", "slice"),
    ],
)
def test_aliases(alias, canon):
    assert get_op(alias).name == canon


# --------------------------------------------------------------- elemwise
def test_int_scalar_semantics_match_mxnet():
    a = np.array([1, 2, 3], np.int32)
    assert one("_plus_scalar", {"scalar": "2.5"}, a).tolist() == [3, 4, 5]
    assert one("_mul_scalar", {"scalar": "2.5"}, a).tolist() == [2, 4, 6]
    assert one("_div_scalar", {"scalar": "2"}, a).tolist() == [0, 1, 1]
    assert one("_rminus_scalar", {"scalar": "2.5"}, a).tolist() == [1, 0, -1]
    assert one("_greater_scalar", {"scalar": "1.5"}, a).tolist() == [0, 1, 1]
    assert one("_power_scalar", {"scalar": "2"}, a).tolist() == [1, 4, 9]
    assert one("_rdiv_scalar", {"scalar": 7.0}, a).tolist() == [7, 3, 2]
    assert one("_greater_scalar", {"scalar": 1}, a).dtype == np.int32


def test_int_division_and_mod_match_mxnet():
    a, b = np.array([-3, 3, -7], np.int32), np.array([2, 2, -2], np.int32)
    assert one("elemwise_div", {}, a, b).tolist() == [-1, 1, 3]
    assert one("_mod", {}, a, b).tolist() == [1, 1, -1]
    assert one("_rdiv_scalar", {"scalar": -7}, b).tolist() == [-3, -3, 3]
    assert one("_div_scalar", {"scalar": 2}, a).tolist() == [-1, 1, -3]
    assert one("_mod", {}, a, np.zeros(3, np.int32)).tolist() == [0, 0, 0]


def test_float_mod_and_rounding_match_mxnet():
    b = f32(-2.5, -1.5, -0.5, 0.5, 1.5, 2.5)
    np.testing.assert_array_equal(
        one("_mod_scalar", {"scalar": 2}, b), [1.5, 0.5, 1.5, 0.5, 1.5, 0.5]
    )
    np.testing.assert_array_equal(
        one("_mod_scalar", {"scalar": -2}, b), [-0.5, -1.5, -0.5, -1.5, -0.5, -1.5]
    )
    np.testing.assert_array_equal(one("_rmod_scalar", {"scalar": 3}, b), [-2, 0, 0, 0, 0, 0.5])
    np.testing.assert_array_equal(one("round", {}, b), [-3, -2, -1, 1, 2, 3])
    np.testing.assert_array_equal(one("rint", {}, b), [-3, -2, -1, 0, 1, 2])
    np.testing.assert_array_equal(one("fix", {}, b), [-2, -1, 0, 0, 1, 2])
    assert one("broadcast_mod", {}, f32(1.5, -2), f32(0, 0)).tolist() == [0, 0]


def test_unary_math_values_match_mxnet():
    np.testing.assert_allclose(one("rsqrt", {}, f32(4)), [0.5])
    np.testing.assert_allclose(one("cbrt", {}, f32(-8)), [-2], rtol=1e-6)
    np.testing.assert_allclose(one("erfinv", {}, f32(0.5)), [0.47693628], rtol=1e-5)
    np.testing.assert_allclose(one("gamma", {}, f32(4.5)), [11.631729], rtol=1e-5)
    np.testing.assert_allclose(one("gammaln", {}, f32(4.5)), [2.4537368], rtol=1e-5)
    np.testing.assert_array_equal(one("sign", {}, f32(-2, 0, 3)), [-1, 0, 1])
    np.testing.assert_allclose(one("hard_sigmoid", {}, f32(-5, 0, 1)), [0, 0.5, 0.7])
    np.testing.assert_array_equal(one("logical_not", {}, f32(0, 2)), [1, 0])
    np.testing.assert_array_equal(one("_copy", {}, f32(1, 2)), [1, 2])
    np.testing.assert_array_equal(one("ones_like", {}, f32(5, 7)), [1, 1])


def test_comparisons_and_logical_return_input_dtype():
    x, y = f32(1, 2, 3), f32(1, 3, 2)
    for name, want in [
        ("_equal", [1, 0, 0]),
        ("_not_equal", [0, 1, 1]),
        ("_greater", [0, 0, 1]),
        ("_greater_equal", [1, 0, 1]),
        ("_lesser", [0, 1, 0]),
        ("_lesser_equal", [1, 1, 0]),
        ("broadcast_lesser", [0, 1, 0]),
    ]:
        got = one(name, {}, x, y)
        assert got.dtype == np.float32 and got.tolist() == want, name
    assert one("_logical_and", {}, f32(0, 1, 2), f32(1, 0, 3)).tolist() == [0, 0, 1]
    assert one("broadcast_logical_xor", {}, f32(0, 1, 2), f32(1, 0, 3)).tolist() == [1, 1, 0]
    assert grad("_greater", {}, x, y).tolist() == [0, 0, 0]


def test_max_min_ties_and_clip_boundaries_follow_mxnet_gradients():
    a, b = f32(1, 2, 3), f32(1, 1, 4)
    assert grad("_maximum", {}, a, b).tolist() == [1, 1, 0]
    assert grad("_maximum", {}, a, b, argnum=1).tolist() == [0, 0, 1]
    assert grad("_minimum", {}, a, b).tolist() == [1, 0, 1]
    assert grad("broadcast_maximum", {}, a, b).tolist() == [1, 1, 0]
    assert grad("_maximum_scalar", {"scalar": 2}, a).tolist() == [0, 1, 1]
    assert grad("_minimum_scalar", {"scalar": 2}, a).tolist() == [1, 1, 0]
    assert grad("clip", {"a_min": "1", "a_max": "3"}, f32(0, 1, 2, 3, 4)).tolist() == [
        0,
        1,
        1,
        1,
        0,
    ]
    assert grad("relu", {}, f32(0, -1, 1)).tolist() == [0, 0, 1]
    assert grad("abs", {}, f32(0, -1, 1)).tolist() == [0, -1, 1]
    assert grad("round", {}, f32(0.3, 1.7)).tolist() == [0, 0]


def test_smooth_l1_matches_mxnet():
    np.testing.assert_allclose(
        one("smooth_l1", {}, f32(-2, -0.5, 0, 0.5, 2)), [1.5, 0.125, 0, 0.125, 1.5]
    )
    np.testing.assert_allclose(
        grad("smooth_l1", {"scalar": "2.0"}, f32(-2, -0.2, 0, 0.2, 0.25, 2)),
        [-1, -0.8, 0, 0.8, 1, 1],
        rtol=1e-6,
    )


def test_cast_and_add_n():
    got = one("Cast", {"dtype": "int32"}, f32(-1.7, 1.7, 2.5))
    assert got.dtype == np.int32 and got.tolist() == [-1, 1, 2]
    assert one("cast", {"dtype": "bool"}, f32(-1.7, 0, 2.5)).tolist() == [True, False, True]
    op = get_op("add_n")
    a = op.parse({"num_args": "3"})
    assert op.input_names(a) == ["arg0", "arg1", "arg2"]
    assert one("add_n", {"num_args": 3}, f32(1), f32(2), f32(3)).tolist() == [6]


def test_elemwise_shape_rules():
    assert out_shape("elemwise_add", {}, (2, 3), None) == [(2, 3)]
    assert out_shape("broadcast_add", {}, (2, 1, 3), (4, 1)) == [(2, 4, 3)]
    with pytest.raises(ShapeError, match="same shape"):
        out_shape("elemwise_mul", {}, (2, 3), (3, 2))
    with pytest.raises(ShapeError, match="could not be broadcast"):
        out_shape("broadcast_mul", {}, (2, 3), (4, 3))


def test_scalar_attr_defaults_and_unknown_attrs():
    op = get_op("_plus_scalar")
    assert (
        op.parse({}).scalar == 1.0
        and op.parse({"scalar": "-1.0", "is_int": "False"}).scalar == -1.0
    )
    with pytest.raises(MXNetError, match="unknown attribute 'value'.*scalar"):
        op.parse({"value": "1"})
    with pytest.raises(MXNetError, match="required attribute 'a_min'"):
        get_op("clip").parse({"a_max": "1"})


# ------------------------------------------------------------------ Reshape
@pytest.mark.parametrize(
    "shape,reverse,dshape,want",
    [
        ((0, -1), False, (2, 3, 4), (2, 12)),
        ((-3, 0), False, (2, 3, 4), (6, 4)),
        ((-4, 1, 2, -2), False, (2, 3, 4), (1, 2, 3, 4)),
        ((-2,), False, (2, 3, 4), (2, 3, 4)),
        ((-1, 0), True, (10, 5, 4), (50, 4)),
        ((0, -1), True, (2, 3, 4), (3, 8)),
        ((-1, 0), False, (2, 3, 4), (8, 3)),
        ((-4, -1, 2, 0, 0), False, (2, 3, 4), (1, 2, 3, 4)),
        ((-2, 1, 1), False, (2, 3, 4), (2, 3, 4, 1, 1)),
        ((0, 0, -4, 2, 2), False, (2, 3, 4), (2, 3, 2, 2)),
        ((-1, -3), True, (2, 3, 4), (2, 12)),
        ((0, -4, -1, 3, 0), False, (2, 3, 4), (2, 1, 3, 4)),
        ((-4, 2, -1, -2), False, (2, 3, 4), (2, 1, 3, 4)),
    ],
)
def test_reshape_codes_match_mxnet(shape, reverse, dshape, want):
    x = np.arange(np.prod(dshape), dtype=np.float32).reshape(dshape)
    got = one("Reshape", {"shape": str(shape), "reverse": str(reverse)}, x)
    assert got.shape == want
    np.testing.assert_array_equal(got.ravel(), x.ravel())


# MXNet 1.9.1's deprecated form (old symbol files): shapes printed by MXNet itself
@pytest.mark.parametrize(
    "attrs,want",
    [
        ({"target_shape": "(0, 6)"}, (4, 6)),
        ({"target_shape": "(2, 0)"}, (2, 12)),
        ({"target_shape": "(4, 6)"}, (4, 6)),
        ({"target_shape": "(3, 0)", "keep_highest": "True"}, (4, 6)),
        ({"target_shape": "(5, 0, 2)", "keep_highest": "True"}, (4, 3, 2)),
        ({"shape": "(-1,)", "target_shape": "(2, 0)"}, (24,)),  # shape= wins
    ],
)
def test_reshape_deprecated_target_shape_matches_mxnet(attrs, want):
    x = np.arange(24, dtype=np.float32).reshape(4, 3, 2)
    got = one("Reshape", attrs, x)
    assert got.shape == want
    np.testing.assert_array_equal(got.ravel(), x.ravel())


def test_reshape_errors():
    with pytest.raises(ShapeError, match="only one dim can be inferred"):
        out_shape("Reshape", {"shape": "(-1, -1)"}, (2, 3, 4))
    with pytest.raises(ShapeError, match="cannot reshape"):
        out_shape("Reshape", {"shape": "(5, 5)"}, (2, 3, 4))
    # MXNet's infer_shape accepts these and only fails when running; mxmod rejects them early
    with pytest.raises(ShapeError, match="cannot reshape"):
        out_shape("Reshape", {"shape": "(-2, 1, 1)", "reverse": True}, (2, 3, 4))
    with pytest.raises(ShapeError, match="-3 needs two input dims"):
        out_shape("Reshape", {"shape": "(-3, -3)"}, (2, 3, 4))
    with pytest.raises(ShapeError, match="no input dim to copy"):
        out_shape("Reshape", {"shape": "(0, 0, 0, 0)"}, (2, 3, 4))
    # MXNet outputs a 0-element array here (its size check is compiled out)
    with pytest.raises(ShapeError, match=r"target_shape=\(0, 0\) gives \(0, 0\)"):
        out_shape("Reshape", {"target_shape": "(0, 0)"}, (4, 3, 2))
    with pytest.raises(ShapeError, match="Reshape needs shape="):
        out_shape("Reshape", {}, (4, 3, 2))
    assert get_op("Reshape").parse({"shape": "(2, -1)", "target_shape": "()"}).shape == (2, -1)
    assert out_shape("Reshape", {"shape": "(4, 6)"}, None) == [(4, 6)]


# --------------------------------------------------------- other shape ops
def test_shape_ops_shapes_match_mxnet():
    assert out_shape("Flatten", {}, (5,)) == [(5, 1)]
    assert out_shape("Flatten", {}, (2, 3, 4)) == [(2, 12)]
    assert out_shape("squeeze", {}, (1, 1)) == [(1,)]
    assert out_shape("squeeze", {"axis": "0"}, (1, 3, 1)) == [(3, 1)]
    assert out_shape("expand_dims", {"axis": "-1"}, (2, 3)) == [(2, 3, 1)]
    assert out_shape("expand_dims", {"axis": "-3"}, (2, 3)) == [(1, 2, 3)]
    assert out_shape("stack", {"axis": "-1", "num_args": "2"}, (2, 3), (2, 3)) == [(2, 3, 2)]
    assert out_shape("SwapAxis", {"dim1": "0", "dim2": "-1"}, (2, 3, 4)) == [(4, 3, 2)]
    assert out_shape("transpose", {}, (2, 3, 4)) == [(4, 3, 2)]
    assert out_shape("tile", {"reps": "(2,)"}, (2, 2)) == [(2, 4)]
    assert out_shape("tile", {"reps": "(2, 2)"}, (2,)) == [(2, 4)]
    assert (
        out_shape("split", {"num_outputs": "4", "axis": "0", "squeeze_axis": "1"}, (4,)) == [()] * 4
    )
    assert out_shape(
        "reshape_like",
        {"lhs_begin": "0", "lhs_end": "1", "rhs_begin": "0", "rhs_end": "2"},
        (30, 7),
        (15, 2, 4),
    ) == [(15, 2, 7)]
    assert out_shape(
        "reshape_like", {"lhs_begin": "-1", "rhs_begin": "1"}, (30, 12), (4, 2, 2, 3)
    ) == [(30, 2, 2, 3)]
    assert out_shape("shape_array", {}, (2, 3, 4)) == [(3,)]


def test_shape_ops_values():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(one("transpose", {"axes": "(1, 0, 2)"}, x), x.transpose(1, 0, 2))
    np.testing.assert_array_equal(
        one("Concat", {"dim": "0", "num_args": 2}, x, x), np.concatenate([x, x])
    )
    outs = run("SliceChannel", {"num_outputs": "3"}, x)
    assert [o.shape for o in outs] == [(2, 1, 4)] * 3
    np.testing.assert_array_equal(outs[2][:, 0], x[:, 2])
    np.testing.assert_array_equal(one("repeat", {"repeats": 2}, f32(1, 2)), [1, 1, 2, 2])
    np.testing.assert_array_equal(
        one("reverse", {"axis": "(0, 1)"}, f32(1, 2, 3, 4).reshape(2, 2)), [[4, 3], [2, 1]]
    )
    np.testing.assert_array_equal(one("shape_array", {}, x), [2, 3, 4])
    np.testing.assert_array_equal(one("size_array", {}, x), [24])
    assert get_op("SliceChannel").output_names(get_op("split").parse({"num_outputs": 2})) == [
        "output0",
        "output1",
    ]


def test_shape_op_errors():
    with pytest.raises(ShapeError, match="num_outputs=2 equal parts"):
        out_shape("SliceChannel", {"num_outputs": 2}, (2, 5))
    with pytest.raises(ShapeError, match="squeeze_axis=True"):
        out_shape("SliceChannel", {"num_outputs": 2, "squeeze_axis": True}, (2, 4))
    with pytest.raises(ShapeError, match="cannot squeeze axis 0"):
        out_shape("squeeze", {"axis": "0"}, (2, 3))
    with pytest.raises(ShapeError, match="same shape"):
        out_shape("Concat", {"num_args": 2, "dim": 1}, (2, 3), (3, 3))
    with pytest.raises(ShapeError, match="not a permutation"):
        out_shape("transpose", {"axes": "(0, 0)"}, (2, 3))


def test_init_ops():
    z = one("_zeros", {"shape": "(2, 3)", "dtype": "float16"})
    assert z.shape == (2, 3) and z.dtype == np.float16 and not z.any()
    assert one("_ones", {"shape": "(2,)"}).tolist() == [1, 1]
    assert one("_full", {"shape": "(2,)", "value": "5.0"}).tolist() == [5, 5]
    assert get_op("_zeros").input_names(get_op("_zeros").parse({"shape": "(1,)"})) == []
    assert out_shape("_zeros", {"shape": "(0, 3)"}) == [None]  # decided by consumers
    op = get_op("_zeros")
    with pytest.raises(ValueError, match="unknown \\(0\\) dims"):
        op.lower(op.parse({"shape": "(0, 3)"}), [], [], LowerCtx(False, "z"))


# ------------------------------------------------------------ broadcast ops
def test_broadcast_ops():
    assert out_shape("broadcast_to", {"shape": "(2, 0)"}, (1, 3)) == [(2, 3)]
    with pytest.raises(ShapeError, match="same ndim"):
        out_shape("broadcast_to", {"shape": "(2, 3)"}, (3,))
    assert out_shape("broadcast_axis", {"axis": "(0, 2)", "size": "(3, 4)"}, (1, 2, 1)) == [
        (3, 2, 4)
    ]
    assert out_shape("broadcast_like", {}, (1, 3), (2, 3)) == [(2, 3)]
    got = one(
        "broadcast_like",
        {"lhs_axes": "(0,)", "rhs_axes": "(-1,)"},
        f32(9),
        np.ones((2, 5), np.float32),
    )
    assert got.tolist() == [9] * 5
    np.testing.assert_array_equal(
        grad("broadcast_to", {"shape": "(3, 2)"}, f32(1, 2).reshape(1, 2)), [[3, 3]]
    )
