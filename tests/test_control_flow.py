"""``mx.nd.contrib.foreach``/``while_loop``/``cond`` (MXNet's imperative control flow; the
values below were checked on MXNet 1.9.1) and ``mx.sym.contrib``'s, which mxmod refuses."""

import numpy as np
import pytest

import mxmod as mx


def test_foreach_stacks_nested_outputs_and_carries_states():
    def step(x, states):
        s = states[0] + x
        return [s * 2, x.sum()], [s]

    x = mx.nd.array(np.arange(6.0).reshape(3, 2))
    outs, states = mx.nd.contrib.foreach(step, x, [mx.nd.zeros((2,))])
    assert [o.shape for o in outs] == [(3, 2), (3, 1)]
    np.testing.assert_array_equal(outs[0].asnumpy(), [[0, 2], [4, 8], [12, 18]])
    np.testing.assert_array_equal(outs[1].asnumpy().ravel(), [1, 5, 9])
    np.testing.assert_array_equal(states[0].asnumpy(), [6, 9])


def test_foreach_over_a_list_of_arrays():
    a, b = mx.nd.array([[1.0], [2.0]]), mx.nd.array([[10.0], [20.0]])
    outs, state = mx.nd.contrib.foreach(
        lambda xs, s: (xs[0] + xs[1], s + xs[0]), [a, b], mx.nd.zeros((1,))
    )
    np.testing.assert_array_equal(outs.asnumpy().ravel(), [11, 22])
    np.testing.assert_array_equal(state.asnumpy(), [3])
    with pytest.raises(ValueError, match="same length on axis 0"):
        mx.nd.contrib.foreach(lambda xs, s: (xs[0], s), [a, mx.nd.ones((3, 1))], mx.nd.zeros((1,)))


def test_while_loop_pads_to_max_iterations():
    def body(i, s):
        return [i * 10], [i + 1, s + i]

    outs, (i, s) = mx.nd.contrib.while_loop(
        lambda i, s: i < 3, body, [mx.nd.array([0]), mx.nd.array([0])], max_iterations=5
    )
    np.testing.assert_array_equal(outs[0].asnumpy().ravel(), [0, 10, 20, 0, 0])
    assert (i.asscalar(), s.asscalar()) == (3, 3)
    # max_iterations stops it first
    outs, i = mx.nd.contrib.while_loop(lambda i: i < 100, lambda i: (i, i + 1), mx.nd.array([0]), 4)
    np.testing.assert_array_equal(outs.asnumpy().ravel(), [0, 1, 2, 3])
    assert i.asscalar() == 4
    with pytest.raises(ValueError, match="max_iterations must be given"):
        mx.nd.contrib.while_loop(lambda i: i < 3, lambda i: (i, i + 1), mx.nd.array([0]))
    with pytest.raises(ValueError, match="returned 1 loop variables for 2"):
        mx.nd.contrib.while_loop(
            lambda i, s: i < 3, lambda i, s: (i, [i]), [mx.nd.array([0]), mx.nd.array([0])], 3
        )


def test_cond_picks_a_branch():
    then, other = (lambda: mx.nd.ones((2,))), (lambda: mx.nd.zeros((2,)))
    assert mx.nd.contrib.cond(mx.nd.array([2.0]) > 1, then, other).asnumpy().sum() == 2
    assert mx.nd.contrib.cond(0, then, other).asnumpy().sum() == 0
    with pytest.raises(ValueError, match="single value"):
        mx.nd.contrib.cond(mx.nd.ones((2,)), then, other)
