"""Rerolling a decoder with attention written as a Python loop over ``t``
(``mxmod.executor.reroll`` / ``reroll_steps``).

The decoder is the NMT toolkits' (Sockeye 1.x) input-feeding LSTM with dot attention: each
step runs the ``dec_`` cell (``dec_t<k>_...``), then layers tagged ``att_query_t<k>`` and
``att_hidden_t<k>`` joined by unnamed operator sugar, and feeds the attention output to the
next step. The whole step must become one ``lax.scan`` with the numbers of the unrolled
graph; anything that is not a loop must stay as it is.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mxmod as mx
from mxmod.executor import compiled_for, forget_compiled, lower
from mxmod.executor.lower import GraphFn
from mxmod.executor.reroll import Loop, find_loops, schedule
from mxmod.symbol.graph import topo_order

VOCAB, EMBED, HIDDEN, PAD = 12, 6, 8, 0


def seq2seq(src_len, tgt_len, act_at=None, feed=True):
    """An attention encoder-decoder unrolled for a bucket; ``act_at``: the step whose
    attention output uses ``relu`` instead of ``tanh`` (steps no longer isomorphic);
    ``feed``: the decoder cell reads the previous attention output with the word."""
    sym = mx.sym
    source, target, label = sym.Variable("source"), sym.Variable("target"), sym.Variable("label")
    fc = {n: (sym.Variable(n + "_weight"), sym.Variable(n + "_bias")) for n in ("q", "h")}

    def dense(x, name, tag):
        w, b = fc[name]
        return sym.FullyConnected(x, weight=w, bias=b, num_hidden=HIDDEN, name=name + tag)

    embed = sym.Embedding(source, input_dim=VOCAB, output_dim=EMBED, name="src_embed")
    enc_cell = mx.rnn.LSTMCell(HIDDEN, prefix="enc_")
    enc_out, (h, c) = enc_cell.unroll(src_len, embed, layout="NTC", merge_outputs=True)
    bias = (source == PAD) * -1e4
    words = sym.split(
        sym.Embedding(target, input_dim=VOCAB, output_dim=EMBED, name="tgt_embed"),
        num_outputs=tgt_len,
        axis=1,
        squeeze_axis=True,
    )
    dec_cell = mx.rnn.LSTMCell(HIDDEN, prefix="dec_")
    states, hidden, hiddens = [h, c], sym.zeros_like(h), []
    for t in range(tgt_len):
        out, states = dec_cell(sym.concat(words[t], hidden, dim=1) if feed else words[t], states)
        query = sym.expand_dims(dense(out, "q", f"_att_query_t{t}"), axis=2)
        scores = sym.Reshape(sym.batch_dot(enc_out, query), shape=(0, -1)) + bias
        alpha = sym.expand_dims(sym.softmax(scores, axis=1), axis=1)
        context = sym.Reshape(sym.batch_dot(alpha, enc_out), shape=(0, -1))
        joined = dense(sym.concat(out, context, dim=1), "h", f"_att_hidden_t{t}")
        hidden = sym.Activation(joined, act_type="relu" if t == act_at else "tanh")
        hiddens.append(hidden)
    logits = sym.FullyConnected(
        sym.Reshape(sym.stack(*hiddens, axis=1), shape=(-1, HIDDEN)), num_hidden=VOCAB, name="o"
    )
    return sym.SoftmaxOutput(
        logits, sym.Reshape(label, shape=(-1,)), ignore_label=PAD, use_ignore=True, name="sm"
    )


def batch(src_len, tgt_len, rng):
    source = rng.randint(1, VOCAB, (4, src_len)).astype(np.float32)
    source[:2, -1] = PAD
    target = rng.randint(1, VOCAB, (4, tgt_len)).astype(np.float32)
    return {"source": source, "target": target, "label": np.roll(target, -1, axis=1)}


def loops_of(sym):
    order = topo_order(sym._outputs)
    return find_loops(order, sym._outputs), schedule(order, sym._outputs)


def unrolled(monkeypatch):
    """Lower every graph built afterwards without rerolling."""
    monkeypatch.setattr(lower, "schedule", lambda order, heads: list(order))
    forget_compiled()


@pytest.mark.parametrize("src_len,tgt_len", [(3, 4), (5, 6), (4, 4)])
def test_the_decoder_step_with_its_attention_is_one_loop(src_len, tgt_len):
    sym = seq2seq(src_len, tgt_len)
    loops, plan = loops_of(sym)
    enc, dec = sorted(loops, key=lambda lp: lp.steps[0][0].name.startswith("dec"))
    assert [it.length for it in plan if isinstance(it, Loop)] == [src_len, tgt_len]
    assert [enc.length, len(enc.steps[0])] == [src_len, 13]  # the cell alone, as before
    names = {n.name for n in dec.steps[1]}
    assert {"dec_t1_out", "q_att_query_t1", "h_att_hidden_t1"} <= names
    ops = sorted(n.op.name for n in dec.steps[1])
    assert ops.count("batch_dot") == 2 and ops.count("softmax") == 1 and ops.count("Concat") == 2
    assert len(dec.steps[0]) == 26
    # input feeding: the attention output of step k is carried into step k + 1
    carried = [dec.steps[0][i] for i, _ in dec.carry_src]
    assert sorted(n.op.name for n in carried) == ["Activation", "elemwise_add", "elemwise_mul"]
    begin = {n.name for n, _ in dec.carry_init}
    assert begin == {f"enc_t{src_len - 1}_out", f"enc_t{src_len - 1}_state", "zeros_like0"}
    # found from the graph alone: the same loops after a JSON round trip
    loaded, _ = loops_of(mx.sym.load_json(sym.tojson()))
    assert sorted((lp.length, len(lp.steps[0])) for lp in loaded) == sorted(
        (lp.length, len(lp.steps[0])) for lp in loops
    )


def evaluate(sym, data, monkeypatch=None):
    """Outputs and parameter gradients of ``sym`` (rerolled, or unrolled when patched)."""
    if monkeypatch is not None:
        unrolled(monkeypatch)
    graph = GraphFn(sym)
    shapes = dict(
        zip(sym.list_arguments(), sym.infer_shape(**{k: v.shape for k, v in data.items()})[0])
    )
    rng = np.random.RandomState(0)
    params = {
        k: jnp.asarray(rng.uniform(-0.5, 0.5, s).astype(np.float32))
        for k, s in shapes.items()
        if k not in data
    }
    inputs = {k: jnp.asarray(v) for k, v in data.items()}
    outs, vjp = jax.vjp(lambda p: graph({**p, **inputs}, {}, None, True)[0], params)
    cot = [jnp.asarray(rng.uniform(-1, 1, o.shape).astype(np.float32)) for o in outs]
    return graph, outs, vjp(cot)[0]


def assert_same(got, want):
    for a, b in zip(got[1], want[1]):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
    assert sorted(got[2]) == sorted(want[2])
    for k in got[2]:
        np.testing.assert_allclose(
            np.asarray(got[2][k]), np.asarray(want[2][k]), rtol=1e-5, atol=1e-6, err_msg=k
        )


@pytest.mark.slow  # eager op-by-op evaluation of the unrolled graph: ~10 s
@pytest.mark.parametrize("act_at,feed", [(None, True), (1, True), (None, False)])
def test_rerolled_attention_gives_the_unrolled_outputs_and_gradients(act_at, feed, monkeypatch):
    sym = seq2seq(2, 3, act_at, feed)
    data = batch(2, 3, np.random.RandomState(1))
    rerolled = evaluate(sym, data)
    plain = evaluate(sym, data, monkeypatch)
    assert plain[0]._plan is None
    lengths = [it.length for it in rerolled[0]._plan if isinstance(it, Loop)]
    # a step that differs (relu at step 1) leaves the decoder unrolled, the encoder not;
    # without feeding, the cell and the attention on its outputs are two loops
    assert lengths == {(None, True): [2, 3], (1, True): [2], (None, False): [2, 3, 3]}[act_at, feed]
    assert_same(rerolled, plain)


def test_attention_that_does_not_feed_the_cell_is_a_loop_of_its_own():
    """Without input feeding the attention carries nothing, yet its steps (several operators
    on the cell's step outputs) are one scan; the one-operator query layer is not."""
    loops, plan = loops_of(seq2seq(3, 4, feed=False))
    shapes = sorted((lp.length, len(lp.steps[0]), len(lp.carry_src)) for lp in loops)
    assert shapes == [(3, 13, 2), (4, 10, 0), (4, 13, 2)]
    attention = next(lp for lp in loops if not lp.carry_src)
    assert "h_att_hidden_t2" in {n.name for n in attention.steps[2]}
    assert [n.name for n, _ in attention.seq[0]] == [f"q_att_query_t{k}" for k in range(4)]
    assert sum(isinstance(it, Loop) for it in plan) == 3


def test_a_classifier_on_the_last_step_stays_outside_the_loop():
    cell = mx.rnn.LSTMCell(HIDDEN, prefix="l_")
    outs, _ = cell.unroll(3, mx.sym.Variable("data"), layout="NTC")
    alone = mx.sym.Group(outs)
    head = mx.sym.FullyConnected(outs[-1], num_hidden=2, name="cls")
    head = mx.sym.Activation(head, act_type="relu", name="cls_act")
    for sym in (alone, head):
        loops, _ = loops_of(sym)
        assert [(lp.length, len(lp.steps[0])) for lp in loops] == [(3, 13)]
        assert not {"cls", "cls_act"} & {n.name for n in loops[0].steps[-1]}


def test_layers_that_do_not_feed_each_other_stay_separate_loops():
    """Two stacked cells of the same length are separate scans (only groups that read each
    other's steps are merged); a tagged layer on their steps carries nothing: no loop."""
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.GRUCell(HIDDEN, prefix="a_"))
    stack.add(mx.rnn.GRUCell(HIDDEN, prefix="b_"))
    outs, _ = stack.unroll(4, mx.sym.Variable("data"), layout="NTC")
    tagged = [mx.sym.FullyConnected(o, num_hidden=3, name=f"proj_t{t}") for t, o in enumerate(outs)]
    loops, plan = loops_of(mx.sym.Group(tagged))
    prefixes = [{n.name.split("_t")[0] for n in lp.steps[0] if "_t" in n.name} for lp in loops]
    assert sorted("".join(sorted(p)) for p in prefixes) == ["a", "b"]
    assert sum(isinstance(it, Loop) for it in plan) == 2


def test_steps_that_read_earlier_steps_through_an_outside_node_stay_unrolled(monkeypatch):
    """Steps 2 and 3 read ``h_0 + h_1``, one node outside every step: no scan runs that, and
    the graph is evaluated as it is, with its own numbers."""
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")

    def step(t, data):
        fc = mx.sym.FullyConnected(data, weight=w, no_bias=True, num_hidden=4, name=f"p_t{t}_fc")
        return mx.sym.Activation(fc, act_type="tanh", name=f"p_t{t}_out")

    hs = [step(0, x)]
    hs.append(step(1, hs[0]))
    both = hs[0] + hs[1]
    hs.append(step(2, both))
    hs.append(step(3, mx.sym.elemwise_mul(hs[2], both)))
    sym = mx.sym.Group(hs)
    loops, plan = loops_of(sym)
    assert loops == [] and not any(isinstance(it, Loop) for it in plan)
    data = {"x": np.random.RandomState(0).uniform(-1, 1, (2, 4)).astype(np.float32)}
    assert_same(evaluate(sym, data), evaluate(sym, data, monkeypatch))


def test_a_tagged_loop_feeding_its_output_back_is_one_scan(monkeypatch):
    """``h_t<k> = FC(concat(x_k, tanh(h_t<k-1>)))``: the unnamed ``tanh`` joins its step (it
    feeds the next), step 0's ``concat`` reads only its begin state and still joins."""
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    xs = mx.sym.split(x, num_outputs=4, axis=1, squeeze_axis=True)
    fed, outs = mx.sym.zeros_like(xs[0]), []
    for t in range(4):
        h = mx.sym.FullyConnected(
            mx.sym.concat(xs[t], fed), weight=w, num_hidden=3, no_bias=True, name=f"h_t{t}"
        )
        fed = mx.sym.slice_axis(mx.sym.tanh(h), axis=1, begin=0, end=3)
        outs.append(fed)
    sym = mx.sym.Group(outs)
    loops, plan = loops_of(sym)
    assert [(lp.length, sorted(n.op.name for n in lp.steps[0])) for lp in loops] == [
        (4, ["Concat", "FullyConnected", "slice_axis", "tanh"])
    ]
    assert [n.op.name for n, _ in loops[0].carry_init] == ["zeros_like"]
    assert sum(isinstance(it, Loop) for it in plan) == 1
    data = {"x": np.random.RandomState(0).uniform(-1, 1, (2, 4, 3)).astype(np.float32)}
    assert_same(evaluate(sym, data), evaluate(sym, data, monkeypatch))


def train(sym, data, monkeypatch=None):
    if monkeypatch is not None:
        unrolled(monkeypatch)
    mod = mx.mod.Module(sym, data_names=("source", "target"), label_names=("label",))
    shapes = [(k, v.shape) for k, v in data.items()]
    mod.bind(data_shapes=shapes[:2], label_shapes=shapes[2:])
    mx.random.seed(0)
    mod.init_params(mx.init.Uniform(0.3))
    mod.init_optimizer(optimizer="adam", optimizer_params={"learning_rate": 0.01})
    rng = np.random.RandomState(3)
    for _ in range(5):
        step = batch(3, 4, rng)
        mod.forward_backward(
            mx.io.DataBatch(
                [mx.nd.array(step["source"]), mx.nd.array(step["target"])],
                [mx.nd.array(step["label"])],
            )
        )
        mod.update()
    return mod.get_params()[0], compiled_for(sym).graph._plan


@pytest.mark.slow  # compiles the unrolled training step: ~20 s
def test_a_module_trains_the_rerolled_decoder_as_the_unrolled_one(monkeypatch):
    sym = seq2seq(3, 4)
    data = batch(3, 4, np.random.RandomState(2))
    rerolled, plan = train(sym, data)
    plain, no_plan = train(seq2seq(3, 4), data, monkeypatch)
    assert [it.length for it in plan if isinstance(it, Loop)] == [3, 4] and no_plan is None
    for k in plain:
        np.testing.assert_allclose(
            rerolled[k].asnumpy(), plain[k].asnumpy(), rtol=1e-5, atol=1e-5, err_msg=k
        )


def test_a_bidirectional_cell_rerolls_as_before():
    """Its per-step output ``Concat`` is named ``<prefix>t<k>`` like a tagged layer, but a
    lone operator per step is no loop: the two cells stay two scans of their own steps."""
    cell = mx.rnn.BidirectionalCell(
        mx.rnn.LSTMCell(HIDDEN, prefix="l_"), mx.rnn.LSTMCell(HIDDEN, prefix="r_")
    )
    outs, _ = cell.unroll(3, mx.sym.Variable("data"), layout="NTC")
    loops, plan = loops_of(mx.sym.Group(outs))
    heads = [o._outputs[0][0] for o in outs]
    assert [(n.op.name, n.name) for n in heads] == [("Concat", f"bi_t{k}") for k in range(3)]
    assert sorted((lp.length, len(lp.steps[0])) for lp in loops) == [(3, 13), (3, 13)]
    assert sum(isinstance(it, Loop) for it in plan) == 2
