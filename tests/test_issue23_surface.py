"""Issue 23's API-surface gaps against MXNet 1.9.1 (fixtures: gen_issue23_surface.py)."""

import gzip
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import mxmod as mx

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "issue23_surface")


def _load(name):
    with open(os.path.join(FIX, name)) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def names():
    return _load("names.json")


# ----------------------------------------------------------------- amp.amp submodule
def test_amp_submodule_has_mxnets_names(names):
    from mxmod.contrib.amp import amp

    for name in names["amp_all"]:
        assert callable(getattr(amp, name)), name
        assert getattr(mx.contrib.amp, name) is getattr(amp, name)
    assert amp.convert_bucketing_module is mx.contrib.amp.convert_bucketing_module
    with pytest.raises(NotImplementedError, match="convert_hybrid_block.*convert_model"):
        amp.convert_hybrid_block(None)


# ----------------------------------------------------------------- legacy samplers
def test_legacy_sampler_symbols_match_mxnet_json(names):
    u = mx.sym.uniform(low=1, high=3, shape=(2, 3), dtype="float16", name="u")
    assert u.tojson() == names["sym_uniform"]
    n = mx.sym.normal(loc=2, scale=0.5, shape=(4,), name="n")
    assert n.tojson() == names["sym_normal"]
    out = u.eval()[0].asnumpy()
    assert out.dtype == np.float16 and out.shape == (2, 3)
    assert ((out >= 1) & (out < 3)).all()


def test_legacy_sampler_ndarrays_take_shape_dtype_ctx():
    mx.random.seed(3)
    a = mx.nd.uniform(low=-2, high=-1, shape=(400,), dtype="float16", ctx=mx.cpu(0))
    assert a.dtype == np.float16 and a.shape == (400,) and a.context == mx.cpu(0)
    v = a.asnumpy()
    assert ((v >= -2) & (v <= -1)).all() and v.std() > 0.1  # float16 may round up to -1
    b = mx.nd.normal(loc=5, scale=0.1, shape=(2, 500), ctx=mx.cpu())
    assert b.shape == (2, 500) and b.dtype == np.float32
    assert abs(b.asnumpy().mean() - 5) < 0.05 and 0.05 < b.asnumpy().std() < 0.2
    mx.random.seed(3)
    again = mx.nd.uniform(low=-2, high=-1, shape=(400,), dtype="float16")
    np.testing.assert_array_equal(again.asnumpy(), v)  # the same generator as nd.random
    with pytest.raises(mx.MXNetError, match="low must be less or equal to high"):
        mx.nd.uniform(low=1, high=0, shape=(2,))
    with pytest.raises(mx.MXNetError, match="scale parameter in gaussian has to be positive"):
        mx.nd.normal(scale=-1, shape=(2,))


def test_zeros_like_ones_like_accept_ctx(names):
    x = mx.nd.ones((2, 2), dtype="float16")
    z = mx.nd.zeros_like(x, ctx=mx.cpu(1))
    o = mx.nd.ones_like(x, ctx="gpu(0)")
    # MXNet keeps the output on the input's context whatever ctx says
    assert str(z.context) == names["zeros_like_ctx"] and str(o.context) == names["ones_like_ctx"]
    assert z.dtype == np.float16 and (z.asnumpy() == 0).all() and (o.asnumpy() == 1).all()
    assert mx.nd.zeros_like(x, dtype="float32").dtype == np.float16  # MXNet keeps x's dtype
    sym = mx.sym.zeros_like(mx.sym.var("x"), ctx=mx.cpu())
    assert sym.tojson() == names["zeros_like_sym"]


# ----------------------------------------------------------------- gluon subclasses
RBM_LIKE = textwrap.dedent(
    """
    import mxmod as mx
    from mxmod import gluon
    from mxmod.gluon import nn, rnn, loss
    from mxmod.gluon.data import Dataset

    class BinaryRBMBlock(mx.gluon.HybridBlock):
        def __init__(self, num_hidden, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.num_hidden = num_hidden

        def hybrid_forward(self, F, data):
            return F.Custom(data, op_type="BinaryRBM")

    class Head(nn.Dense):
        pass

    class Cell(rnn.LSTMCell):
        @property
        def size(self):
            return 3

    class MyLoss(loss.Loss):
        @staticmethod
        def helper():
            return 7

    class Data(Dataset, dict):
        pass

    assert MyLoss.helper() == 7
    assert issubclass(BinaryRBMBlock, gluon.HybridBlock)
    assert gluon.HybridBlock is nn.HybridBlock and gluon.Block is nn.Block
    """
)


def test_gluon_classes_can_be_subclassed_at_import(tmp_path):
    script = tmp_path / "rbm_like.py"
    script.write_text(RBM_LIKE + "print('defined')\n")
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "defined" in res.stdout


def test_gluon_subclass_instances_raise_naming_the_class():
    ns: dict = {}
    exec(RBM_LIKE, ns)
    with pytest.raises(
        NotImplementedError,
        match=r"BinaryRBMBlock\(\), a mx.gluon.HybridBlock subclass, is not available in mxmod",
    ):
        ns["BinaryRBMBlock"](10)
    with pytest.raises(NotImplementedError, match=r"Head\(\), a mx.gluon.nn.Dense subclass"):
        ns["Head"](4)
    with pytest.raises(NotImplementedError, match=r"mx.gluon.rnn.LSTMCell\(\) is not available"):
        mx.gluon.rnn.LSTMCell(4)
    with pytest.raises(NotImplementedError, match=r"mx.gluon.Trainer\(\).*mx.mod.Module"):
        mx.gluon.Trainer(None, "sgd")
    with pytest.raises(NotImplementedError, match=r"mx.gluon.utils.split_and_load"):
        mx.gluon.utils.split_and_load([], [])
    with pytest.raises(AttributeError):
        mx.gluon._private  # noqa: B018


# ----------------------------------------------------------------- AMP conversions
@pytest.fixture(scope="module")
def amp_cases():
    with gzip.open(os.path.join(FIX, "amp.json.gz"), "rt") as f:
        return json.load(f)


def _dtype_name(arr):
    return np.dtype(arr.dtype).name


@pytest.mark.parametrize("net", ["conv", "r18"])
def test_amp_convert_symbol_matches_mxnet(amp_cases, net):
    from mxmod.contrib import amp

    sym = mx.sym.load_json(amp_cases["nets"][net])
    for cop in (False, True):
        for dt in ("float16", "bfloat16"):
            for dn in (None, ["data"]):
                got = amp.convert_symbol(
                    sym, target_dtype=dt, data_names=dn, cast_optional_params=cop
                )
                want = amp_cases[f"{net}/sym/{dt}/{cop}/{dn is not None}"]
                assert got.tojson(remove_amp_cast=False) == want[0], (dt, cop, dn)
                assert got.tojson() == want[1], (dt, cop, dn)  # head casts stay: float32 out
    assert sym.tojson() == amp_cases["nets"][net]  # the given symbol is untouched


@pytest.mark.parametrize("net", ["conv", "r18"])
def test_amp_convert_model_matches_mxnet(amp_cases, net):
    from mxmod.contrib import amp

    sym = mx.sym.load_json(amp_cases["nets"][net])
    arg_shapes, _, aux_shapes = sym.infer_shape(**amp_cases["shapes"][net])
    for cop in (False, True):
        args = {n: mx.nd.zeros(s) for n, s in zip(sym.list_arguments(), arg_shapes)}
        del args["data"]
        aux = {n: mx.nd.zeros(s) for n, s in zip(sym.list_auxiliary_states(), aux_shapes)}
        for dt in ("float16", "bfloat16"):  # the same dicts: float16 params stay float16
            msym, margs, maux = amp.convert_model(
                sym, args, aux, target_dtype=dt, cast_optional_params=cop
            )
            want = amp_cases[f"{net}/model/{dt}/{cop}"]
            assert msym.tojson(remove_amp_cast=False) == want[0], (dt, cop)
            assert msym.tojson() == want[1], (dt, cop)
            assert {k: _dtype_name(v) for k, v in {**margs, **maux}.items()} == want[2]


def test_amp_converted_net_returns_float32(amp_cases):
    from mxmod.contrib import amp

    sym = mx.sym.load_json(amp_cases["nets"]["conv"])
    conv = amp.convert_symbol(sym, target_dtype="float16")
    reloaded = mx.sym.load_json(conv.tojson())  # the saved graph keeps its output cast
    _, out_types, _ = reloaded.infer_type(data="float32")
    assert out_types == [np.float32]


# ----------------------------------------------------------------- encode_sentences
def test_encode_sentences_matches_mxnet(names):
    for sentences, vocab, kwargs, coded, new, given_after in names["encode_sentences"]:
        given = None if vocab is None else dict(vocab)
        got, got_vocab = mx.rnn.encode_sentences(sentences, vocab=given, **kwargs)
        assert (got, got_vocab) == (coded, new), (sentences, vocab, kwargs)
        if given is not None:
            assert given == given_after and got_vocab is given  # updated in place, as MXNet


def test_encode_sentences_mxnet_unittest_case():
    # MXNet's tests/python/unittest/test_rnn.py::test_encode_sentences
    vocab = {"a": 1, "b": 2, "c": 3}
    res, out = mx.rnn.encode_sentences(
        [["a", "b", "c"], ["b", "c", "d"]], vocab, -1, "\n", 0, "UNK"
    )
    assert res == [[1, 2, 3], [2, 3, 0]] and out["UNK"] == 0


def test_encode_sentences_unknown_word_without_unknown_token():
    with pytest.raises(KeyError, match="Unknown token 'zz'.*unknown_token"):
        mx.rnn.encode_sentences([["a", "zz"]], vocab={"a": 1})
    with pytest.raises(AssertionError, match="Unknown token 'zz'"):  # MXNet asserts
        mx.rnn.encode_sentences([["a", "zz"]], vocab={"a": 1})


# ----------------------------------------------------------------- ImageRecordIter small images
RECORD_CASES = {
    "default": {"data_shape": (3, 16, 16)},
    "cubic": {"data_shape": (3, 16, 16), "inter_method": 2},
    "auto": {"data_shape": (3, 16, 16), "inter_method": 9},
    "nearest": {"data_shape": (3, 16, 16), "inter_method": 0},
    "rect": {"data_shape": (3, 9, 14)},
    "f32_13": {"data_shape": (3, 13, 13)},
    "f32_14": {"data_shape": (3, 14, 14)},
    "f32_15": {"data_shape": (3, 15, 15)},
    "pad": {"data_shape": (3, 16, 16), "pad": 2},
}


@pytest.mark.parametrize("case", sorted(RECORD_CASES))
def test_image_record_iter_scales_up_small_images_as_mxnet(case):
    want = np.load(os.path.join(FIX, "small_batches.npz"))[case]
    it = mx.io.ImageRecordIter(
        path_imgrec=os.path.join(FIX, "small.rec"),
        path_imgidx=os.path.join(FIX, "small.idx"),
        batch_size=len(want),
        **RECORD_CASES[case],
    )
    got = it.next().data[0].asnumpy()
    assert got.shape == want.shape
    # bicubic rounding may differ by one level between OpenCV builds
    tol = 1 if RECORD_CASES[case].get("inter_method") in (2, 9) else 0
    np.testing.assert_allclose(got, want, atol=tol, rtol=0)


# ----------------------------------------------------------------- example/dsd: SGD subclasses
def test_sgd_subclass_update_is_not_called_by_module_fit_as_mxnet():
    want = np.load(os.path.join(FIX, "sgd_subclass.npz"))
    calls = []

    class Pruning(mx.optimizer.SGD):  # example/dsd's SparseSGD overrides update() only
        def update(self, index, weight, grad, state):
            calls.append(index)
            assert isinstance(weight, mx.nd.NDArray)  # dsd's check (lists would fail it)
            weight[:] = 0

    got = {}
    for tag, opt in (("param", Pruning), ("plain", mx.optimizer.SGD)):
        net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3, name="fc")
        net = mx.sym.SoftmaxOutput(net, name="sm")
        mod = mx.mod.Module(net, context=[mx.cpu(0), mx.cpu(1)], label_names=["sm_label"])
        it = mx.io.NDArrayIter(want["x"], want["y"], batch_size=5, label_name="sm_label")
        mod.fit(
            it,
            num_epoch=2,
            arg_params={"fc_weight": mx.nd.array(want["w0"]), "fc_bias": mx.nd.zeros(3)},
            optimizer=opt(learning_rate=0.1, momentum=0.9, wd=0.004),
        )
        for k, v in mod.get_params()[0].items():
            got[f"{tag}:{k}"] = v.asnumpy()
            np.testing.assert_allclose(got[f"{tag}:{k}"], want[f"{tag}:{k}"], rtol=1e-4, atol=1e-5)
    assert bool(want["called"]) is False and not calls  # SGD's own rule ran, as in MXNet
    # the subclass's update() is still what a direct call runs
    w = mx.nd.ones((2,))
    Pruning().update(0, w, mx.nd.ones((2,)), None)
    assert calls == [0] and (w.asnumpy() == 0).all()


# ----------------------------------------------------------------- 64-bit dtypes (x64 off)
def test_64_bit_dtype_without_x64_warns_naming_the_fix():
    import jax

    if jax.config.jax_enable_x64:
        pytest.skip("x64 mode on: 64-bit arrays compute in 64 bits")
    with pytest.warns(UserWarning, match=r"dtype='float64' needs JAX's x64 mode.*JAX_ENABLE_X64"):
        a = mx.nd.array([1.5, 2.5], dtype="float64")
    assert a.dtype == np.float32
    with pytest.warns(UserWarning, match=r"mx.nd.random.uniform: dtype='float64'"):
        mx.nd.random.uniform(shape=(2,), dtype="float64")
    with pytest.warns(UserWarning, match=r"dtype='int64'.*use dtype='int32'"):
        mx.nd.zeros((2,), dtype="int64")
    with pytest.warns(UserWarning, match=r"astype: dtype='float64' needs JAX's x64 mode"):
        assert mx.nd.ones((2,)).astype("float64").dtype == np.float32


def test_numpy_all_any_reduce_ndarrays():
    # MXNet's tests assert `np.all(x == y)` on NDArrays (test_large_int_rounding)
    a = mx.nd.array([[1, 0], [1, 1]])
    assert not np.all(a) and np.any(a) and np.all(a == a)
    assert np.all(a, axis=0).tolist() == [True, False]
    assert np.any(a == 0, axis=1, keepdims=True).tolist() == [[True], [False]]
    assert bool(a.all()) is False and bool((a >= 0).all()) is True


X64_SCRIPT = textwrap.dedent(
    """
    import numpy as np
    import mxmod as mx

    rs = np.random.RandomState(0)
    a, b = rs.uniform(-10, 10, (3, 4)), rs.uniform(-10, 10, (3, 4))
    x, y = mx.nd.array(a, dtype="float64"), mx.nd.array(b, dtype="float64")
    assert x.dtype == np.float64 and (x + y).dtype == np.float64
    assert np.max(np.abs((x * y).asnumpy() - a * b) / (np.abs(a * b) + 1e-7)) < 1e-12
    assert abs(mx.nd.sum(x).asscalar() - a.sum()) < 1e-9
    big = mx.nd.array([2**40 + 1], dtype="int64")
    assert big.dtype == np.int64 and int((big * 3).asnumpy()[0]) == 3 * (2**40 + 1)
    # float32 paths stay float32
    assert mx.nd.array(a).dtype == np.float32 and mx.nd.ones((2,)).dtype == np.float32
    print("x64 ok")
    """
)


@pytest.mark.slow
def test_64_bit_arrays_compute_in_64_bits_with_x64_mode():
    env = {**os.environ, "JAX_ENABLE_X64": "1", "JAX_PLATFORMS": "cpu"}
    res = subprocess.run(
        [sys.executable, "-c", X64_SCRIPT], capture_output=True, text=True, env=env, timeout=300
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert "x64 ok" in res.stdout


# ----------------------------------------------------------------- amp.convert_bucketing_module
def _bucket_sym_gen(key):
    data = mx.sym.var("data")
    label = mx.sym.var("softmax_label")
    emb = mx.sym.Embedding(data, input_dim=10, output_dim=4, name="embed")
    pooled = mx.sym.sum(emb, axis=1, name="pool")
    fc = mx.sym.FullyConnected(pooled, num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(fc, label, name="softmax"), ("data",), ("softmax_label",)


@pytest.mark.parametrize("cop", [False, True])
def test_convert_bucketing_module_matches_mxnet(cop):
    from mxmod.contrib.amp import amp

    want = _load("bucketing_amp.json")
    mod = mx.mod.BucketingModule(_bucket_sym_gen, default_bucket_key=5)
    mod.bind([("data", (2, 5))], [("softmax_label", (2,))])
    mod.init_params(arg_params={k: mx.nd.array(v) for k, v in want["params"].items()})
    mod.switch_bucket(3, [("data", (2, 3))], [("softmax_label", (2,))])
    conv = amp.convert_bucketing_module(mod, "float16", cast_optional_params=cop)
    got = {str(k): m._symbol.tojson(remove_amp_cast=False) for k, m in conv._buckets.items()}
    assert got == want[str(cop)]["buckets"]
    conv.bind([("data", (2, 5))], [("softmax_label", (2,))], for_training=False)
    args = conv.get_params()[0]
    assert {k: np.dtype(v.dtype).name for k, v in args.items()} == want[str(cop)]["dtypes"]
    for k, v in args.items():
        np.testing.assert_array_equal(v.asnumpy().astype(np.float32), want[str(cop)]["values"][k])
    assert {k: v.dtype for k, v in mod.get_params()[0].items()} == {k: np.float32 for k in args}
    with pytest.raises(mx.MXNetError, match="initialise the BucketingModule's parameters"):
        fresh = mx.mod.BucketingModule(_bucket_sym_gen, default_bucket_key=5)
        fresh.bind([("data", (2, 5))], [("softmax_label", (2,))])
        amp.convert_bucketing_module(fresh)


def test_a_symbol_input_given_as_none_is_dropped_as_in_mxnet():
    x = mx.sym.Variable("x")
    fc = mx.sym.FullyConnected(data=x, bias=None, no_bias=True, num_hidden=3, name="fc")
    assert fc.list_arguments() == ["x", "fc_weight"]
    fc = mx.sym.FullyConnected(data=x, bias=None, num_hidden=3, name="fc")
    assert fc.list_arguments() == ["x", "fc_weight", "fc_bias"]  # made, as when not given


def test_an_integer_input_gradient_is_zeros_of_its_dtype():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    mod = mx.mod.Module(mx.sym.Cast(a, dtype="float32") + b, ["a", "b"], label_names=None)
    mod.bind([mx.io.DataDesc("a", (2, 3), "int32"), ("b", (2, 3))], inputs_need_grad=True)
    mod.init_params()
    mod.forward(mx.io.DataBatch([mx.nd.ones((2, 3), dtype="int32"), mx.nd.ones((2, 3))]))
    mod.backward([mx.nd.ones((2, 3))])
    ga, gb = mod.get_input_grads()
    assert ga.dtype == np.int32 and ga.asnumpy().tolist() == [[0] * 3] * 2
    assert gb.asnumpy().tolist() == [[1.0] * 3] * 2


@pytest.mark.parametrize(
    "make",
    [lambda x: mx.sym.argmax_channel(x), lambda x: mx.sym.batch_take(x, mx.sym.zeros((3,)))],
    ids=["argmax_channel", "batch_take"],
)
def test_binding_gradients_through_an_op_without_one_fails_as_in_mxnet(make):
    x = mx.sym.Variable("x")
    with pytest.raises(mx.base.MXNetError, match="non-differentiable because it didn't"):
        make(x).simple_bind(mx.cpu(), x=(3, 4))
    make(x).simple_bind(mx.cpu(), x=(3, 4), grad_req="null")  # no gradient: fine
    exe = mx.sym.BlockGrad(make(x)).simple_bind(mx.cpu(), x=(3, 4))  # cut: fine
    exe.forward(is_train=True)
    exe.backward()
    mod = mx.mod.Module(make(mx.sym.FullyConnected(x, num_hidden=4)), ["x"], None)
    with pytest.raises(mx.base.MXNetError, match="non-differentiable"):
        mod.bind([("x", (3, 4))])
