"""The channel-last lowering of 2-D convolution regions (mxmod/executor/layout.py) gives the
same outputs, gradients and moving statistics as lowering every op channel-first, and
leaves what it does not handle (1-D/3-D data, explicit layouts, prelu) channel-first."""

import jax
import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError
from mxmod.executor.executor import compiled_for

sym = mx.sym
RTOL = 1e-5  # float32: the layouts sum in different orders


def _close(got, ref, what=""):
    # absolute slack scaled to the array: a sum that cancels loses digits in either layout
    atol = RTOL * max(1.0, float(np.abs(ref).max()))
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=atol, err_msg=what)


def _conv(x, name, c, k=3, s=1, **kw):
    return sym.Convolution(
        x, name=name, num_filter=c, kernel=(k, k), stride=(s, s), pad=(k // 2, k // 2), **kw
    )


def resnet_block():
    """conv-BN-relu, a basic block with a projection shortcut, pools, FC and a loss head."""
    x = sym.Variable("data")
    x = sym.Activation(sym.BatchNorm(_conv(x, "c0", 8, no_bias=True), name="bn0"), act_type="relu")
    x = sym.Pooling(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max")
    y = sym.Activation(
        sym.BatchNorm(_conv(x, "c1", 16, s=2), name="bn1", fix_gamma=False), act_type="relu"
    )
    y = sym.BatchNorm(_conv(y, "c2", 16), name="bn2", fix_gamma=False)
    sc = sym.BatchNorm(_conv(x, "sc", 16, k=1, s=2), name="scbn", fix_gamma=False)
    x = sym.Activation(sc + y, act_type="relu")
    x = sym.Pooling(x, global_pool=True, pool_type="avg", kernel=(1, 1))
    x = sym.FullyConnected(sym.Flatten(x), name="fc", num_hidden=5)
    return sym.SoftmaxOutput(x, name="softmax")


def _build(make, layout, monkeypatch):
    monkeypatch.setenv("MXMOD_CONV_LAYOUT", layout)
    with mx.name.NameManager():
        net = make()
    compiled_for(net)  # the layout is decided when the symbol is first compiled
    return net


def _run(net, shapes, is_train=True, seed=0):
    """Outputs, gradients and aux states after forward + backward (random head grads)."""
    ex = net.simple_bind(mx.cpu(), **shapes)
    rng = np.random.RandomState(seed)
    for name, arr in ex.arg_dict.items():
        if name.endswith("label"):
            arr[:] = rng.randint(0, 5, arr.shape)
        else:
            arr[:] = rng.randn(*arr.shape).astype("float32") * 0.5
    for arr in ex.aux_dict.values():
        arr[:] = rng.rand(*arr.shape).astype("float32") + 0.5
    ex.forward(is_train=is_train)
    heads = [mx.nd.array(rng.randn(*o.shape).astype("float32")) for o in ex.outputs]
    ex.backward(heads)
    outs = [o.asnumpy() for o in ex.outputs]
    grads = {k: v.asnumpy() for k, v in ex.grad_dict.items() if v is not None}
    aux = {k: v.asnumpy() for k, v in ex.aux_dict.items()}
    return outs, grads, aux


def _n_transposes(net, shapes) -> int:
    """Transposes in the traced training forward (the pass's only additions)."""
    ex = net.simple_bind(mx.cpu(), **shapes)
    g = compiled_for(net).graph
    args = {k: v._data for k, v in ex.arg_dict.items()}
    aux = {k: v._data for k, v in ex.aux_dict.items()}
    jaxpr = jax.make_jaxpr(lambda a, x: g(a, x, jax.random.PRNGKey(0), True))(args, aux)
    return str(jaxpr).count("transpose[")


def _check_same(make, shapes, monkeypatch, channel_last, is_train=True):
    """The pass on and off agree; ``channel_last``: whether the pass should have acted."""
    off = _build(make, "NCHW", monkeypatch)
    on = _build(make, "auto", monkeypatch)
    assert compiled_for(on).graph.channel_last and not compiled_for(off).graph.channel_last
    assert (_n_transposes(on, shapes) > _n_transposes(off, shapes)) == channel_last
    ref, got = _run(off, shapes, is_train), _run(on, shapes, is_train)
    for r, g in zip(ref[0], got[0]):
        assert r.shape == g.shape
        _close(g, r)
    for part in (1, 2):
        assert ref[part].keys() == got[part].keys()
        for k in ref[part]:
            assert ref[part][k].shape == got[part][k].shape, k
            _close(got[part][k], ref[part][k], k)


IMG = {"data": (4, 3, 12, 12)}


@pytest.mark.parametrize("is_train", [True, pytest.param(False, marks=pytest.mark.slow)])
def test_resnet_block(monkeypatch, is_train):
    shapes = dict(IMG, softmax_label=(4,))
    _check_same(resnet_block, shapes, monkeypatch, True, is_train)


def test_grouped_and_dilated_convs(monkeypatch):
    def make():
        x = _conv(sym.Variable("data"), "c0", 8)
        x = sym.Convolution(x, name="g", num_filter=8, kernel=(3, 3), num_group=4, pad=(1, 1))
        x = sym.Convolution(x, name="d", num_filter=6, kernel=(3, 3), dilate=(2, 2), pad=(2, 2))
        return sym.Convolution(
            x, name="gd", num_filter=6, kernel=(3, 2), num_group=2, dilate=(2, 1)
        )

    _check_same(make, IMG, monkeypatch, True)


def test_deconvolution(monkeypatch):
    def make():
        x = _conv(sym.Variable("data"), "c0", 8)
        x = sym.Deconvolution(
            x, name="up", num_filter=6, kernel=(4, 4), stride=(2, 2), pad=(1, 1), num_group=2
        )
        x = sym.Deconvolution(x, name="up2", num_filter=4, kernel=(3, 3), adj=(1, 1), stride=(2, 2))
        return sym.Deconvolution(x, name="t", num_filter=3, kernel=(3, 3), target_shape=(50, 50))

    _check_same(make, IMG, monkeypatch, True)


@pytest.mark.parametrize(
    "bn",
    [
        {"axis": -1},
        {"axis": 2},
        {"axis": -3, "fix_gamma": False},
        {"use_global_stats": True, "fix_gamma": False},
        {"output_mean_var": True, "fix_gamma": False},
    ],
    ids=["axis-1", "axis2", "axis-3", "global_stats", "mean_var"],
)
def test_batchnorm_variants(monkeypatch, bn):
    def make():
        x = sym.BatchNorm(_conv(sym.Variable("data"), "c0", 8), name="bn", **bn)
        if bn.get("output_mean_var"):
            return sym.Group([sym.Activation(x[0], act_type="tanh"), x[1], x[2]])
        return sym.Activation(x, act_type="tanh")

    _check_same(make, IMG, monkeypatch, True)


POOLS = [
    {"kernel": (3, 3), "stride": (2, 2), "pool_type": "max"},
    {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1), "pool_type": "avg"},
    {"kernel": (3, 3), "pad": (1, 1), "pool_type": "avg", "count_include_pad": False},
    {"kernel": (2, 2), "stride": (2, 2), "pool_type": "sum"},
    {"kernel": (2, 2), "stride": (2, 2), "pool_type": "lp", "p_value": 2},
    {"kernel": (3, 3), "stride": (2, 2), "pool_type": "max", "pooling_convention": "full"},
    {"kernel": (3, 3), "stride": (2, 2), "pool_type": "avg", "pooling_convention": "same"},
    {"kernel": (1, 1), "global_pool": True, "pool_type": "max"},
]


@pytest.mark.parametrize("pool", POOLS, ids=lambda p: "-".join(map(str, p.values())))
def test_pooling_variants(monkeypatch, pool):
    def make():
        x = sym.relu(_conv(sym.Variable("data"), "c0", 8))
        return sym.Pooling(x, name="pool", **pool) * 2.0

    _check_same(make, IMG, monkeypatch, True)


def test_region_edges(monkeypatch):
    """Values leave the region to channel-first ops, outputs and a mixed-layout add/Concat."""

    def make():
        data = sym.Variable("data")
        a = _conv(data, "a", 3)
        b = sym.LeakyReLU(_conv(data, "b", 3), act_type="prelu", name="pr")  # not handled
        s = sym.LeakyReLU(a + data, act_type="leaky") - b  # channel-first operands join
        cat = sym.Concat(a, s, data, dim=1)
        red = sym.sum(cat, axis=(2, 3))  # a channel-first op reads the region
        return sym.Group([a, cat, red, sym.transpose(s, axes=(0, 2, 1, 3)), sym.Flatten(s)])

    _check_same(make, IMG, monkeypatch, True)


@pytest.mark.parametrize("dims", [1, 3])
def test_1d_and_3d_are_left_alone(monkeypatch, dims):
    def make():
        k = (3,) * dims
        x = sym.Convolution(sym.Variable("data"), name="c", num_filter=4, kernel=k, pad=(1,) * dims)
        x = sym.Activation(sym.BatchNorm(x, name="bn", fix_gamma=False), act_type="relu")
        x = sym.Pooling(x, kernel=(2,) * dims, stride=(2,) * dims, pool_type="max")
        return sym.Deconvolution(x, name="d", num_filter=2, kernel=(2,) * dims, stride=(2,) * dims)

    _check_same(make, {"data": (2, 3) + (8,) * dims}, monkeypatch, False)


def test_explicit_channel_last_layout_is_left_alone(monkeypatch):
    def make():
        x = sym.Convolution(
            sym.Variable("data"), name="c", num_filter=4, kernel=(3, 3), layout="NHWC"
        )
        return sym.Pooling(x, kernel=(2, 2), layout="NHWC", pool_type="avg")

    _check_same(make, {"data": (2, 9, 9, 3)}, monkeypatch, False)


@pytest.mark.slow
def test_module_training_matches(monkeypatch):
    """Three Module SGD steps: same parameters (NCHW shapes) and moving statistics."""
    rng = np.random.RandomState(3)
    x = rng.randn(12, 3, 12, 12).astype("float32")
    y = rng.randint(0, 5, 12).astype("float32")

    def train(layout):
        net = _build(resnet_block, layout, monkeypatch)
        it = mx.io.NDArrayIter(x, y, batch_size=4)
        mod = mx.mod.Module(net, context=mx.cpu())
        mx.random.seed(0)
        mod.fit(
            it,
            num_epoch=1,
            optimizer="sgd",
            optimizer_params={"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4},
            initializer=mx.init.Xavier(rnd_type="gaussian", magnitude=2),
        )
        return mod.get_params()

    (arg0, aux0), (arg1, aux1) = train("NCHW"), train("auto")
    assert arg0["c0_weight"].shape == (8, 3, 3, 3)
    for ref, got in ((arg0, arg1), (aux0, aux1)):
        assert ref.keys() == got.keys()
        for k in ref:
            np.testing.assert_allclose(got[k].asnumpy(), ref[k].asnumpy(), rtol=1e-4, atol=1e-5)


def test_env_var(monkeypatch):
    assert compiled_for(_build(resnet_block, "nhwc", monkeypatch)).graph.channel_last
    assert not compiled_for(_build(resnet_block, "NCHW", monkeypatch)).graph.channel_last
    with pytest.raises(MXNetError, match="MXMOD_CONV_LAYOUT='NWHC'.*'NCHW'"):
        _build(resnet_block, "NWHC", monkeypatch)
