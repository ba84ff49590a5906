"""_contrib_hawkesll against MXNet 1.9.1 (tests/fixtures/gen_hawkesll_goldens.py)."""

import os

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

G = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "hawkesll", "goldens.npz"))
NAMES = ("lda", "alpha", "beta", "state", "lags", "marks", "valid_length", "max_time")


def test_log_likelihood_and_state():
    ll, state = mx.nd.contrib.hawkesll(*[mx.nd.array(G[k], dtype=G[k].dtype) for k in NAMES])
    np.testing.assert_allclose(ll.asnumpy(), G["ll"], rtol=1e-5)
    np.testing.assert_allclose(state.asnumpy(), G["out_state"], rtol=1e-5, atol=1e-7)


def test_documented_example():
    n, t = 4, 4
    ll, state = mx.nd.contrib.hawkesll(
        mx.nd.array([1.5, 2.0, 3.0]).tile((n, 1)), mx.nd.array([0.2, 0.3, 0.4]),
        mx.nd.array([1.0, 2.0, 3.0]), mx.nd.zeros((n, 3)),
        mx.nd.array([[6, 7, 8, 9], [1, 2, 3, 4], [3, 4, 5, 6], [8, 9, 10, 11]]),
        mx.nd.zeros((n, t)).astype(np.int32), mx.nd.array([1, 2, 3, 4]), mx.nd.ones((n,)) * 100.0,
    )  # fmt: skip
    np.testing.assert_allclose(ll.asnumpy(), G["example_ll"], rtol=1e-5)
    np.testing.assert_allclose(state.asnumpy(), G["example_state"], rtol=1e-5, atol=1e-30)


def test_gradients_match_mxnets_backward():
    variables = [mx.sym.var(k) for k in NAMES]
    net = mx.sym.contrib.hawkesll(*variables)
    grad_req = {k: "write" if k in ("lda", "alpha", "beta", "state") else "null" for k in NAMES}
    exe = net.simple_bind(mx.cpu(), grad_req=grad_req, **{k: G[k].shape for k in NAMES})
    for k in NAMES:
        exe.arg_dict[k][:] = G[k]
    exe.forward(is_train=True)
    n, k = G["lda"].shape
    exe.backward([mx.nd.ones((n,)), mx.nd.zeros((n, k))])
    for name in ("lda", "alpha", "beta"):
        np.testing.assert_allclose(
            exe.grad_dict[name].asnumpy(), G["grad_" + name], rtol=1e-4, atol=1e-6
        )
    # MXNet's backward leaves the starting state's gradient at 0; mxmod's is the derivative
    assert not G["grad_state"].any()
    eps, state = 1e-2, G["state"].astype(np.float64)
    numeric = np.zeros_like(state)
    for idx in np.ndindex(*state.shape):
        total = []
        for sign in (1, -1):
            shifted = state.copy()
            shifted[idx] += sign * eps
            args = [mx.nd.array(shifted if k == "state" else G[k], dtype=G[k].dtype) for k in NAMES]
            total.append(float(mx.nd.contrib.hawkesll(*args)[0].asnumpy().sum()))
        numeric[idx] = (total[0] - total[1]) / (2 * eps)
    np.testing.assert_allclose(exe.grad_dict["state"].asnumpy(), numeric, rtol=2e-2, atol=1e-3)


def test_shapes_are_checked():
    args = [mx.nd.array(G[k], dtype=G[k].dtype) for k in NAMES]
    args[1] = mx.nd.ones((5,))
    with pytest.raises(MXNetError, match="alpha must have shape"):
        mx.nd.contrib.hawkesll(*args)
