"""Issue 24: one compile per (graph structure, shapes) across Symbols, Modules and buckets."""

import numpy as np

import mxmod as mx


def mlp():
    x = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(x, num_hidden=8, name="fc1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def step_compiles(sym):
    progs = mx.executor.compiled_for(sym).programs.values()
    return sum(f._cache_size() for p in progs for k, f in p._cache.items() if k[0] == "step")


def batch(n=4, seed=0):
    rng = np.random.RandomState(seed)
    x, y = rng.randn(n, 5).astype("f"), rng.randint(0, 3, n).astype("f")
    return mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)])


def trained_module(sym):
    mod = mx.mod.Module(sym)
    mod.bind([("data", (4, 5))], [("softmax_label", (4,))])
    mod.init_params(mx.init.Constant(0.1))
    mod.init_optimizer(optimizer_params={"learning_rate": 0.1})
    mod.forward_backward(batch())
    mod.update()
    return mod


def test_a_rebuilt_identical_symbol_reuses_the_compiled_step():
    a, b = mlp(), mlp()
    assert a is not b
    mod_a, mod_b = trained_module(a), trained_module(b)
    assert mx.executor.compiled_for(a) is mx.executor.compiled_for(b)
    for n, w in mod_a.get_params()[0].items():  # (runs both deferred steps)
        np.testing.assert_array_equal(w.asnumpy(), mod_b.get_params()[0][n].asnumpy())
    assert step_compiles(a) == 1  # the second Module, on its own Symbol, compiled nothing


def test_a_different_graph_or_attribute_is_not_shared():
    a = mlp()
    other = mx.sym.SoftmaxOutput(
        mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc2"),
        name="softmax",
    )
    with mx.AttrScope(__lr_mult__="0.5"):
        scaled = mlp()
    compiled = {id(mx.executor.compiled_for(s)) for s in (a, other, scaled)}
    assert len(compiled) == 3


def test_an_amp_converted_graph_is_not_its_float32_source():
    # tojson() leaves amp_cast nodes out by default: the float16 graph prints as its source
    a = mlp()
    half = mx.contrib.amp.convert_symbol(a, "float16", cast_optional_params=True)
    assert "amp_cast" in half.tojson(remove_amp_cast=False) and half.tojson() == a.tojson()
    assert mx.executor.compiled_for(half) is not mx.executor.compiled_for(a)


def test_bucket_keys_building_the_same_graph_compile_once():
    def sym_gen(key):
        return mlp(), ("data",), ("softmax_label",)  # a new Symbol per key, same graph

    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key="a")
    mod.bind([("data", (4, 5))], [("softmax_label", (4,))])
    mod.init_params(mx.init.Constant(0.1))
    mod.init_optimizer(optimizer_params={"learning_rate": 0.1})
    for key in ("a", "b", "c", "a"):
        b = batch()
        b.bucket_key = key
        b.provide_data = [mx.io.DataDesc("data", (4, 5))]
        b.provide_label = [mx.io.DataDesc("softmax_label", (4,))]
        mod.forward_backward(b)
        mod.update()
    syms = [m.symbol for m in mod._buckets.values()]
    assert len(syms) == 3 and len({id(mx.executor.compiled_for(s)) for s in syms}) == 1
    assert step_compiles(syms[0]) == 1


def test_the_structural_cache_is_bounded(monkeypatch):
    from mxmod.executor import executor

    monkeypatch.setattr(executor, "MAX_GRAPHS", 3)
    syms = [
        mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=h, name="fc") for h in range(1, 6)
    ]
    for s in syms:
        mx.executor.compiled_for(s)
    assert len(executor._BY_STRUCTURE) == 3
    again = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=1, name="fc")
    assert mx.executor.compiled_for(again) is not mx.executor.compiled_for(syms[0])
