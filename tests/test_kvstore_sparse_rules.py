"""KVStore row_sparse rules where mxmod is stricter than or differs from MXNet 1.9.1
(MXNet's own behaviour: tests/test_kvstore_sparse.py against its goldens)."""

import logging

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

SHAPE = (4, 2)


def _rsp(rows, value=1.0, ctx=None):
    data = np.full((len(rows), SHAPE[1]), value, np.float32)
    return mx.nd.sparse.row_sparse_array(
        (data, np.array(rows, np.int64)), shape=SHAPE, ctx=ctx or mx.cpu(0)
    )


def _store(kvtype="local"):
    kv = mx.kv.create(kvtype)
    kv.init("w", _rsp([0, 2], 3.0))
    return kv


@pytest.mark.parametrize("ids", [[-1, 0], [4], [1, 7]])
def test_row_ids_outside_the_rows_raise(ids):
    # MXNet stores such ids as they are (garbage rows); mxmod names them
    out = mx.nd.sparse.zeros("row_sparse", SHAPE)
    with pytest.raises(MXNetError, match=r"has 4 rows but row_ids ask for rows .*\[0, 4\)"):
        _store().row_sparse_pull("w", out=out, row_ids=mx.nd.array(ids))


def test_row_sparse_pull_argument_errors_name_the_fix():
    kv, out = _store(), mx.nd.sparse.zeros("row_sparse", SHAPE)
    with pytest.raises(TypeError, match="row_ids should be NDArray or list of NDArray"):
        kv.row_sparse_pull("w", out=out, row_ids=np.array([0]))
    with pytest.raises(ValueError, match=r"number of row_ids \(2\) doesn't match .* \(3\)"):
        outs = [mx.nd.sparse.zeros("row_sparse", SHAPE) for _ in range(3)]
        kv.row_sparse_pull("w", out=outs, row_ids=[mx.nd.array([0])] * 2)
    with pytest.raises(ValueError, match="needs out="):
        kv.row_sparse_pull("w", row_ids=mx.nd.array([0]))
    with pytest.raises(MXNetError, match=r"Expected row_sparse storage.*mx.nd.sparse.zeros"):
        kv.row_sparse_pull("w", out=mx.nd.zeros(SHAPE), row_ids=mx.nd.array([0]))
    with pytest.raises(MXNetError, match="key 'x' has not been initialized"):
        kv.row_sparse_pull("x", out=out, row_ids=mx.nd.array([0]))


def test_push_refuses_csr_and_compressed_row_sparse():
    kv = _store("device")
    with pytest.raises(MXNetError, match="Unexpected storage type .* push: csr"):
        kv.push("w", mx.nd.ones(SHAPE).tostype("csr"))
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    # MXNet 1.9.1 quantises the stored rows as if dense and sums the wrong rows
    with pytest.raises(NotImplementedError, match="2-bit gradient compression of row_sparse"):
        kv.push("w", [_rsp([1]), _rsp([3], ctx=mx.cpu(1))])


def test_push_stores_a_copy():
    kv = _store()
    value = _rsp([1, 3], 2.0)
    kv.push("w", value)
    value *= 10  # the store keeps what was pushed
    out = mx.nd.sparse.zeros("row_sparse", SHAPE)
    kv.row_sparse_pull("w", out=out, row_ids=mx.nd.array([1, 3]))
    np.testing.assert_array_equal(out.data.asnumpy(), np.full((2, 2), 2.0))


def test_ignored_sparse_pull_is_logged_once_per_key(caplog):
    kv, out = _store(), _rsp([1], 5.0)
    with caplog.at_level(logging.INFO, logger="mxmod.kvstore.kvstore"):
        kv.pull("w", out=out)
        kv.pull("w", out=out)
    assert sum("use row_sparse_pull" in r.getMessage() for r in caplog.records) == 1
    np.testing.assert_array_equal(out.indices.asnumpy(), [1])  # untouched
    np.testing.assert_array_equal(out.data.asnumpy(), [[5.0, 5.0]])


def test_dist_store_in_one_process(monkeypatch):
    monkeypatch.setenv("MXMOD_KVSTORE_DIST_SINGLE", "1")
    kv = _store("dist_sync")
    kv.push("w", [_rsp([1]), _rsp([1, 3], ctx=mx.cpu(1))])
    out = mx.nd.sparse.zeros("row_sparse", SHAPE)
    kv.row_sparse_pull("w", out=out, row_ids=mx.nd.array([3, 1, 0]))
    np.testing.assert_array_equal(out.indices.asnumpy(), [0, 1, 3])
    np.testing.assert_array_equal(out.data.asnumpy(), [[0, 0], [2, 2], [1, 1]])
    # as MXNet's dist store: a sparse out takes row_sparse_pull, not pull
    with pytest.raises(MXNetError, match="doesn't support ignore_sparse=False"):
        kv.pull("w", out=out, ignore_sparse=False)


def test_teststore_with_row_sparse_values():
    # MXNet's TestStore: the sum of the values assigned to each out (o[:] = sum)
    kv = mx.kv.create("teststore")
    out = mx.nd.sparse.zeros("row_sparse", SHAPE)
    kv.pushpull("w", [_rsp([0, 2], 1.0), _rsp([2], 2.0, ctx=mx.cpu(1))], out=[out])
    np.testing.assert_array_equal(out.indices.asnumpy(), [0, 2])
    np.testing.assert_array_equal(out.data.asnumpy(), [[1, 1], [3, 3]])
    with pytest.raises(TypeError, match="cannot be assigned to a dense out"):
        kv.pushpull("w", [_rsp([0], 1.0)], out=[mx.nd.zeros(SHAPE)])
    kv.broadcast("w", _rsp([3], 4.0), out=[out])
    np.testing.assert_array_equal(out.indices.asnumpy(), [3])


def test_extra_outs_of_one_row_ids_cannot_be_csr():
    # MXNet copies out[0] into the others; row_sparse -> csr is refused there too
    outs = [mx.nd.sparse.zeros("row_sparse", SHAPE), mx.nd.sparse.zeros("csr", SHAPE)]
    with pytest.raises(MXNetError, match="row_sparse to stype csr is not supported"):
        _store().row_sparse_pull("w", out=outs, row_ids=mx.nd.array([0]))


def test_nccl_store_refuses_sparse_values():
    # MXNet's KVStoreNCCL: dense values only, no row_sparse_pull (mxmod: 'device' takes them)
    kv = mx.kv.create("nccl")
    with pytest.raises(MXNetError, match="NCCL kvstore does not support sparse"):
        kv.init("w", _rsp([0]))
    kv.init("w", mx.nd.ones(SHAPE))
    with pytest.raises(MXNetError, match="NCCL kvstore does not support sparse"):
        kv.push("w", [mx.nd.ones(SHAPE), _rsp([1])])
    with pytest.raises(MXNetError, match="NCCL kvstore does not support sparse"):
        kv.pull("w", out=_rsp([1]))
    with pytest.raises(MXNetError, match="NCCL kvstore does not support sparse"):
        kv.row_sparse_pull("w", out=_rsp([1]), row_ids=mx.nd.array([0]))
    out = mx.nd.zeros(SHAPE)
    kv.pull("w", out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.ones(SHAPE))
