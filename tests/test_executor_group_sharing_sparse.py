"""Executor-group views of a ``stype='row_sparse'`` parameter are RowSparseNDArrays (as
MXNet 1.9.1's executors hold them), every row stored, reading and writing the weights
the compiled step uses; groups bound with ``shared_group`` share them."""

import numpy as np

import mxmod as mx
from mxmod.module.executor_group import DataParallelExecutorGroup
from mxmod.test_utils import same_array

CTXS = [mx.cpu(0), mx.cpu(1)]


def _group(shared_group=None):
    weight = mx.sym.Variable("embed_weight", stype="row_sparse")
    embed = mx.sym.contrib.SparseEmbedding(
        data=mx.sym.Variable("data"), input_dim=6, output_dim=3, weight=weight, name="embed"
    )
    out = mx.sym.FullyConnected(mx.sym.Flatten(embed), num_hidden=2, name="fc")
    params = ["embed_weight", "fc_weight", "fc_bias"]
    return DataParallelExecutorGroup(
        out, CTXS, [1, 1], data_shapes=[("data", (4, 2))], label_shapes=None,
        param_names=params, for_training=True, inputs_need_grad=False,
        shared_group=shared_group,
    )  # fmt: skip


def test_row_sparse_parameter_views_are_row_sparse_and_dense_ones_dense():
    g = _group()
    views = [g.execs[1].arg_dict["embed_weight"], g.param_arrays[0][0], g.arg_dict["embed_weight"]]
    for v in views:
        assert isinstance(v, mx.nd.sparse.RowSparseNDArray) and v.stype == "row_sparse"
        assert v.shape == (6, 3)
    assert g.param_arrays[0][1] is g.execs[1].arg_dict["embed_weight"]
    assert g.execs[0].arg_dict["fc_weight"].stype == "default"
    np.testing.assert_array_equal(views[0].indices.asnumpy(), np.arange(6))


def test_a_write_through_the_view_is_what_the_step_uses():
    g = _group()
    w = np.arange(18, dtype=np.float32).reshape(6, 3)
    g.set_params({"fc_weight": mx.nd.ones((2, 6)), "fc_bias": mx.nd.zeros((2,))}, {})
    g.arg_dict["embed_weight"][:] = mx.nd.array(w).tostype("row_sparse")
    np.testing.assert_array_equal(g.execs[0].arg_dict["embed_weight"].asnumpy(), w)
    rows = np.array([[0, 5], [1, 2], [3, 4], [5, 5]], np.float32)
    g.forward(mx.io.DataBatch([mx.nd.array(rows)]), is_train=False)
    want = w[rows.astype(int)].reshape(4, 6).sum(1)
    np.testing.assert_allclose(g.get_outputs()[0].asnumpy()[:, 0], want)
    # an in-place update changes every stored row
    g.arg_dict["embed_weight"][:] += 1
    np.testing.assert_array_equal(g.execs[1].arg_dict["embed_weight"].asnumpy(), w + 1)


def test_shared_group_shares_the_row_sparse_weight():
    g1 = _group()
    g2 = _group(shared_group=g1)
    for k in range(2):
        a, b = g1.execs[k].arg_dict["embed_weight"], g2.execs[k].arg_dict["embed_weight"]
        assert same_array(a, b) and same_array(b, a)
