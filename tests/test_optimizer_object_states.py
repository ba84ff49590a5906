"""Optimizer states that are user objects (sockeye's Eve keeps an ``EveState`` of two
NDArrays), namedtuples or numpy arrays: saved without pickle, loaded back into the
optimizer's own types, and training resumes where it stopped."""

import math
from collections import namedtuple

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetFileError


class MomentState:
    def __init__(self, weight):
        self.mean = mx.nd.zeros_like(weight)
        self.variance = mx.nd.zeros_like(weight)
        self.scale = 1.0


@mx.optimizer.Optimizer.register
class ObjectStateAdam(mx.optimizer.Optimizer):
    """Adam written as sockeye 1.x writes Eve: a Python update over an object state."""

    def create_state(self, index, weight):
        return MomentState(weight)

    def update(self, index, weight, grad, state):
        lr = self._get_lr(index)
        self._update_count(index)
        t = self._index_update_count[index]
        grad = grad * self.rescale_grad
        state.mean[:] = 0.9 * state.mean + 0.1 * grad
        state.variance[:] = 0.999 * state.variance + 0.001 * grad * grad
        state.scale = state.scale * 0.5
        lr *= math.sqrt(1 - 0.999**t) / (1 - 0.9**t)
        weight[:] = weight - lr * state.mean / (mx.nd.sqrt(state.variance) + 1e-8)


def _module():
    fc = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc")
    mod = mx.mod.Module(mx.sym.SoftmaxOutput(fc, name="softmax"))
    mod.bind([("data", (4, 5))], [("softmax_label", (4,))])
    mod.init_params(mx.init.Constant(0.1))
    mod.init_optimizer(optimizer="objectstateadam", optimizer_params={"learning_rate": 0.05})
    return mod


def _steps(mod, n, seed):
    rng = np.random.RandomState(seed)
    for _ in range(n):
        batch = mx.io.DataBatch([mx.nd.array(rng.rand(4, 5))], [mx.nd.array(rng.randint(0, 3, 4))])
        mod.forward_backward(batch)
        mod.update()


def test_module_resumes_from_saved_object_states(tmp_path):
    straight = _module()
    _steps(straight, 3, 0)
    _steps(straight, 2, 1)

    first = _module()
    _steps(first, 3, 0)
    path = str(tmp_path / "obj.states")
    first.save_optimizer_states(path)
    arg, aux = first.get_params()
    resumed = _module()
    resumed.set_params(arg, aux)
    resumed.load_optimizer_states(path)
    state = resumed._updater.states[0]
    assert isinstance(state, MomentState) and state.scale == 0.125
    _steps(resumed, 2, 1)
    for name, value in straight.get_params()[0].items():
        np.testing.assert_allclose(
            resumed.get_params()[0][name].asnumpy(), value.asnumpy(), rtol=1e-6
        )


Pair = namedtuple("Pair", ["m", "v"])


class NamedTupleSGD(mx.optimizer.Optimizer):
    def create_state(self, index, weight):
        return Pair(mx.nd.zeros_like(weight), mx.nd.zeros_like(weight))

    def update(self, index, weight, grad, state):
        state.m[:] = state.m + grad
        weight[:] = weight - 0.1 * state.m


class HostArraySGD(mx.optimizer.Optimizer):
    def create_state(self, index, weight):
        return np.zeros(weight.shape, np.float64)

    def update(self, index, weight, grad, state):
        state += grad.asnumpy()
        weight[:] = weight - 0.1 * mx.nd.array(state)


@pytest.mark.parametrize("opt_class", [NamedTupleSGD, HostArraySGD])
def test_updater_states_round_trip_in_their_own_types(opt_class):
    updater = mx.optimizer.get_updater(opt_class())
    w, g = mx.nd.ones((2,)), mx.nd.array([1.0, 2.0])
    updater(0, g, w)
    blob = updater.get_states()
    other = mx.optimizer.get_updater(opt_class())
    w2 = mx.nd.ones((2,))
    other(0, mx.nd.zeros((2,)), w2)  # creates its own state first
    other.set_states(blob)
    state = other.states[0]
    if opt_class is NamedTupleSGD:
        assert isinstance(state, Pair) and state.m.asnumpy().tolist() == [1, 2]
    else:
        assert state.dtype == np.float64 and state.tolist() == [1, 2]


def test_object_state_of_another_class_is_refused():
    updater = mx.optimizer.get_updater(NamedTupleSGD())
    updater(0, mx.nd.ones((2,)), mx.nd.ones((2,)))
    blob = mx.optimizer.get_updater(ObjectStateAdam())
    blob(0, mx.nd.ones((2,)), mx.nd.ones((2,)))
    with pytest.raises(MXNetFileError, match="state of index 0"):
        updater.set_states(blob.get_states())
