"""Repeated operator calls in a graph are traced once (mxmod/executor/shared_lower.py) and
give what lowering every node inline gives."""

from collections import OrderedDict

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mxmod as mx
from mxmod.executor import shared_lower
from mxmod.executor.executor import forget_compiled
from mxmod.executor.lower import GraphFn
from mxmod.ops import get_op

sym = mx.sym


def blocks(n=4, dropout=True):
    """``n`` identical conv-BN-relu(-dropout) blocks, their features (N, 4, H, W)."""
    x = sym.Variable("data")
    for i in range(n):
        x = sym.Convolution(x, name=f"c{i}", num_filter=4, kernel=(3, 3), pad=(1, 1))
        x = sym.BatchNorm(x, name=f"bn{i}", fix_gamma=False)
        x = sym.Activation(x, act_type="relu")
        if dropout:
            x = sym.Dropout(x, p=0.5)
    return x


def values(net):
    rng = np.random.RandomState(0)
    arg_shapes, _, aux_shapes = net.infer_shape(data=(2, 4, 6, 6))
    args = {
        n: jnp.asarray(rng.rand(*s).astype(np.float32))
        for n, s in zip(net.list_arguments(), arg_shapes)
    }
    aux = {
        n: jnp.asarray(np.ones(s, np.float32) if n.endswith("var") else np.zeros(s, np.float32))
        for n, s in zip(net.list_auxiliary_states(), aux_shapes)
    }
    return args, aux


def train_step(net):
    fn = GraphFn(net)

    @jax.jit
    def step(args, aux, key):
        def loss(a):
            outs, new_aux = fn(a, aux, key, True)
            return (outs[0] ** 2).sum(), new_aux

        (out, new_aux), grads = jax.value_and_grad(loss, has_aux=True)(args)
        return out, grads, new_aux

    return step


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(shared_lower, "_shared", OrderedDict())


def count_lowerings(monkeypatch, name):
    op = get_op(name)
    calls = []
    inner = op.lower

    def counted(*a):
        calls.append(1)
        return inner(*a)

    monkeypatch.setattr(op, "lower", counted)
    return calls


def test_identical_calls_are_traced_once(fresh, monkeypatch):
    bn_calls = count_lowerings(monkeypatch, "BatchNorm")
    net = blocks(4)
    args, aux = values(net)
    train_step(net)(args, aux, jax.random.PRNGKey(0))
    assert len(bn_calls) == 1  # four BatchNorm nodes, one (attributes, shapes)


def test_shared_and_inline_lowering_agree(fresh, monkeypatch):
    net = blocks(4)
    args, aux = values(net)
    key = jax.random.PRNGKey(1)
    shared = train_step(net)(args, aux, key)
    monkeypatch.setattr(shared_lower, "_key", lambda *a: None)  # every node inline
    inline = train_step(net)(args, aux, key)
    for got, want in zip(jax.tree_util.tree_leaves(shared), jax.tree_util.tree_leaves(inline)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)


def test_each_random_node_keeps_its_own_key(fresh):
    x = sym.Variable("data")
    net = sym.Group([sym.Dropout(x, p=0.5) for _ in range(4)])
    fn = GraphFn(net)
    ones = {"data": jnp.ones((64, 64))}
    run = jax.jit(lambda a, k: fn(a, {}, k, True)[0])
    masks = [np.asarray(o) for o in run(ones, jax.random.PRNGKey(0))]
    assert len(shared_lower._shared) == 1  # one traced Dropout
    assert set(np.unique(masks[0])) == {0.0, 2.0}
    assert not np.array_equal(masks[0], masks[1])  # four masks


def test_outside_a_trace_nodes_run_inline(fresh):
    net = blocks(4)
    args, aux = values(net)
    fn = GraphFn(net)
    fn(args, aux, jax.random.PRNGKey(0), False)  # eager: nothing jitted per node
    jax.vjp(lambda a: fn(a, aux, jax.random.PRNGKey(0), True)[0], args)  # eager autodiff
    assert not shared_lower._shared


def test_a_graph_that_repeats_an_operator_little_lowers_it_inline(fresh):
    x = sym.Variable("data")
    for i in range(2):  # an MLP: its two ReLUs stay inline (a call costs small programs)
        x = sym.Activation(sym.FullyConnected(x, num_hidden=8, name=f"fc{i}"), act_type="relu")
    shapes = dict(zip(x.list_arguments(), x.infer_shape(data=(2, 3))[0]))
    args = {n: jnp.ones(s) for n, s in shapes.items()}
    jax.jit(lambda a: GraphFn(x)(a, {}, None, True)[0])(args)
    assert not shared_lower._shared


def test_the_cache_is_bounded(fresh, monkeypatch):
    monkeypatch.setattr(shared_lower, "SHARE_MIN_REPEATS", 1)
    monkeypatch.setattr(shared_lower, "MAX_SHARED", 2)
    x = sym.Variable("data")
    net = sym.Group([sym.Activation(x, act_type=t) for t in ("relu", "tanh", "sigmoid")])
    jax.jit(lambda a: GraphFn(net)(a, {}, None, False)[0])({"data": jnp.ones((3,))})
    assert len(shared_lower._shared) == 2


def test_a_data_parallel_step_shares_and_matches_the_inline_one(monkeypatch):
    # inside the mesh program (shard_map over two contexts) the shared calls see the device
    # axis; the step equals the one with every node inline
    features = sym.flatten(blocks(4, dropout=False))
    net = sym.SoftmaxOutput(sym.FullyConnected(features, num_hidden=3), name="sm")
    rng = np.random.RandomState(0)
    batch = mx.io.DataBatch(
        [mx.nd.array(rng.rand(4, 4, 6, 6))], [mx.nd.array(np.array([0, 1, 2, 1]))]
    )
    params, results = None, []
    for min_repeats in (shared_lower.SHARE_MIN_REPEATS, 10**9):  # shared, then inline
        monkeypatch.setattr(shared_lower, "SHARE_MIN_REPEATS", min_repeats)
        forget_compiled()  # a new lowering of the same graph
        shared_lower._shared.clear()
        mod = mx.mod.Module(net, context=[mx.cpu(0), mx.cpu(1)], label_names=["sm_label"])
        mod.bind([("data", (4, 4, 6, 6))], [("sm_label", (4,))])
        mod.init_params(mx.init.Xavier(), arg_params=params)
        # copies: get_params hands back the module's own arrays, which the update refreshes
        params = params or {n: v.copy() for n, v in mod.get_params()[0].items()}
        mod.init_optimizer(optimizer_params={"learning_rate": 0.1})
        mod.forward_backward(batch)
        mod.update()
        results.append((mod.get_params()[0], len(shared_lower._shared)))
    (shared, n_shared), (inline, n_inline) = results
    assert n_shared > 0 and n_inline == 0
    for name in shared:
        np.testing.assert_allclose(
            shared[name].asnumpy(), inline[name].asnumpy(), rtol=1e-5, atol=1e-6
        )
