"""mx.nd.contrib.edge_id / dgl_adjacency / dgl_subgraph: the values MXNet 1.9.1 gives for
its documentation's graph (recorded from the real thing)."""

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

pytestmark = pytest.mark.filterwarnings("ignore:.*int64")


def graph():
    data = np.arange(1, 11)
    indices = np.array([1, 2, 3, 4, 0, 2, 3, 4, 0, 1])
    indptr = np.array([0, 4, 5, 8, 10, 10])
    return mx.nd.sparse.csr_matrix((data, indices, indptr), shape=(5, 5))


def test_edge_id():
    ids = mx.nd.contrib.edge_id(
        graph(), mx.nd.array([0, 0, 1, 1, 2, 4]), mx.nd.array([0, 1, 0, 1, 3, 2])
    )
    assert ids.asnumpy().tolist() == [-1, 1, 5, -1, 7, -1]
    with pytest.raises(MXNetError, match="same length"):
        mx.nd.contrib.edge_id(graph(), mx.nd.array([0, 1]), mx.nd.array([1]))
    with pytest.raises(MXNetError, match="CSRNDArray"):
        mx.nd.contrib.edge_id(graph().tostype("default"), mx.nd.array([0]), mx.nd.array([1]))


def test_dgl_adjacency():
    adj = mx.nd.contrib.dgl_adjacency(graph())
    assert adj.stype == "csr" and adj.dtype == np.float32
    np.testing.assert_array_equal(adj.asnumpy(), (graph().asnumpy() != 0).astype("f"))


def test_dgl_subgraph_with_mapping():
    sets = [mx.nd.array([0, 1, 2, 4], dtype="int64"), mx.nd.array([0, 1, 3], dtype="int64")]
    sub0, sub1, map0, map1 = mx.nd.contrib.dgl_subgraph(graph(), *sets, return_mapping=True)
    assert all(s.stype == "csr" for s in (sub0, sub1, map0, map1))
    assert sub0.asnumpy().tolist() == [[0, 0, 1, 2], [3, 0, 0, 0], [0, 0, 4, 5], [0, 0, 0, 0]]
    assert sub1.asnumpy().tolist() == [[0, 0, 1], [2, 0, 0], [3, 4, 0]]
    assert map0.asnumpy().tolist() == [[0, 1, 2, 4], [5, 0, 0, 0], [0, 0, 6, 8], [0, 0, 0, 0]]
    assert map1.asnumpy().tolist() == [[0, 1, 3], [5, 0, 0], [9, 10, 0]]
    only = mx.nd.contrib.dgl_subgraph(graph(), sets[1])
    assert only.asnumpy().tolist() == sub1.asnumpy().tolist()
    with pytest.raises(MXNetError, match="sorted"):
        mx.nd.contrib.dgl_subgraph(graph(), mx.nd.array([2, 1], dtype="int64"))
