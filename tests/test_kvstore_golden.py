"""mx.kv against values recorded with MXNet 1.9.1 (tests/fixtures/gen_kvstore_goldens.py)."""

import os

import numpy as np
import pytest

import mxmod as mx

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "kvstore")
CTX = [mx.cpu(0), mx.cpu(1)]


@pytest.fixture(scope="module")
def rec():
    with np.load(os.path.join(FIX, "store_ops.npz")) as f:
        return {k: f[k] for k in f.files}


def nd(x, ctx=None):
    return mx.nd.array(x, ctx=ctx or mx.cpu(0))


def test_push_of_device_lists_and_pull_into_several_outputs(rec):
    kv = mx.kv.create("device")
    kv.init(3, nd(rec["push:init"]))
    kv.push(3, [nd(rec["push:in1"], CTX[0]), nd(rec["push:in2"], CTX[1])])
    outs = [nd(np.zeros((2, 3)), c) for c in CTX]
    kv.pull(3, out=outs)
    np.testing.assert_allclose(outs[0].asnumpy(), rec["push:pull0"], rtol=1e-6)
    np.testing.assert_allclose(outs[1].asnumpy(), rec["push:pull1"], rtol=1e-6)
    assert [o.context for o in outs] == CTX
    kv.push(3, [nd(rec["push:in3"], CTX[0]), nd(rec["push:in4"], CTX[1])])
    kv.pull(3, out=outs)
    np.testing.assert_allclose(outs[1].asnumpy(), rec["push:pull_again"], rtol=1e-6)


def test_str_keys_pushpull_and_broadcast(rec):
    b = [rec[f"strkeys:in{i}"] for i in range(4)]
    kv = mx.kv.create("local")
    kv.init(["w", "b"], [nd(b[0]), nd(b[1])])
    kv.pushpull(["w", "b"], [[nd(b[2]), nd(b[3])], nd(b[0])])
    o = [nd(np.zeros(4)), nd(np.zeros(4))]
    kv.pull(["w", "b"], out=o)
    np.testing.assert_allclose(o[0].asnumpy(), rec["strkeys:w"], rtol=1e-6)
    np.testing.assert_allclose(o[1].asnumpy(), rec["strkeys:b"], rtol=1e-6)
    vals = [nd(b[2]), nd(b[3])]
    kv.pushpull("w", vals)
    np.testing.assert_allclose(vals[1].asnumpy(), rec["strkeys:pushpull_inplace"], rtol=1e-6)
    outs = [nd(np.zeros(4)), nd(np.zeros(4))]
    kv.broadcast("c", nd(b[1]), out=outs)
    np.testing.assert_allclose(outs[1].asnumpy(), rec["strkeys:broadcast"], rtol=1e-6)


def test_optimizer_on_the_store(rec):
    kv = mx.kv.create("device")
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.01, rescale_grad=0.5))
    kv.init("fc_weight", nd(rec["opt:init"]))
    out = [nd(np.zeros((3, 2)), c) for c in CTX]
    for step in range(3):
        kv.push("fc_weight", [nd(rec[f"opt:g{step}_0"], CTX[0]), nd(rec[f"opt:g{step}_1"], CTX[1])])
        kv.pull("fc_weight", out=out)
        np.testing.assert_allclose(out[0].asnumpy(), rec[f"opt:w{step}"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[1].asnumpy(), rec["opt:w_dev1"], rtol=1e-5, atol=1e-6)


def test_optimizer_states_round_trip_through_files(rec, tmp_path):
    kv = mx.kv.create("device")
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.01, rescale_grad=0.5))
    kv.init("fc_weight", nd(rec["opt:init"]))
    kv.push("fc_weight", [nd(rec["opt:g0_0"]), nd(rec["opt:g0_1"])])
    fname = str(tmp_path / "kv.states")
    kv.save_optimizer_states(fname)
    kv2 = mx.kv.create("device")
    kv2.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.01, rescale_grad=0.5))
    kv2.init("fc_weight", nd(rec["opt:w0"]))
    kv2.load_optimizer_states(fname)
    for step in (1, 2):  # the momentum carried over: the same weights as one store
        kv2.push("fc_weight", [nd(rec[f"opt:g{step}_0"]), nd(rec[f"opt:g{step}_1"])])
    out = nd(np.zeros((3, 2)))
    kv2.pull("fc_weight", out=out)
    np.testing.assert_allclose(out.asnumpy(), rec["opt:w2"], rtol=1e-5, atol=1e-6)


def test_2bit_compression_with_error_feedback(rec):
    kv = mx.kv.create("device")
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    kv.init(0, nd(np.zeros(5, np.float32)))
    out = nd(np.zeros(5))
    for step in range(4):
        kv.push(0, [nd(rec[f"gc:g{step}_0"], CTX[0]), nd(rec[f"gc:g{step}_1"], CTX[1])])
        kv.pull(0, out=out)
        np.testing.assert_allclose(out.asnumpy(), rec[f"gc:pull{step}"], rtol=1e-6)


def _mlp():
    data = mx.sym.Variable("data")
    h = mx.sym.FullyConnected(data, num_hidden=8, name="fc1")
    h = mx.sym.Activation(h, act_type="tanh", name="tanh1")
    h = mx.sym.FullyConnected(h, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(h, name="softmax")


@pytest.fixture(scope="module")
def gc_rec():
    with np.load(os.path.join(FIX, "module_2bit.npz")) as f:
        return {k: f[k] for k in f.files}


def _gc_module(gc_rec, ctx):
    mod = mx.mod.Module(_mlp(), context=ctx, compression_params={"type": "2bit", "threshold": 0.05})
    it = mx.io.NDArrayIter(gc_rec["x"], gc_rec["y"], batch_size=8)
    mod.bind(it.provide_data, it.provide_label)
    init = {k[5:]: mx.nd.array(v) for k, v in gc_rec.items() if k.startswith("init:")}
    mod.set_params(init, {})
    mod.init_optimizer(kvstore="device", optimizer="sgd", optimizer_params={"learning_rate": 0.5})
    return mod, it


def _check_final(mod, gc_rec):
    arg, _ = mod.get_params()
    for k, v in arg.items():
        np.testing.assert_allclose(v.asnumpy(), gc_rec["final:" + k], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("steps_per_dispatch", [1, 2])
def test_fit_with_2bit_compression_matches_mxnet(gc_rec, steps_per_dispatch):
    """fit's own step loop (one step per call, or blocks of a lax.scan) compresses as the
    Module's calls do: MXNet's numbers after 2 epochs."""
    mod, it = _gc_module(gc_rec, CTX)
    mod.fit(it, num_epoch=2, steps_per_dispatch=steps_per_dispatch)
    _check_final(mod, gc_rec)


def test_module_2bit_compression_matches_mxnet(gc_rec):
    mod, it = _gc_module(gc_rec, CTX)
    assert mod._kvstore._compression == {"type": "2bit", "threshold": 0.05}
    for _ in range(2):
        it.reset()
        for batch in it:
            mod.forward_backward(batch)
            mod.update()
    _check_final(mod, gc_rec)
    # without compression the weights differ: the test can tell the two apart
    exact, it = _gc_module(gc_rec, CTX)
    exact._kvstore._compression = None
    for _ in range(2):
        it.reset()
        for batch in it:
            exact.forward_backward(batch)
            exact.update()
    diff = np.abs(exact.get_params()[0]["fc1_weight"].asnumpy() - gc_rec["final:fc1_weight"])
    assert diff.max() > 1e-3


def test_module_2bit_in_the_fused_fit_step(gc_rec):
    mod, it = _gc_module(gc_rec, CTX)
    metric = mx.metric.create("acc")
    for _ in range(2):
        it.reset()
        for batch in it:  # what fit does: one fused dispatch per batch
            mod.forward_backward(batch)
            mod.update()
            mod.update_metric(metric, batch.label)
    _check_final(mod, gc_rec)
    assert metric.num_inst == 48


def test_module_2bit_with_gradients_read_between(gc_rec):
    mod, it = _gc_module(gc_rec, CTX)
    for _ in range(2):
        it.reset()
        for batch in it:
            mod.forward_backward(batch)
            _ = mod._exec_group.grad_arrays[0][1].asnumpy()  # per-device gradients kept
            mod.update()
    _check_final(mod, gc_rec)


def test_module_compression_errors():
    mod = mx.mod.Module(_mlp(), context=CTX, compression_params={"type": "1bit"})
    mod.bind([("data", (8, 5))], [("softmax_label", (8,))])
    mod.init_params()
    with pytest.raises(NotImplementedError, match="compression type '1bit' is not supported"):
        mod.init_optimizer(kvstore="device")
    mod = mx.mod.Module(_mlp(), context=CTX, compression_params={"type": "2bit"})
    mod.bind([("data", (8, 5))], [("softmax_label", (8,))])
    mod.init_params()
    with pytest.raises(mx.base.MXNetError, match="Gradient compression is not supported for"):
        mod.init_optimizer(kvstore="local")
