"""Rerolling unrolled ``mx.rnn`` graphs into ``lax.scan`` (``mxmod.executor.reroll``).

``evaluate`` below is the graph walk the executor's lowering does, plus the loops of
``schedule``: every case of the RNN fixtures must give MXNet's outputs through it, with
far fewer operations to compile than the unrolled graph.
"""

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mxmod as mx
from mxmod.ops import LowerCtx
from mxmod.executor.reroll import Loop, find_loops, schedule
from mxmod.symbol.graph import topo_order
from mxmod.symbol.infer import propagate_shapes

FIX = Path(__file__).parent / "fixtures"
sys.path.insert(0, str(FIX))
import rnn_cell_cases as cases  # noqa: E402


def evaluate(sym, reroll=True):
    """``f(args, key, is_train) -> outputs`` walking ``schedule`` (or the plain order)."""
    order = topo_order(sym._outputs)
    items = schedule(order, sym._outputs) if reroll else order
    pos = {id(n): i for i, n in enumerate(order)}

    def fn(args, key=None, is_train=False):
        _, shapes = propagate_shapes(sym, {k: tuple(v.shape) for k, v in args.items()})
        env, stacked = {}, {}
        for item in items:
            if isinstance(item, Loop):
                res = item.run(lambda e: env[(id(e[0]), e[1])], key, is_train, stacked)
                env.update({(id(n), o): v for (n, o), v in res.items()})
                continue
            if item.is_var:
                env[(id(item), 0)] = args[item.name]
                continue
            ins = [env[(id(c), o)] for c, o in item.inputs]
            rng = (
                jax.random.fold_in(key, pos[id(item)])
                if item.op.random and key is not None
                else None
            )
            ctx = LowerCtx(
                is_train=is_train,
                node_name=item.name,
                rng=rng,
                out_shapes=[shapes.get((id(item), k)) for k in range(item.num_outputs())],
            )
            for k, o in enumerate(item.op.lower(item.parsed(), ins, [], ctx)):
                env[(id(item), k)] = o
        return [env[(id(n), o)] for n, o in sym._outputs]

    return fn, [it for it in items if isinstance(it, Loop)]


def build(name):
    with mx.name.NameManager():
        outs, _ = cases.CASES[name][0](mx)
    return mx.sym.Group(outs)


def fixture_args(name):
    with np.load(FIX / "rnn_cells" / f"{name}.npz") as z:
        return (
            {k[4:]: jnp.asarray(z[k]) for k in z.files if k.startswith("arg:")},
            {k: z[k] for k in z.files if k.startswith("out:") or k.startswith("grad:")},
        )


NOT_REROLLED = {
    "fused_lstm_bi2",
    "fused_gru_ntc",
    "fused_rnn_relu_list",
    "fused_rnn_tanh_bi",
    "zoneout_rnn",
}


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_rerolled_graphs_give_mxnet_outputs(name):
    sym = build(name)
    fn, loops = evaluate(sym)
    assert bool(loops) == (name not in NOT_REROLLED)
    args, rec = fixture_args(name)
    for i, got in enumerate(fn(args)):
        np.testing.assert_allclose(np.asarray(got), rec[f"out:{i}"], rtol=1e-5, atol=2e-6)


def test_language_model_loops_and_gradients():
    sym = build("lstm_lm")
    order = topo_order(sym._outputs)
    loops = find_loops(order, sym._outputs)
    assert [lp.length for lp in loops] == [3, 3]
    first, second = sorted(loops, key=lambda lp: lp.steps[0][0].name)
    assert {n.name for n in first.steps[1]} >= {
        "lstm_l0_t1_i2h",
        "lstm_l0_t1_out",
        "lstm_l0_t1_state",
    }
    assert len(first.carry_init) == 2 and len(first.invariants) == 4  # (h, c); W, b x2
    assert [n.name for n, _ in first.carry_init] == [
        "lstm_l0_begin_state_0",
        "lstm_l0_begin_state_1",
    ]
    # the second layer reads the first layer's step outputs
    assert [n.name for n, _ in second.seq[0]] == [f"lstm_l0_t{k}_out" for k in range(3)]

    args, rec = fixture_args("lstm_lm")
    fn, _ = evaluate(sym)
    params = {k: v for k, v in args.items() if k not in ("data", "softmax_label")}
    inputs = {k: args[k] for k in ("data", "softmax_label")}
    outs, vjp = jax.vjp(lambda p: fn({**p, **inputs}, is_train=True), params)
    grads = vjp([jnp.ones_like(o) for o in outs])[0]
    for k, v in grads.items():
        np.testing.assert_allclose(np.asarray(v), rec["grad:" + k], rtol=1e-4, atol=1e-5, err_msg=k)


def test_rerolled_program_does_not_grow_with_the_steps():
    def count(length, reroll):
        cell = mx.rnn.SequentialRNNCell()
        for i in range(2):
            cell.add(mx.rnn.LSTMCell(8, prefix=f"l{i}_"))
        out, _ = cell.unroll(length, mx.sym.Variable("data"), merge_outputs=True)
        shapes = dict(zip(out.list_arguments(), out.infer_shape(data=(2, length, 3))[0]))
        fn, _ = evaluate(out, reroll)
        args = {k: jnp.zeros(s) for k, s in shapes.items()}
        return len(jax.make_jaxpr(lambda a: fn(a))(args).eqns)

    unrolled, short, long_ = count(30, False), count(5, True), count(30, True)
    assert unrolled > 25 * 30  # every step copied
    assert long_ < unrolled / 5
    assert long_ - short < 8 * 25  # only per-step slicing and stacking grow


def test_dropout_inside_a_loop_draws_per_step():
    cell = mx.rnn.SequentialRNNCell()
    cell.add(mx.rnn.RNNCell(50, prefix="a_"))
    cell.add(mx.rnn.DropoutCell(0.5, prefix="d_"))
    cell.add(mx.rnn.RNNCell(50, prefix="b_"))
    out, _ = cell.unroll(3, mx.sym.Variable("data"), merge_outputs=False)
    fn, loops = evaluate(mx.sym.Group(out))
    assert len(loops) == 2 and any(n.op.name == "Dropout" for n in loops[1].steps[0])
    args = {"data": jnp.ones((4, 3, 50))}
    for name in ("a", "b"):
        args.update(
            {
                f"{name}_i2h_weight": jnp.eye(50),
                f"{name}_h2h_weight": jnp.zeros((50, 50)),
                f"{name}_i2h_bias": jnp.zeros(50),
                f"{name}_h2h_bias": jnp.zeros(50),
            }
        )
    plain = fn(args)
    drop = fn(args, key=jax.random.PRNGKey(0), is_train=True)
    # identity weights and zero states: b's output is tanh(tanh(1) * mask / 0.5), 0 if dropped
    masks = [np.asarray(d) == 0 for d in drop]
    assert all(np.allclose(np.asarray(p), np.tanh(np.tanh(1.0))) for p in plain)
    assert all(
        np.allclose(np.asarray(d)[~m], np.tanh(2 * np.tanh(1.0)), rtol=1e-5)
        for d, m in zip(drop, masks)
    )
    assert all(0.3 < m.mean() < 0.7 for m in masks)
    assert not np.array_equal(masks[0], masks[1])  # a fresh mask every step


def test_graphs_that_are_not_a_first_order_recurrence_stay_unrolled():
    x = mx.sym.Variable("x")
    w = mx.sym.Variable("w")
    h0 = mx.sym.FullyConnected(x, weight=w, no_bias=True, num_hidden=3, name="p_t0_fc")
    h1 = mx.sym.FullyConnected(h0, weight=w, no_bias=True, num_hidden=3, name="p_t1_fc")
    h2 = mx.sym.FullyConnected(h0 + h1, weight=w, no_bias=True, num_hidden=3, name="p_t2_fc")
    sym = mx.sym.Group([h2])
    assert find_loops(topo_order(sym._outputs), sym._outputs) == []  # reads two steps back
    a0 = mx.sym.Activation(x, act_type="tanh", name="q_t0_act")
    a1 = mx.sym.Activation(a0, act_type="relu", name="q_t1_act")
    sym = mx.sym.Group([a1])
    assert find_loops(topo_order(sym._outputs), sym._outputs) == []  # steps differ
    b0 = mx.sym.Activation(x, act_type="tanh", name="r_t0_act")
    b1 = mx.sym.Activation(b0, act_type="tanh", name="r_t1_act")
    sym = mx.sym.Group([b1])
    loops = find_loops(topo_order(sym._outputs), sym._outputs)
    assert [lp.length for lp in loops] == [2] and len(loops[0].carry_init) == 1


@pytest.mark.parametrize("begin_shape,dtype", [((2, 3), "float16"), ((1, 3), "float32")])
def test_begin_states_of_another_dtype_or_shape(begin_shape, dtype):
    """float16 zeros feeding float32 steps are cast once; a (1, 3) state broadcast to (2, 3)
    after step 0 cannot be scanned and runs step by step."""
    x, w = mx.sym.Variable("x"), mx.sym.Variable("w")
    h = mx.sym.zeros(shape=begin_shape, dtype=dtype, name="s_begin")
    for t in range(3):
        fc = mx.sym.FullyConnected(x, weight=w, no_bias=True, num_hidden=3, name=f"c_t{t}_i2h")
        prev = mx.sym.Cast(h, dtype="float32", name=f"c_t{t}_cast")
        h = mx.sym.Activation(
            mx.sym.broadcast_add(fc, prev, name=f"c_t{t}_add"), act_type="tanh", name=f"c_t{t}_out"
        )
    sym = mx.sym.Group([h])
    fn, loops = evaluate(sym)
    plain, _ = evaluate(sym, reroll=False)
    args = {"x": jnp.ones((2, 4)), "w": jnp.full((3, 4), 0.1)}
    assert len(loops) == 1
    np.testing.assert_allclose(np.asarray(fn(args)[0]), np.asarray(plain(args)[0]), rtol=1e-6)
    assert fn(args)[0].shape == (2, 3)
