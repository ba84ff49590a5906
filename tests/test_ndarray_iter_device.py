"""NDArrayIter.place_on: batches gathered from a device copy equal the host path's batches
(values, pad, index, shuffled order, every last_batch_handle), land on the given sharding,
compile once, and train a Module exactly as the host path does."""

import jax
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P

import mxmod as mx


HANDLES = ("pad", "discard", "roll_over")


def _iters(n=10, batch=4, **kw):
    """The same iterator twice: host path, and placed on device 0."""
    data = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    label = np.arange(n, dtype=np.float32) * 10
    host = mx.io.NDArrayIter(data, label, batch_size=batch, seed=7, **kw)
    dev = mx.io.NDArrayIter(data, label, batch_size=batch, seed=7, **kw)
    dev.place_on(jax.devices()[0])
    assert dev.placed_on_device and not host.placed_on_device
    return host, dev


def _epochs(it, n=4):
    out = []
    for _ in range(n):
        out.append(
            [
                (
                    [d.asnumpy().tolist() for d in b.data],
                    [lab.asnumpy().tolist() for lab in b.label],
                    b.pad,
                    b.index,
                )
                for b in it
            ]
        )
        it.reset()
    return out


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("handle", HANDLES)
def test_placed_batches_equal_host_batches(handle, shuffle):
    host, dev = _iters(last_batch_handle=handle, shuffle=shuffle)
    expect = _epochs(host)
    assert _epochs(dev) == expect
    assert any(b[2] for e in expect for b in e) == (handle != "discard")  # pads seen


@pytest.mark.parametrize("handle", HANDLES)
def test_placed_accessors_equal_host(handle):
    host, dev = _iters(n=11, batch=4, last_batch_handle=handle, shuffle=True)
    for _ in range(3):
        for it in (host, dev):
            it.reset()
        while True:
            more = host.iter_next()
            assert dev.iter_next() == more
            if not more:
                break
            if handle == "discard" and host.cursor + 4 > host.num_data:
                break  # next() would stop here; the accessors of a short batch are not used
            for a, b in zip(host.getdata() + host.getlabel(), dev.getdata() + dev.getlabel()):
                np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
            assert (dev.getpad(), dev.getindex()) == (host.getpad(), host.getindex())


def test_batch_larger_than_data_pads_by_wrapping():
    host, dev = _iters(n=3, batch=8, last_batch_handle="pad", shuffle=True)
    expect = _epochs(host, 2)
    assert _epochs(dev, 2) == expect
    assert expect[0][0][2] == 5


def test_batch_axis_not_first():
    data = np.arange(2 * 10 * 3, dtype=np.float32).reshape(2, 10, 3)
    label = np.arange(10, dtype=np.float32).reshape(1, 10)
    kw = dict(batch_size=4, layout="TNC", shuffle=True, seed=3, last_batch_handle="pad")
    host = mx.io.NDArrayIter(data, label, **kw)
    dev = mx.io.NDArrayIter(data, label, **kw)
    dev.place_on(mx.cpu())
    assert dev.placed_on_device
    assert _epochs(dev, 2) == _epochs(host, 2)


def test_set_epoch_and_hard_reset_match_host():
    host, dev = _iters(n=10, batch=4, last_batch_handle="roll_over", shuffle=True)
    for it in (host, dev):
        it.set_epoch(3)
    assert _epochs(dev, 2) == _epochs(host, 2)
    for it in (host, dev):
        next(it)
        it.hard_reset()
    assert _epochs(dev, 2) == _epochs(host, 2)


def test_one_compile_for_every_batch():
    host, dev = _iters(n=50, batch=4, last_batch_handle="pad", shuffle=True)
    every = tuple(range(dev.num_source))
    assert dev._device.compiles(every) == 0
    batches = sum(len(e) for e in _epochs(dev, 3))
    assert batches == 39
    assert dev._device.compiles(every) == 1


def test_arrays_stay_on_the_given_sharding():
    devs = jax.devices()[:2]
    split = NamedSharding(Mesh(np.array(devs), ("d",)), P("d"))
    one = SingleDeviceSharding(devs[1])
    host, dev = _iters(n=12, batch=4, shuffle=True)
    dev.place_on({"data": split, "softmax_label": one})
    assert dev.placed_on_device is False  # two device sets: batches come from the host
    dev.place_on({"data": split, "softmax_label": split})
    assert dev.placed_on_device is False  # several devices: host batches (see place_on)
    for h, b in zip(host, dev):
        assert b.data[0]._data.sharding == split and b.label[0]._data.sharding == split
        np.testing.assert_array_equal(h.data[0].asnumpy(), b.data[0].asnumpy())
    dev.place_on(one)
    dev.reset()
    b = next(dev)
    assert b.data[0]._data.sharding == one and b.label[0]._data.sharding == one
    assert b.data[0].context == mx.cpu(1)


def test_data_over_the_limit_stays_on_the_host(monkeypatch):
    host, _ = _iters(shuffle=True, last_batch_handle="roll_over")
    monkeypatch.setattr(mx.io.NDArrayIter, "device_data_limit", 10 * 3 * 4)  # < data+label
    big = mx.io.NDArrayIter(
        np.arange(30, dtype=np.float32).reshape(10, 3),
        np.arange(10, dtype=np.float32) * 10,
        batch_size=4,
        seed=7,
        shuffle=True,
        last_batch_handle="roll_over",
    )
    target = SingleDeviceSharding(jax.devices()[2])
    big.place_on(target)
    assert not big.placed_on_device
    assert _epochs(big) == _epochs(host)
    big.reset()
    assert next(big).data[0]._data.sharding == target
    big.place_on(None)  # back to the current context
    big.reset()
    assert next(big).data[0].context == mx.current_context()


def test_place_on_bad_target_names_the_input():
    it = mx.io.NDArrayIter(np.zeros((4, 2)), np.zeros(4), batch_size=2)
    with pytest.raises(TypeError, match=r"target of 'softmax_label' is 'gpu'.*jax Sharding"):
        it.place_on({"softmax_label": "gpu"})
    assert not it.placed_on_device
    with pytest.raises(TypeError, match=r"target of 'data' is 3"):
        it.place_on(3)


def _sym():
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=8, name="fc1")
    net = mx.sym.FullyConnected(mx.sym.Activation(net, act_type="relu"), num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def _fit(limit, ctx, monkeypatch):
    monkeypatch.setattr(mx.io.NDArrayIter, "device_data_limit", limit)
    rng = np.random.RandomState(0)
    x = rng.rand(50, 5).astype(np.float32)
    y = rng.randint(0, 3, 50).astype(np.float32)
    it = mx.io.NDArrayIter(x, y, batch_size=8, shuffle=True, seed=1, last_batch_handle="pad")
    mod = mx.mod.Module(_sym(), context=ctx)
    init = {
        "fc1_weight": mx.nd.array(rng.randn(8, 5) * 0.3),
        "fc1_bias": mx.nd.zeros((8,)),
        "fc2_weight": mx.nd.array(rng.randn(3, 8) * 0.3),
        "fc2_bias": mx.nd.zeros((3,)),
    }
    metric = mx.metric.create("acc")
    mod.fit(
        it,
        num_epoch=2,
        eval_metric=metric,
        arg_params=init,
        optimizer_params={"learning_rate": 0.2, "momentum": 0.9},
    )
    score = mod.score(it, "ce")
    params = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
    return it.placed_on_device, params, metric.get(), score


@pytest.mark.parametrize(
    "ctx",
    [[mx.cpu(0)], pytest.param([mx.cpu(0), mx.cpu(1)], marks=pytest.mark.slow)],
    ids=["1dev", "2dev"],
)
def test_fit_over_placed_iterator_trains_as_host_path(ctx, monkeypatch):
    placed, params, acc, score = _fit(1 << 30, ctx, monkeypatch)
    on_host, params_h, acc_h, score_h = _fit(0, ctx, monkeypatch)
    # fit places the iterator when the data fits and the target is one device (a gather
    # program beside a collective step could deadlock XLA:CPU, see NDArrayIter.place_on)
    assert placed == (len(ctx) == 1) and not on_host
    for k in params_h:
        np.testing.assert_array_equal(params[k], params_h[k])
    assert acc == acc_h and score == score_h


def test_a_long_used_iterator_places_itself_on_the_cpu(monkeypatch):
    monkeypatch.setattr(mx.io.NDArrayIter, "auto_place_after", 5)
    host, _ = _iters(n=10, batch=4, last_batch_handle="roll_over", shuffle=True)
    host.auto_place_after = 10**9  # this one stays on the host
    auto, _ = _iters(n=10, batch=4, last_batch_handle="roll_over", shuffle=True)
    assert not auto.placed_on_device
    expect, got = _epochs(host, 6), _epochs(auto, 6)  # placed at the reset after batch 5
    assert got == expect and auto.placed_on_device and not host.placed_on_device
    with mx.Context(mx.cpu(2)):  # another current context: batches go there, from the host
        b = next(auto)
        assert b.data[0].context == mx.cpu(2)
    np.testing.assert_array_equal(b.data[0].asnumpy(), next(host).data[0].asnumpy())
    auto.place_on(None)
    assert not auto.placed_on_device
