"""Names of MXNet 1.9.1's API that old programs reach: backend partitioning for oneDNN,
NDArray.slice_assign(_scalar)/writable, mx.sym.random.randn and module re-exports (each
checked against what MXNet 1.9.1 prints)."""

import numpy as np
import pytest

import mxmod as mx


def _net():
    x = mx.sym.var("x")
    return mx.sym.relu(mx.sym.Convolution(x, num_filter=4, kernel=(3, 3), name="c"))


@pytest.mark.parametrize("how", ["get_backend_symbol", "optimize_for"])
def test_onednn_partitioning_gives_an_equal_graph(how):
    net = _net()
    part = getattr(net, how)("MKLDNN")
    assert part is not net
    assert part.list_arguments() == net.list_arguments()
    assert part.list_outputs() == net.list_outputs()
    rng = np.random.RandomState(0)
    shapes = net.infer_shape(x=(1, 2, 5, 5))[0]
    args = {n: mx.nd.array(rng.randn(*s)) for n, s in zip(net.list_arguments(), shapes)}
    want = net.bind(mx.cpu(), args).forward()[0].asnumpy()
    np.testing.assert_array_equal(part.bind(mx.cpu(), args).forward()[0].asnumpy(), want)


def test_unknown_backend_and_option_are_errors():
    with pytest.raises(mx.base.MXNetError, match="SubgraphProperty foo is not found"):
        _net().get_backend_symbol("foo")
    with pytest.raises(mx.base.MXNetError, match="SubgraphProperty TensorRT is not found"):
        _net().optimize_for("TensorRT")
    with pytest.raises(NotImplementedError, match="backend option\\(s\\) fuse_all"):
        _net().optimize_for("MKLDNN", fuse_all=True)
    assert _net().optimize_for("MKLDNN", args={}, aux={}, dedup_subgraph=True) is not None


def test_slice_assign_and_writable_as_mxnet():
    a = mx.nd.zeros((3, 4))
    assert a.writable
    assert a.slice_assign(mx.nd.ones((2, 2)), (0, 1), (2, 3), (None, None)) is a
    assert a.slice_assign_scalar(7, (2, 0), (3, 4), (None, 2)) is a
    # MXNet 1.9.1 prints this array for the same two calls
    np.testing.assert_array_equal(a.asnumpy(), [[0, 1, 1, 0], [0, 1, 1, 0], [7, 0, 7, 0]])


def test_sym_random_randn_is_a_normal_node():
    s = mx.sym.random.randn(2, 3, loc=1.0, scale=2.0)
    node = __import__("json").loads(s.tojson())["nodes"][0]
    assert node["op"] == "_random_normal"
    assert node["attrs"] == {"loc": "1.0", "scale": "2.0", "shape": "(2, 3)"}
    assert s.infer_shape()[1] == [(2, 3)]


def test_module_reexports_as_mxnet():
    assert mx.rnn.save_checkpoint is mx.model.save_checkpoint
    assert mx.rnn.load_checkpoint is mx.model.load_checkpoint
    assert mx.model.DataParallelExecutorManager is mx.executor_manager.DataParallelExecutorManager
