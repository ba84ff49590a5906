"""A group bound with ``shared_group=`` shares the first group's parameter and gradient
arrays (MXNet 1.9.1's executor_group hands the second group the first one's arrays):
a write through one group's view shows through the other's."""

import numpy as np
import pytest

import mxmod as mx
from mxmod.module.executor_group import DataParallelExecutorGroup
from mxmod.test_utils import same_array

SHARED = ["fc1_weight", "fc1_bias"]


def _net(extra_layer: bool):
    h = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc1")
    if extra_layer:
        h = mx.sym.FullyConnected(h, num_hidden=2, name="fc2")
    return mx.sym.MakeLoss(mx.sym.sum(h * h))


def _group(ctxs, extra_layer, shared_group=None):
    sym = _net(extra_layer)
    params = [n for n in sym.list_arguments() if n != "data"]
    return DataParallelExecutorGroup(
        sym, ctxs, [1] * len(ctxs), data_shapes=[("data", (4, 5))], label_shapes=None,
        param_names=params, for_training=True, inputs_need_grad=False,
        shared_group=shared_group,
    )  # fmt: skip


def _init(g, seed):
    rng = np.random.RandomState(seed)
    g.set_params(
        {n: mx.nd.array(rng.uniform(-1, 1, a.shape)) for n, a in g.state.params.items()}, {}
    )


def _step(g, seed):
    x = np.random.RandomState(seed).uniform(-1, 1, (4, 5)).astype(np.float32)
    g.forward(mx.io.DataBatch([mx.nd.array(x)]), is_train=True)
    g.backward()


@pytest.mark.parametrize("n_ctx", [1, 2])
def test_shared_parameters_and_gradients_are_the_same_arrays(n_ctx):
    ctxs = [mx.cpu(k) for k in range(n_ctx)]
    g1 = _group(ctxs, False)
    g2 = _group(ctxs, True, shared_group=g1)
    for k in range(n_ctx):
        for name in SHARED:
            a1, a2 = g1.execs[k].arg_dict[name], g2.execs[k].arg_dict[name]
            assert same_array(a1, a2) and same_array(a2, a1)
            assert same_array(g1.execs[k].grad_dict[name], g2.execs[k].grad_dict[name])
            assert same_array(g2.execs[k].grad_dict[name], g1.execs[k].grad_dict[name])


def test_unshared_groups_keep_their_own_arrays():
    ctxs = [mx.cpu(0), mx.cpu(1)]
    g1, g2 = _group(ctxs, False), _group(ctxs, True)
    assert not same_array(g1.execs[1].arg_dict["fc1_weight"], g2.execs[1].arg_dict["fc1_weight"])
    assert not same_array(g1.execs[0].grad_dict["fc1_bias"], g2.execs[0].grad_dict["fc1_bias"])


def test_a_write_to_one_device_shows_on_that_device_of_the_other_group_only():
    ctxs = [mx.cpu(0), mx.cpu(1)]
    g1 = _group(ctxs, False)
    g2 = _group(ctxs, True, shared_group=g1)
    _init(g1, 0)
    before = g2.execs[0].arg_dict["fc1_weight"].asnumpy()
    g1.execs[1].arg_dict["fc1_weight"][:] = 7.0
    np.testing.assert_array_equal(g2.execs[1].arg_dict["fc1_weight"].asnumpy(), 7.0)
    np.testing.assert_array_equal(g2.execs[0].arg_dict["fc1_weight"].asnumpy(), before)
    g2.execs[0].grad_dict["fc1_bias"][:] = 3.0
    np.testing.assert_array_equal(g1.execs[0].grad_dict["fc1_bias"].asnumpy(), 3.0)
    np.testing.assert_array_equal(g1.execs[1].grad_dict["fc1_bias"].asnumpy(), 0.0)


def test_the_shared_gradient_is_the_last_backward_of_either_group():
    """As MXNet's one buffer: after group 2's backward both groups show group 2's
    gradient of the shared weights, and after group 1's, group 1's."""
    ctxs = [mx.cpu(0), mx.cpu(1)]
    g1 = _group(ctxs, False)
    g2 = _group(ctxs, True, shared_group=g1)
    _init(g2, 1)
    views = [[g.execs[k].grad_dict["fc1_weight"] for k in range(2)] for g in (g1, g2)]
    _step(g1, 2)
    own1 = [v.asnumpy() for v in views[0]]
    assert np.abs(own1[0]).sum() > 0
    np.testing.assert_array_equal([v.asnumpy() for v in views[1]], own1)
    _step(g2, 2)
    own2 = [v.asnumpy() for v in views[1]]
    assert not np.allclose(own2[0], own1[0])  # fc2 changes fc1's gradient
    np.testing.assert_array_equal([v.asnumpy() for v in views[0]], own2)
    # the other half of the batch gives device 1 a different gradient
    assert not np.allclose(own2[0], own2[1])
    _step(g1, 3)
    np.testing.assert_array_equal([v.asnumpy() for v in views[1]], [v.asnumpy() for v in views[0]])
