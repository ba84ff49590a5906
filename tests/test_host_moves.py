"""Small CPU arrays: indexing writes and view reads move data with numpy (issue 24: no XLA
program per shape for a short job's imperative indexing), with the values XLA gives."""

import jax
import numpy as np

import mxmod as mx
from compile_counts import count_compiles
from mxmod.ndarray import _device


def test_small_views_and_writes_compile_nothing_and_match_numpy():
    ref = np.arange(24, dtype=np.float32).reshape(4, 6)
    a = mx.nd.array(ref)
    columns = [mx.nd.array(np.full(4, n, np.float32)) for n in range(4)]

    def work():
        for n in range(1, 4):  # a new shape each time
            a[n] = n * 10.0
            ref[n] = n * 10.0
            a[:, n] = columns[n]
            ref[:, n] = n
            np.testing.assert_array_equal(a[n].asnumpy(), ref[n])  # a view read
        a[[0, 2], 1] = 7
        ref[[0, 2], 1] = 7

    assert count_compiles(work) == 0
    np.testing.assert_array_equal(a.asnumpy(), ref)


def test_large_or_traced_arrays_keep_xla():
    big = jax.numpy.zeros(_device.HOST_MOVE_ELEMENTS + 1)
    assert not _device.on_host(big)
    assert _device.on_host(jax.numpy.zeros(4))
    seen = []
    jax.jit(lambda x: seen.append(_device.on_host(x)) or x)(jax.numpy.zeros(4))
    assert seen == [False]


def test_out_of_range_indices_keep_xla_rules():
    a = mx.nd.zeros((3,))
    a[mx.nd.array([5], dtype="int32")] = 1.0  # XLA drops an out-of-range scatter
    np.testing.assert_array_equal(a.asnumpy(), [0, 0, 0])
