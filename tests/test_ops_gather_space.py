"""gather_nd / scatter_nd / depth_to_space / space_to_depth / diag operators."""

import numpy as np
import pytest

import mxmod as mx


def test_gather_nd_and_scatter_nd_are_inverse_on_distinct_indices():
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    idx = np.array([[1, 0], [2, 1]])
    got = mx.nd.gather_nd(mx.nd.array(data), mx.nd.array(idx)).asnumpy()
    np.testing.assert_array_equal(got, data[idx[0], idx[1]])
    back = mx.nd.scatter_nd(mx.nd.array(got), mx.nd.array(idx), shape=(2, 3, 4)).asnumpy()
    np.testing.assert_array_equal(back[idx[0], idx[1]], got)
    assert back.sum() == got.sum()
    with pytest.raises(mx.base.MXNetError, match="scatter_nd: data shape"):
        mx.sym.scatter_nd(mx.sym.Variable("d"), mx.sym.Variable("i"), shape=(2, 3)).infer_shape(
            d=(3,), i=(2, 2)
        )


def test_gather_nd_gradient_scatters_back():
    a, i = mx.sym.Variable("a"), mx.sym.Variable("i")
    exe = mx.sym.gather_nd(a, i).simple_bind(mx.cpu(), a=(3, 2), i=(1, 2), grad_req={"a": "write"})
    exe.arg_dict["i"][:] = mx.nd.array([[2, 0]])
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((2, 2))])
    assert exe.grad_dict["a"].asnumpy().tolist() == [[1, 1], [0, 0], [1, 1]]


def test_depth_space_round_trip_and_errors():
    x = np.random.RandomState(0).rand(2, 8, 3, 5).astype(np.float32)
    d2s = mx.nd.depth_to_space(mx.nd.array(x), block_size=2)
    assert d2s.shape == (2, 2, 6, 10)
    np.testing.assert_array_equal(mx.nd.space_to_depth(d2s, block_size=2).asnumpy(), x)
    with pytest.raises(mx.base.MXNetError, match="multiple of block_size"):
        mx.nd.depth_to_space(mx.nd.array(x), block_size=3)


def test_diag_extracts_and_builds():
    m = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(mx.nd.diag(mx.nd.array(m), k=1).asnumpy(), np.diag(m, 1))
    np.testing.assert_array_equal(
        mx.nd.diag(mx.nd.array([1, 2]), k=-1).asnumpy(), np.diag([1, 2], -1)
    )
