"""mx.kv: MXNet 1.9.1 local-store semantics (spec 3.1) and the Module helpers (3.2, 3.3)."""

import os

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError
from mxmod.kvstore import (
    _create_kvstore,
    _initialize_kvstore,
    _update_params,
    _update_params_on_kvstore,
)


def nd(x, ctx=None):
    return mx.nd.array(np.asarray(x, np.float32), ctx=ctx)


# ----------------------------------------------------------------------------- create
@pytest.mark.parametrize(
    "name",
    [
        "local",
        "device",
        "LOCAL",
        "local_update_cpu",
        "local_allreduce_cpu",
        "local_allreduce_device",
        "nccl",
    ],
)
def test_create_local_types(name):
    kv = mx.kv.create(name)
    assert isinstance(kv, mx.kv.KVStore) and kv.type == name.lower()
    assert kv.rank == 0 and kv.num_workers == 1
    assert mx.kvstore.create is mx.kv.create


@pytest.mark.parametrize("name", ["horovod", "foo", "dist"])
def test_create_unknown_names_raise(name):
    # MXNet 1.9.1 quietly made these local stores; a typo here would train unsynchronised
    with pytest.raises(ValueError, match=f"unknown kvstore type '{name}'; use one of local"):
        mx.kv.create(name)


@pytest.mark.parametrize("name", ["dist_async", "dist_device_async", "DIST_ASYNC"])
def test_create_dist_async_explains_sync(name):
    with pytest.raises(
        NotImplementedError, match="asynchronous.*synchronous all-reduce.*'dist_sync'"
    ):
        mx.kv.create(name)


def test_create_errors_and_registry():
    with pytest.raises(TypeError, match="name must be a string"):
        mx.kv.create(3)
    kv = mx.kv.create("TestStore")
    assert isinstance(kv, mx.kv.TestStore) and kv.type == "teststore"
    assert kv.rank == 0 and kv.num_workers == 1


_JOB_VARS = (
    "DMLC_ROLE",
    "DMLC_PS_ROOT_URI",
    "DMLC_PS_ROOT_PORT",
    "DMLC_NUM_WORKER",
    "DMLC_WORKER_ID",
    "DMLC_TASK_ID",
    "JAX_COORDINATOR_ADDRESS",
    "JAX_NUM_PROCESSES",
    "JAX_PROCESS_ID",
)


@pytest.mark.parametrize("name", ["dist_sync", "dist_device_sync", "dist_sync_device"])
def test_dist_needs_a_launcher(name, monkeypatch):
    for v in _JOB_VARS + ("MXMOD_KVSTORE_DIST_SINGLE",):
        monkeypatch.delenv(v, raising=False)
    with pytest.raises(
        MXNetError,
        match=r"no launcher variables are set: start the script "
        r"with `python -m mxmod\.launch -n N",
    ):
        mx.kv.create(name)
    monkeypatch.setenv("MXMOD_KVSTORE_DIST_SINGLE", "1")
    kv = mx.kv.create(name)
    assert kv.type == name and kv.rank == 0 and kv.num_workers == 1
    kv.barrier()  # one worker: returns at once


# ----------------------------------------------------------------------------- data movement
def test_push_sums_and_replaces():
    kv = mx.kv.create("local")
    kv.init(3, nd([1, 1]))
    kv.push(3, [nd([2, 2]), nd([3, 3])])
    out = nd([0, 0])
    kv.pull(3, out=out)
    np.testing.assert_array_equal(out.asnumpy(), 5)  # verified: init 1 -> push [2,3] -> 5
    kv.push(3, [nd([1, 1]), nd([1, 1])])
    kv.pull(3, out=out)
    np.testing.assert_array_equal(out.asnumpy(), 2)  # replaced, not accumulated


def test_list_keys_str_keys_and_multi_out():
    kv = mx.kv.create("device")
    kv.init(["a", "b"], [nd([1]), nd([2, 2])])
    kv.push(["a", "b"], [nd([5]), [nd([1, 1]), nd([2, 2])]])
    oa, ob1, ob2 = nd([0]), nd([0, 0]), nd([0, 0])
    kv.pull(["a", "b"], out=[oa, [ob1, ob2]])
    assert oa.asnumpy().tolist() == [5]
    assert ob1.asnumpy().tolist() == ob2.asnumpy().tolist() == [3, 3]


def test_multi_device_values_and_outs():
    kv = mx.kv.create("device")
    kv.init(0, nd([0, 0], mx.cpu(0)))
    outs = [nd([0, 0], mx.cpu(1)), nd([0, 0], mx.cpu(2))]
    kv.pushpull(0, [nd([1, 2], mx.cpu(1)), nd([3, 4], mx.cpu(2))], out=outs)
    for o, ctx in zip(outs, [mx.cpu(1), mx.cpu(2)]):
        assert o.asnumpy().tolist() == [4, 6] and o.context == ctx
        assert list(o._data.devices())[0] == ctx.jax_device


def test_pushpull_default_out_and_broadcast():
    kv = mx.kv.create("local")
    kv.init(1, nd([0]))
    vals = [nd([1]), nd([2])]
    kv.pushpull(1, vals)
    assert [v.asnumpy()[0] for v in vals] == [3, 3]
    outs = [nd([0, 0]), nd([0, 0])]
    kv.broadcast(2, nd([7, 8]), out=outs)
    assert [o.asnumpy().tolist() for o in outs] == [[7, 8], [7, 8]]


def test_init_copies_value():
    kv = mx.kv.create("local")
    v = nd([1, 2])
    kv.init(0, v)
    v[:] = 9
    out = nd([0, 0])
    kv.pull(0, out=out)
    assert out.asnumpy().tolist() == [1, 2]


def test_row_sparse_pull_refuses_dense():
    # MXNet: row_sparse_pull needs a row_sparse stored value and row_sparse outs (the
    # row_sparse semantics themselves: tests/test_kvstore_sparse.py)
    kv = mx.kv.create("local")
    kv.init("w", nd(np.arange(8).reshape(4, 2)))
    o1 = nd(np.zeros((4, 2)))
    with pytest.raises(MXNetError, match="Expected row_sparse storage type"):
        kv.row_sparse_pull("w", out=o1, row_ids=nd([1, 3]))
    with pytest.raises(MXNetError, match="PullRowSparse expects row_sparse src"):
        kv.row_sparse_pull("w", out=o1.tostype("row_sparse"), row_ids=nd([1, 3]))
    with pytest.raises(ValueError, match="needs out="):
        kv.row_sparse_pull("w", out=o1)


def test_data_errors():
    kv = mx.kv.create("local")
    kv.init(0, nd([1]))
    with pytest.raises(MXNetError, match="Mixed key types are not allowed"):
        kv.init("a", nd([1]))
    with pytest.raises(MXNetError, match="duplicate init of key 0"):
        kv.init(0, nd([1]))
    with pytest.raises(MXNetError, match="key 5 has not been initialized"):
        kv.push(5, nd([1]))
    with pytest.raises(MXNetError, match="key 5 has not been initialized"):
        kv.pull(5, out=nd([1]))
    with pytest.raises(ValueError, match="pull needs out="):
        kv.pull(0)
    with pytest.raises(MXNetError, match=r"holds shape \(1,\) but a value has shape \(2,\)"):
        kv.push(0, nd([1, 2]))
    with pytest.raises(MXNetError, match=r"out has shape \(2,\)"):
        kv.pull(0, out=nd([1, 2]))
    with pytest.raises(ValueError, match="a list of 2 keys needs a list of 2 values"):
        kv.push([0, 0], nd([1]))
    with pytest.raises(TypeError, match="keys must be int or str"):
        kv.init(1.5, nd([1]))


# ----------------------------------------------------------------------------- optimizer
def test_set_optimizer_push_updates():
    kv = mx.kv.create("local")
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1))
    kv.init("fc_weight", nd([1.0, 2.0]))
    kv.push("fc_weight", [nd([1.0, 1.0]), nd([3.0, 1.0])])
    out = nd([0, 0])
    kv.pull("fc_weight", out=out)
    np.testing.assert_allclose(out.asnumpy(), [1 - 0.4, 2 - 0.2], rtol=1e-6)
    assert "fc_weight" in kv._updater.states  # bytes key converted to str by the Updater


def test_custom_updater_gets_bytes_for_str_keys():
    seen = []
    kv = mx.kv.create("local")
    kv._set_updater(lambda key, grad, weight: seen.append(key))
    kv.init("w", nd([1]))
    kv.push("w", nd([1]))
    kv2 = mx.kv.create("local")
    kv2._set_updater(lambda key, grad, weight: seen.append(key))
    kv2.init(7, nd([1]))
    kv2.push(7, nd([1]))
    assert seen == [b"w", 7]


def test_save_load_optimizer_states(tmp_path):
    kv = mx.kv.create("local")
    kv.set_optimizer(mx.optimizer.SGD(momentum=0.9, learning_rate=0.1))
    kv.init(0, nd([1.0, 2.0]))
    kv.push(0, nd([1.0, 1.0]))
    fname = os.path.join(tmp_path, "opt.states")
    kv.save_optimizer_states(fname, dump_optimizer=True)
    kv2 = mx.kv.create("local")
    kv2.set_optimizer(mx.optimizer.SGD())
    kv2.load_optimizer_states(fname)
    assert kv2._updater.optimizer.momentum == 0.9
    np.testing.assert_array_equal(kv2._updater.states[0].asnumpy(), kv._updater.states[0].asnumpy())
    kv3 = mx.kv.create("local")
    with pytest.raises(MXNetError, match="Cannot save states.*kv.set_optimizer"):
        kv3.save_optimizer_states(fname)
    with pytest.raises(MXNetError, match="Cannot load states"):
        kv3.load_optimizer_states(fname)


def test_is_capable():
    assert mx.kv.create("local").is_capable("optimizer")
    assert not mx.kv.create("teststore").is_capable("OPTIMIZER")
    with pytest.raises(ValueError, match="Unknown capability: foo"):
        mx.kv.create("local").is_capable("foo")
    with pytest.raises(ValueError, match="Unknown capability"):
        mx.kv.create("teststore").is_capable("foo")


# ----------------------------------------------------------------------------- compression
def test_gradient_compression():
    with pytest.raises(MXNetError, match="Gradient compression is not supported for this type"):
        mx.kv.create("local").set_gradient_compression({"type": "2bit"})
    kv = mx.kv.create("device")
    with pytest.raises(NotImplementedError, match="compression type '1bit' is not supported"):
        kv.set_gradient_compression({"type": "1bit"})
    with pytest.raises(ValueError, match="needs a 'type'"):
        kv.set_gradient_compression({})
    with pytest.raises(ValueError, match="threshold must be > 0"):
        kv.set_gradient_compression({"type": "2bit", "threshold": 0})
    with pytest.raises(ValueError, match="unknown gradient compression option"):
        kv.set_gradient_compression({"type": "2bit", "foo": 1})
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    kv.init(0, nd([0.0, 0.0]))
    out = nd([0, 0])
    kv.push(0, [nd([0.3, -0.6]), nd([0.3, 0.0])])
    kv.pull(0, out=out)
    np.testing.assert_allclose(out.asnumpy(), [0.0, -0.5])  # residuals 0.3/-0.1 and 0.3/0
    kv.push(0, [nd([0.3, 0.0]), nd([0.3, 0.0])])
    kv.pull(0, out=out)
    np.testing.assert_allclose(out.asnumpy(), [1.0, 0.0])  # 0.6 >= 0.5 on both senders


# ----------------------------------------------------------------------------- TestStore / base
def test_teststore():
    kv = mx.kv.create("teststore")
    outs = [nd([0]), nd([0])]
    kv.broadcast("a", nd([4]), out=outs)
    assert [o.asnumpy()[0] for o in outs] == [4, 4]
    vals = [nd([1]), nd([2])]
    kv.pushpull("a", vals)
    assert [v.asnumpy()[0] for v in vals] == [3, 3]
    with pytest.raises(NotImplementedError, match="cannot run an optimizer"):
        kv.set_optimizer(mx.optimizer.SGD())


def test_kvstorebase_register_and_abstract():
    base = mx.kv.KVStoreBase

    @base.register
    class MyStore(base):
        pass

    assert isinstance(mx.kv.create("mystore"), MyStore)
    with pytest.warns(UserWarning, match="overriding existing kvstore"):
        base.register(type("MyStore", (base,), {}))
    with pytest.raises(NotImplementedError):
        MyStore().pushpull(0, nd([1]))
    with pytest.raises(TypeError, match="KVStoreBase subclasses"):
        base.register(int)
    del base.kv_registry["mystore"]


# ----------------------------------------------------------------------------- Module helpers
class Shape:
    def __init__(self, *shape):
        self.shape = shape


def test_create_kvstore_rules(monkeypatch):
    monkeypatch.delenv("MXNET_UPDATE_ON_KVSTORE", raising=False)
    params = {"w": Shape(10, 10)}
    kv, upd = _create_kvstore("local", 2, params)
    assert isinstance(kv, mx.kv.KVStore) and upd is True
    assert _create_kvstore("device", 1, params) == (None, False)
    with pytest.raises(ValueError, match="unknown kvstore type 'lcoal'"):
        _create_kvstore("lcoal", 1, params)  # one device needs no store, but a typo is caught
    assert _create_kvstore(None, 2, params) == (None, False)
    mine = mx.kv.create("local")
    assert _create_kvstore(mine, 1, params) == (mine, True)
    kv, upd = _create_kvstore("local", 2, {"big": Shape(4097, 4096)})
    assert kv is not None and upd is False  # > 16M elements with exactly 'local'
    kv, upd = _create_kvstore("device", 2, {"big": Shape(4097, 4096)})
    assert upd is True
    assert _create_kvstore(mx.kv.create("teststore"), 2, params)[1] is False
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", "0")
    assert _create_kvstore("local", 2, params)[1] is False
    with pytest.raises(TypeError, match="kvstore must be KVStore, str or None"):
        _create_kvstore(3, 2, params)


def _two_device_setup():
    ctxs = [mx.cpu(0), mx.cpu(1)]
    names = ["fc_weight", "fc_bias"]
    init = {"fc_weight": np.array([[1.0, 2.0]], np.float32), "fc_bias": np.array([0.5], np.float32)}
    arg_params = {n: nd(v) for n, v in init.items()}
    param_arrays = [[nd(init[n], c) for c in ctxs] for n in names]
    grads = {"fc_weight": [[1.0, 1.0], [3.0, -1.0]], "fc_bias": [[1.0], [1.0]]}
    grad_arrays = [
        [nd(np.reshape(g, init[n].shape), c) for g, c in zip(grads[n], ctxs)] for n in names
    ]
    return names, arg_params, param_arrays, grad_arrays, init


def _expected(init, lr=0.1):
    return {
        "fc_weight": init["fc_weight"] - lr * np.array([[4.0, 0.0]]),
        "fc_bias": init["fc_bias"] - lr * np.array([2.0]),
    }


def test_update_on_kvstore_path():
    names, arg_params, param_arrays, grad_arrays, init = _two_device_setup()
    kv, upd = _create_kvstore("local", 2, arg_params)
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, wd=0.0))
    _initialize_kvstore(kv, param_arrays, arg_params, names, upd)
    _update_params_on_kvstore(param_arrays, grad_arrays, kv, names)
    exp = _expected(init)
    for n, devs in zip(names, param_arrays):
        for d in devs:
            np.testing.assert_allclose(d.asnumpy(), exp[n], rtol=1e-6)
    assert set(kv._updater.states) == set(names)  # keyed by name


def test_update_params_local_updater_path():
    names, arg_params, param_arrays, grad_arrays, init = _two_device_setup()
    kv = mx.kv.create("local")
    _initialize_kvstore(kv, param_arrays, arg_params, names, False)
    opt = mx.optimizer.SGD(
        learning_rate=0.1,
        momentum=0.9,
        param_idx2name={i * 2 + k: n for i, n in enumerate(names) for k in range(2)},
    )
    updater = mx.optimizer.get_updater(opt)
    _update_params(param_arrays, grad_arrays, updater, 2, kvstore=kv, param_names=names)
    exp = _expected(init)
    for n, devs in zip(names, param_arrays):
        for d in devs:
            np.testing.assert_allclose(d.asnumpy(), exp[n], rtol=1e-6)
    assert sorted(updater.states) == [0, 1, 2, 3]  # i * num_device + k
    assert opt._all_index_update_counts == {0: {0: 1, 2: 1}, 1: {1: 1, 3: 1}}


def test_update_params_skips_missing_grads_without_store():
    names, arg_params, param_arrays, grad_arrays, init = _two_device_setup()
    grad_arrays[1] = [None, None]
    updater = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.1))
    _update_params(param_arrays, grad_arrays, updater, 2)
    w0, w1 = param_arrays[0]
    np.testing.assert_allclose(w0.asnumpy(), init["fc_weight"] - 0.1 * np.array([[1, 1]]))
    np.testing.assert_allclose(w1.asnumpy(), init["fc_weight"] - 0.1 * np.array([[3, -1]]))
    np.testing.assert_array_equal(param_arrays[1][0].asnumpy(), init["fc_bias"])
