"""BucketingModule: shared weights across buckets, one compile per bucket, no growth with
switches, multi-device equality, checkpoints, and the errors of issue 12."""

import gc
import random

import jax
import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError


VOCAB, HIDDEN, BUCKETS, BATCH = 12, 8, [3, 5], 4


def sentences(n=48, seed=0):
    """Sequences following ``w[t+1] = (w[t] + 1) % 11 + 1``: learnable, all buckets used."""
    rng = np.random.RandomState(seed)
    out = []
    for i in range(n):
        length = [3, 5][i % 2] - rng.randint(0, 2)
        start = rng.randint(1, VOCAB)
        out.append([(start + t - 1) % (VOCAB - 1) + 1 for t in range(length)])
    return out


def make_iter(n=48, seed=0):
    return mx.rnn.BucketSentenceIter(sentences(n, seed), BATCH, buckets=BUCKETS, invalid_label=0)


def lm_sym_gen(hidden=HIDDEN):
    cell = mx.rnn.LSTMCell(num_hidden=hidden, prefix="lstm_")

    def sym_gen(seq_len):
        data = mx.sym.Variable("data")
        label = mx.sym.Variable("softmax_label")
        embed = mx.sym.Embedding(data, input_dim=VOCAB, output_dim=hidden, name="embed")
        cell.reset()
        outputs, _ = cell.unroll(seq_len, inputs=embed, merge_outputs=True)
        pred = mx.sym.FullyConnected(
            mx.sym.Reshape(outputs, shape=(-1, hidden)), num_hidden=VOCAB, name="pred"
        )
        pred = mx.sym.SoftmaxOutput(pred, mx.sym.Reshape(label, shape=(-1,)), name="softmax")
        return pred, ("data",), ("softmax_label",)

    return sym_gen


def fc_sym_gen(key, data=None):
    """A cheap bucketed net: the same FC over (batch, key) inputs (no unrolling)."""
    data = mx.sym.Variable("data") if data is None else data
    net = mx.sym.FullyConnected(mx.sym.Reshape(data, shape=(-1, 1)), num_hidden=3, name="fc")
    net = mx.sym.SoftmaxOutput(
        net, mx.sym.Reshape(mx.sym.Variable("softmax_label"), shape=(-1,)), name="softmax"
    )
    return net, ("data",), ("softmax_label",)


def fc_batch(key, seed=0):
    rng = np.random.RandomState(seed + key)
    x = rng.randn(BATCH, key).astype("float32")
    y = (x > 0).astype("float32") + (x > 1)
    return mx.io.DataBatch(
        [mx.nd.array(x)],
        [mx.nd.array(y)],
        bucket_key=key,
        provide_data=[mx.io.DataDesc("data", (BATCH, key))],
        provide_label=[mx.io.DataDesc("softmax_label", (BATCH, key))],
    )


def fc_module(**kw):
    mod = mx.mod.BucketingModule(fc_sym_gen, default_bucket_key=5, **kw)
    mod.bind([("data", (BATCH, 5))], [("softmax_label", (BATCH, 5))])
    mod.init_params(mx.init.Xavier())
    return mod


def compiles(mod, kind="step"):
    """Compilations per bucket of programs of ``kind`` (None: every program)."""
    counts = {}
    for key, m in mod._buckets.items():
        progs = mx.executor.compiled_for(m.symbol).programs.values()
        counts[key] = sum(
            f._cache_size()
            for p in progs
            for k, f in p._cache.items()
            if kind is None or k[0] == kind
        )
    return counts


def test_recipe_trains_and_perplexity_drops():
    it = make_iter()
    mod = mx.mod.BucketingModule(lm_sym_gen(), default_bucket_key=it.default_bucket_key)
    seen = []
    metric = mx.metric.Perplexity(0)
    mod.fit(
        it,
        eval_metric=metric,
        num_epoch=4,
        optimizer="sgd",
        optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
        initializer=mx.init.Xavier(),
        epoch_end_callback=lambda *a: seen.append(metric.get()[1]),
    )
    assert len(seen) == 4
    assert seen[-1] < 0.7 * seen[0], seen
    assert sorted(mod._buckets) == BUCKETS


def test_fused_rnn_cell_buckets_share_one_parameter_blob():
    cell = mx.rnn.FusedRNNCell(num_hidden=HIDDEN, num_layers=1, mode="lstm", prefix="lstm_")

    def sym_gen(seq_len):
        embed = mx.sym.Embedding(
            mx.sym.Variable("data"), input_dim=VOCAB, output_dim=HIDDEN, name="embed"
        )
        cell.reset()
        outputs, _ = cell.unroll(seq_len, inputs=embed, merge_outputs=True, layout="NTC")
        pred = mx.sym.FullyConnected(
            mx.sym.Reshape(outputs, shape=(-1, HIDDEN)), num_hidden=VOCAB, name="pred"
        )
        label = mx.sym.Reshape(mx.sym.Variable("softmax_label"), shape=(-1,))
        return mx.sym.SoftmaxOutput(pred, label, name="softmax"), ("data",), ("softmax_label",)

    it = make_iter()
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=it.default_bucket_key)
    metric, seen = mx.metric.Perplexity(0), []
    mod.fit(
        it,
        eval_metric=metric,
        num_epoch=3,
        initializer=mx.init.Xavier(),
        optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
        epoch_end_callback=lambda *a: seen.append(metric.get()[1]),
    )
    assert seen[-1] < 0.8 * seen[0], seen
    assert "lstm_parameters" in mod.get_params()[0]
    # the fused cell's graph does not depend on the length: both buckets share one graph
    # (structural cache), which compiled once per shape
    shared = {id(mx.executor.compiled_for(m.symbol)) for m in mod._buckets.values()}
    assert len(shared) == 1 and compiles(mod, None) == {3: 2, 5: 2}


def test_every_bucket_compiles_once_over_three_epochs_and_memory_is_flat():
    it = make_iter()
    mod = mx.mod.BucketingModule(lm_sym_gen(), default_bucket_key=it.default_bucket_key)
    mod.fit(
        it,
        eval_metric=mx.metric.Perplexity(0),
        num_epoch=1,
        optimizer="sgd",
        initializer=mx.init.Xavier(),
    )
    assert compiles(mod) == {3: 1, 5: 1}
    assert compiles(mod, None) == {3: 1, 5: 1}  # the fused step is all that ran
    gc.collect()
    live = len(jax.live_arrays())
    groups = len(mod._curr_module._exec_group.state.groups)
    mod.fit(it, eval_metric=mx.metric.Perplexity(0), num_epoch=3, begin_epoch=1)
    gc.collect()
    assert compiles(mod, None) == {3: 1, 5: 1}
    assert len(mod._curr_module._exec_group.state.groups) == groups == 2
    assert len(jax.live_arrays()) <= live


def test_buckets_share_one_train_state_and_optimizer():
    mod = fc_module()
    mod.init_optimizer(optimizer_params={"learning_rate": 0.5})
    before = mod.get_params()[0]["fc_weight"].asnumpy().copy()
    mod.forward_backward(fc_batch(2))
    mod.update()
    after_small = mod.get_params()[0]["fc_weight"].asnumpy().copy()
    assert not np.allclose(before, after_small)
    small, big = mod._buckets[2], mod._buckets[5]
    assert small._exec_group.state is big._exec_group.state
    assert small._optimizer is big._optimizer
    mod.forward_backward(fc_batch(5))
    mod.update()
    # the default bucket's host dicts follow updates made on the other bucket
    assert not np.allclose(mod.get_params()[0]["fc_weight"].asnumpy(), after_small)
    assert mod._curr_module._optimizer.num_update == 2


def test_pending_update_lands_before_switching_buckets():
    ref, mod = fc_module(), fc_module()
    mod.set_params(*ref.get_params())
    for m in (ref, mod):
        m.init_optimizer(optimizer_params={"learning_rate": 0.5})
    # ref: flush explicitly after each update; mod: switch buckets with the update pending
    for key in (2, 5, 2):
        for m in (ref, mod):
            m.forward(fc_batch(key), is_train=True)
            m.backward()
            m.update()
        ref.get_outputs()
    np.testing.assert_allclose(
        mod.get_params()[0]["fc_weight"].asnumpy(),
        ref.get_params()[0]["fc_weight"].asnumpy(),
        rtol=1e-6,
    )


def test_two_contexts_equal_one_fc():
    results = []
    for ctx in (mx.cpu(0), [mx.cpu(0), mx.cpu(1)]):
        mod = fc_module(context=ctx)
        mod.set_params(
            {"fc_weight": mx.nd.array([[0.3], [-0.2], [0.1]]), "fc_bias": mx.nd.zeros((3,))}, {}
        )
        mod.init_optimizer(optimizer_params={"learning_rate": 0.5, "momentum": 0.9})
        for key in (2, 5, 2, 5):
            mod.forward_backward(fc_batch(key, seed=key))
            mod.update()
        results.append(mod.get_params()[0]["fc_weight"].asnumpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5, atol=1e-7)


@pytest.mark.slow
def test_two_contexts_equal_one():
    it = make_iter()
    init = mx.mod.BucketingModule(lm_sym_gen(), default_bucket_key=5)
    init.bind(it.provide_data, it.provide_label)
    init.init_params(mx.init.Xavier())
    arg, aux = init.get_params()
    arg = {k: v.copy() for k, v in arg.items()}
    results = []
    for ctx in (mx.cpu(0), [mx.cpu(0), mx.cpu(1)]):
        random.seed(1)
        np.random.seed(1)
        it = make_iter()  # the same batch order in both runs
        mod = mx.mod.BucketingModule(lm_sym_gen(), default_bucket_key=5, context=ctx)
        mod.fit(
            it,
            eval_metric=mx.metric.Perplexity(0),
            num_epoch=2,
            arg_params=arg,
            aux_params=aux,
            optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
        )
        results.append({k: v.asnumpy() for k, v in mod.get_params()[0].items()})
    for name in results[0]:
        np.testing.assert_allclose(
            results[1][name], results[0][name], rtol=2e-5, atol=2e-6, err_msg=name
        )


def test_state_names_are_per_bucket_inputs_set_and_read():
    def gen(key):
        return fc_sym_gen(key, mx.sym.Variable("data") + mx.sym.Variable("bias_state"))

    mod = mx.mod.BucketingModule(gen, default_bucket_key=5, state_names=["bias_state"])
    mod.bind([("data", (BATCH, 5))], [("softmax_label", (BATCH, 5))])
    mod.init_params(mx.init.Uniform(0.5))
    assert "bias_state" not in mod.get_params()[0]
    mod.forward(fc_batch(2), is_train=False)
    before = mod.get_outputs()[0].asnumpy()
    mod.set_states(value=2.0)
    np.testing.assert_array_equal(mod.get_states()[0].asnumpy(), np.full((BATCH, 2), 2.0))
    mod.forward(fc_batch(2), is_train=False)
    assert not np.allclose(mod.get_outputs()[0].asnumpy(), before)


def test_prepare_binds_the_next_bucket_and_switches_back():
    mod = fc_module()
    mod.prepare(fc_batch(2))
    assert mod._curr_bucket_key == 5 and mod._buckets[2].binded
    assert mod.data_shapes[0].shape == (BATCH, 5)


def test_fixed_params_are_not_updated():
    mod = mx.mod.BucketingModule(fc_sym_gen, default_bucket_key=5, fixed_param_names=["fc_bias"])
    mod.bind([("data", (BATCH, 5))], [("softmax_label", (BATCH, 5))])
    mod.init_params(mx.init.Uniform(0.5))
    mod.init_optimizer(optimizer_params={"learning_rate": 0.5})
    bias = mod.get_params()[0]["fc_bias"].asnumpy().copy()
    for key in (2, 5):
        mod.forward_backward(fc_batch(key))
        mod.update()
    np.testing.assert_array_equal(mod.get_params()[0]["fc_bias"].asnumpy(), bias)


def test_checkpoint_round_trip(tmp_path):
    mod = fc_module()
    mod.init_optimizer()
    for key in (2, 5):
        mod.forward_backward(fc_batch(key))
        mod.update()
    prefix = str(tmp_path / "bk")
    mod.save_checkpoint(prefix, 3)
    for f in ("bk-0003.params", "bk-2-symbol.json", "bk-5-symbol.json", "bk.buckets"):
        assert (tmp_path / f).exists(), f
    assert mx.nd.load(prefix + ".buckets")[0].asnumpy().tolist() == [5, 2]
    loaded = mx.mod.BucketingModule.load(prefix, 3, sym_gen=fc_sym_gen, default_bucket_key=5)
    assert sorted(loaded._buckets) == [2, 5]
    loaded.bind([("data", (BATCH, 5))], [("softmax_label", (BATCH, 5))], for_training=False)
    for key in (2, 5):
        mod.forward(fc_batch(key), is_train=False)
        loaded.forward(fc_batch(key), is_train=False)
        np.testing.assert_allclose(
            loaded.get_outputs()[0].asnumpy(), mod.get_outputs()[0].asnumpy(), rtol=1e-6
        )


def test_load_dict():
    mod = fc_module()
    arg, aux = mod.get_params()
    syms = {k: fc_sym_gen(k)[0] for k in (2, 5)}
    again = mx.mod.BucketingModule.load_dict(syms, fc_sym_gen, 5, arg, aux)
    again.bind([("data", (BATCH, 5))], [("softmax_label", (BATCH, 5))], for_training=False)
    again.forward(fc_batch(2), is_train=False)
    mod.forward(fc_batch(2), is_train=False)
    np.testing.assert_allclose(
        again.get_outputs()[0].asnumpy(), mod.get_outputs()[0].asnumpy(), rtol=1e-6
    )


def test_names_before_and_after_bind():
    mod = mx.mod.BucketingModule(fc_sym_gen, default_bucket_key=5)
    assert mod.data_names == ["data"] and mod.output_names == ["softmax_output"]
    with pytest.raises(MXNetError, match="bind"):
        _ = mod.data_shapes
    mod.bind([("data", (BATCH, 5))], [("softmax_label", (BATCH, 5))])
    # as MXNet: the output's batch axis is reported as the batch size, whatever its length
    assert mod.output_shapes == [("softmax_output", (BATCH, 3))]
    assert mod.symbol is mod._buckets[5].symbol


# ------------------------------------------------------------------ errors
def test_bucket_with_a_new_parameter_is_named():
    def gen(key):
        sym, d, lab = fc_sym_gen(key)
        if key == 2:
            extra = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=1, name="extra")
            sym = mx.sym.Group([sym, mx.sym.BlockGrad(extra)])
        return sym, d, lab

    mod = mx.mod.BucketingModule(gen, default_bucket_key=5)
    mod.bind([("data", (BATCH, 5))], [("softmax_label", (BATCH, 5))])
    mod.init_params()
    with pytest.raises(MXNetError, match="'extra_weight'.*default bucket"):
        mod.forward(fc_batch(2))


def test_bucket_with_a_reshaped_parameter_is_named():
    def gen(key):
        data = mx.sym.Variable("data")
        net = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
        return mx.sym.SoftmaxOutput(net, name="softmax"), ("data",), ("softmax_label",)

    mod = mx.mod.BucketingModule(gen, default_bucket_key=5)
    mod.bind([("data", (BATCH, 5))], [("softmax_label", (BATCH,))])
    mod.init_params()
    batch = mx.io.DataBatch(
        [mx.nd.ones((BATCH, 2))],
        [mx.nd.zeros((BATCH,))],
        bucket_key=2,
        provide_data=[("data", (BATCH, 2))],
        provide_label=[("softmax_label", (BATCH,))],
    )
    with pytest.raises(MXNetError, match=r"'fc_weight' has shape \(3, 2\).*\(3, 5\)"):
        mod.forward(batch)


def test_sym_gen_that_cannot_build_a_key_names_it():
    def gen(key):
        if key not in (5,):
            raise KeyError(f"no network for length {key}")
        return fc_sym_gen(key)

    mod = mx.mod.BucketingModule(gen, default_bucket_key=5)
    mod.bind([("data", (BATCH, 5))], [("softmax_label", (BATCH, 5))])
    mod.init_params()
    with pytest.raises(MXNetError, match=r"sym_gen\(7\) failed: KeyError.*bucket keys"):
        mod.forward(fc_batch(7))


def test_constructor_and_bind_errors():
    with pytest.raises(MXNetError, match="default_bucket_key"):
        mx.mod.BucketingModule(fc_sym_gen)
    with pytest.raises(TypeError, match=r"must return \(symbol, data_names, label_names\)"):
        mx.mod.BucketingModule(lambda k: fc_sym_gen(k)[0], default_bucket_key=5)
    with pytest.raises(ValueError, match="data_names"):
        mx.mod.BucketingModule(lambda k: (fc_sym_gen(k)[0], ("x",), ()), default_bucket_key=5)
    with pytest.raises(TypeError, match="group2ctxs"):
        mx.mod.BucketingModule(fc_sym_gen, 5, group2ctxs={"a": "cpu"})
    mod = mx.mod.BucketingModule(fc_sym_gen, default_bucket_key=5)
    with pytest.raises(MXNetError, match="shared_module"):
        mod.bind([("data", (BATCH, 5))], shared_module=fc_module())
    with pytest.raises(MXNetError, match="bind"):
        mod.switch_bucket(2, [("data", (BATCH, 2))])
    mod.bind([("data", (BATCH, 5))], [("softmax_label", (BATCH, 5))])
    with pytest.raises(MXNetError, match="init_params"):
        mod.forward(fc_batch(2))


def test_save_checkpoint_needs_integer_keys(tmp_path):
    def gen(key):
        return fc_sym_gen({"short": 2, "long": 5}[key])

    mod = mx.mod.BucketingModule(gen, default_bucket_key="long")
    with pytest.raises(MXNetError, match="Empty BucketingModule"):
        mod.save_checkpoint(str(tmp_path / "x"), 0)
    mod.bind([("data", (BATCH, 5))], [("softmax_label", (BATCH, 5))])
    mod.init_params()
    with pytest.raises(MXNetError, match="integer bucket keys.*'long'"):
        mod.save_checkpoint(str(tmp_path / "x"), 0)
    with pytest.raises(MXNetError, match="sym_gen"):
        mx.mod.BucketingModule.load(str(tmp_path / "x"), 0, default_bucket_key=5)


class ListBucketIter(mx.io.DataIter):
    """The fc_batch batches of the given keys, in order."""

    def __init__(self, keys):
        super().__init__(BATCH)
        self.keys, self.cur = list(keys), 0
        self.default_bucket_key = 5
        self.provide_data = [mx.io.DataDesc("data", (BATCH, 5))]
        self.provide_label = [mx.io.DataDesc("softmax_label", (BATCH, 5))]

    def reset(self):
        self.cur = 0

    def next(self):
        if self.cur == len(self.keys):
            raise StopIteration
        self.cur += 1
        return fc_batch(self.keys[self.cur - 1])


def test_score_and_predict_over_buckets():
    mod = fc_module()
    it = ListBucketIter([5, 2, 5])
    acc = dict(mod.score(it, "acc"))["accuracy"]
    metric = mx.metric.create("acc")
    for key in (5, 2, 5):
        mod.forward(fc_batch(key), is_train=False)
        mod.update_metric(metric, fc_batch(key).label)
    assert acc == pytest.approx(metric.get()[1])
    out = mod.predict(it)
    assert out.shape == (BATCH * (5 + 2 + 5), 3)


def test_monitor_reaches_buckets_bound_later():
    mod = fc_module()
    mon = mx.mon.Monitor(1)
    mod.install_monitor(mon)
    mod.forward(fc_batch(2), is_train=False)
    assert mod._buckets[2]._exec_group.execs[0] in mon.exes
    assert mod._buckets[5]._exec_group.execs[0] in mon.exes


def test_rebind_keeps_the_parameters_and_set_params_can_be_partial():
    mod = fc_module()
    mod.forward(fc_batch(2))  # a second bucket, dropped by the rebind
    arg, aux = (dict(d) for d in mod.get_params())
    mod.bind([("data", (BATCH, 5))], [("softmax_label", (BATCH, 5))], force_rebind=True)
    assert list(mod._buckets) == [5] and mod.binded and mod.params_initialized
    np.testing.assert_array_equal(
        mod.get_params()[0]["fc_weight"].asnumpy(), arg["fc_weight"].asnumpy()
    )
    mod.set_params({"fc_bias": mx.nd.ones((3,))}, {}, allow_missing=True)
    new = mod.get_params()[0]
    np.testing.assert_array_equal(new["fc_bias"].asnumpy(), np.ones(3))
    np.testing.assert_array_equal(new["fc_weight"].asnumpy(), arg["fc_weight"].asnumpy())
    with pytest.warns(UserWarning, match="set_params call ignored"):
        mod.set_params({}, {}, allow_missing=True, force_init=False)
    with pytest.raises(MXNetError, match="inputs_need_grad=True needs for_training=True"):
        mx.mod.BucketingModule(fc_sym_gen, 5).bind(
            [("data", (BATCH, 5))], for_training=False, inputs_need_grad=True
        )
