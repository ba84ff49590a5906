"""Imperative mx.nd (issue 24): one program per (operator, shapes, dtypes), whatever the
scalar operand or the values; not one XLA compile per JAX primitive."""

import numpy as np

import mxmod as mx
from compile_counts import count_compiles


def test_an_operator_with_new_scalars_compiles_once():
    x = mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3) + 1)
    (x + 1.0).wait_to_read()  # what any first operation compiles (moving a scalar in)
    assert count_compiles(lambda: (x * 2.0).wait_to_read()) == 1  # multiply and cast: one
    for s in (3.0, 0.5, -7):
        assert count_compiles(lambda: (x * s).wait_to_read()) == 0
        np.testing.assert_allclose((x * s).asnumpy(), x.asnumpy() * np.float32(s))
    assert count_compiles(lambda: (4.0 * x).wait_to_read()) == 1  # reversed operands
    # a comparison (equal, then 1/0 in float32) and integer division: one program each
    assert count_compiles(lambda: (x == 2.0).wait_to_read()) == 1
    i = mx.nd.array([7, -7, 9], dtype="int32")
    (i + 1).wait_to_read()
    assert count_compiles(lambda: (i / 2).wait_to_read()) == 1


def test_arrays_compile_once_per_operator_and_shapes():
    a = mx.nd.array(np.ones((2, 3), np.float32))
    b = mx.nd.array(np.full((2, 3), 2.0, np.float32))
    (a + b).wait_to_read()
    assert count_compiles(lambda: (a - b).wait_to_read()) == 1
    c = mx.nd.array(np.full((2, 3), 5.0, np.float32))
    assert count_compiles(lambda: (c - a).wait_to_read()) == 0
    np.testing.assert_array_equal((c - a).asnumpy(), np.full((2, 3), 4.0))
    assert count_compiles(lambda: (-a).wait_to_read()) == 1
    assert count_compiles(lambda: (-c).wait_to_read()) == 0


def test_results_keep_mxnets_dtype_rules():
    i = mx.nd.array([7, -7, 9], dtype="int32")
    np.testing.assert_array_equal((i / 2).asnumpy(), [3, -3, 4])  # C-style truncation
    assert (i * 1.5).dtype == np.int32  # the scalar takes the array's dtype first
    np.testing.assert_array_equal((i * 1.5).asnumpy(), [7, -7, 9])
    f = mx.nd.array([1.0, 2.0, 3.0])
    eq = f == 2.0
    assert eq.dtype == np.float32
    np.testing.assert_array_equal(eq.asnumpy(), [0, 1, 0])
    np.testing.assert_array_equal(mx.nd.maximum(f, 2.5).asnumpy(), [2.5, 2.5, 3.0])
    np.testing.assert_array_equal(mx.nd.maximum(2.5, f).asnumpy(), [2.5, 2.5, 3.0])
    np.testing.assert_array_equal((10 - f).asnumpy(), [9, 8, 7])


def test_where_is_one_program():
    x, y = mx.nd.ones((3, 2)), mx.nd.zeros((3, 2))
    rows = mx.nd.array([1, 0, 1])
    (rows + 1).wait_to_read()
    assert count_compiles(lambda: mx.nd.where(rows, x, y).wait_to_read()) == 1
    np.testing.assert_array_equal(mx.nd.where(rows, x, y).asnumpy(), [[1, 1], [0, 0], [1, 1]])
    again = mx.nd.array([0, 0, 1])
    assert count_compiles(lambda: mx.nd.where(again, y, x).wait_to_read()) == 0


def test_operators_compile_one_program_each_and_none_for_new_values():
    rng = np.random.RandomState(0)
    x = mx.nd.array(rng.rand(5, 4))
    idx = mx.nd.array([3, 0, 1, 2, 9], dtype="int32")
    (x + 1).wait_to_read()
    (idx + 1).wait_to_read()
    cases = {  # name: (call, the same call with other values, numpy's answer)
        "clip": (
            lambda: mx.nd.clip(x, 0.2, 0.7),
            lambda: mx.nd.clip(x, 0.1, 0.9),
            np.clip(x.asnumpy(), 0.2, 0.7),
        ),
        "one_hot": (
            lambda: mx.nd.one_hot(idx, 4),
            lambda: mx.nd.one_hot(idx, 4, on_value=5.0, off_value=-1.0),
            None,  # checked below
        ),
        "pick": (
            lambda: mx.nd.pick(x, idx, axis=1),
            lambda: mx.nd.pick(x, mx.nd.array([0, 1, 2, 3, 0], dtype="int32"), axis=1),
            x.asnumpy()[np.arange(5), np.clip(idx.asnumpy(), 0, 3)],
        ),
        "uniform": (
            lambda: mx.nd.random.uniform(shape=(3, 7)),
            lambda: mx.nd.random.uniform(-2.0, 2.0, shape=(3, 7)),
            None,
        ),
    }
    for name, (first, again, want) in cases.items():
        assert count_compiles(lambda: first().wait_to_read()) == 1, name
        assert count_compiles(lambda: again().wait_to_read()) == 0, name
        if want is not None:
            np.testing.assert_allclose(first().asnumpy(), want, rtol=1e-6, err_msg=name)
    # an out-of-range index is all off_value (as MXNet), and the on/off values are taken
    hot = mx.nd.one_hot(idx, 4, on_value=5.0, off_value=-1.0).asnumpy()
    want = np.full((5, 4), -1.0, np.float32)
    for row, k in enumerate(idx.asnumpy()):
        if k < 4:
            want[row, k] = 5.0
    np.testing.assert_array_equal(hot, want)
    # zeros_like / ones_like are filled on the host: no program at all
    assert count_compiles(lambda: mx.nd.zeros_like(x).wait_to_read()) == 0
    assert count_compiles(lambda: mx.nd.ones_like(x).wait_to_read()) == 0
    np.testing.assert_array_equal(mx.nd.ones_like(x).asnumpy(), np.ones((5, 4)))
