"""mx.nd optimizer update operators: formulas of MXNet's kernels, states updated in place."""

import numpy as np
import pytest

import mxmod as mx

RNG = np.random.RandomState(3)
W, G, S1, S2 = (RNG.uniform(-1, 1, (2, 3)).astype(np.float32) for _ in range(4))


def _nd(*arrays):
    return [mx.nd.array(a) for a in arrays]


def test_sgd_mom_update_matches_the_kernel_formula():
    w, g, m = _nd(W, G, S1)
    mx.nd.sgd_mom_update(w, g, m, out=w, lr=0.1, momentum=0.9, wd=0.01, rescale_grad=0.5)
    mom = 0.9 * S1 - 0.1 * 0.01 * W - 0.1 * 0.5 * G
    np.testing.assert_allclose(m.asnumpy(), mom, rtol=1e-5)
    np.testing.assert_allclose(w.asnumpy(), W + mom, rtol=1e-5)


def test_adam_update_clips_after_weight_decay():
    w, g, mean, var = _nd(W, G, S1, np.abs(S2))
    mx.nd.adam_update(w, g, mean, var, out=w, lr=0.1, wd=0.5, clip_gradient=0.2, beta1=0.8)
    grad = np.clip(G + 0.5 * W, -0.2, 0.2)
    m_ref = 0.8 * S1 + 0.2 * grad
    v_ref = 0.999 * np.abs(S2) + 0.001 * grad**2
    np.testing.assert_allclose(mean.asnumpy(), m_ref, rtol=1e-5)
    np.testing.assert_allclose(w.asnumpy(), W - 0.1 * m_ref / (np.sqrt(v_ref) + 1e-8), rtol=1e-4)


def test_nag_mom_update_in_place_reads_the_new_weight():
    w, g, m = _nd([1.0], [0.0], [0.0])
    mx.nd.nag_mom_update(w, g, m, out=w, lr=0.1, momentum=0.9, wd=0.5)
    step = 0.1 * 0.5 * 1.0
    new_w = 1.0 + 0.9 * (-step) - step
    assert w.asscalar() == pytest.approx(new_w)
    assert m.asscalar() == pytest.approx(-0.1 * 0.5 * new_w)  # MXNet's aliasing, observed


@pytest.mark.parametrize(
    "name, n_in, mutated, kwargs",
    [
        ("sgd_update", 2, {0}, {"lr": 0.1}),
        ("signsgd_update", 2, {0}, {"lr": 0.1}),
        ("signum_update", 3, {0, 2}, {"lr": 0.1, "momentum": 0.5}),
        ("rmsprop_update", 3, {0, 2}, {"lr": 0.1}),
        ("rmspropalex_update", 5, {0, 2, 3, 4}, {"lr": 0.1}),
        ("ftrl_update", 4, {0, 2, 3}, {"lr": 0.1}),
        ("ftml_update", 5, {0, 2, 3, 4}, {"lr": 0.1, "t": 2}),
    ],
)
def test_update_ops_change_exactly_weight_and_states(name, n_in, mutated, kwargs):
    host = [W, G, np.abs(S1), np.abs(S2), np.abs(S1) + 1][:n_in]
    arrays = _nd(*host)
    getattr(mx.nd, name)(*arrays, out=arrays[0], **kwargs)
    changed = {i for i, (a, h) in enumerate(zip(arrays, host)) if not np.allclose(a.asnumpy(), h)}
    assert changed == mutated


def test_update_op_inputs_must_be_ndarrays():
    with pytest.raises(TypeError, match="sgd_update: inputs must be NDArrays"):
        mx.nd.sgd_update(W, mx.nd.array(G), lr=0.1)
