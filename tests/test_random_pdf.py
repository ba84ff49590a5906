"""``random_pdf_<dist>`` against MXNet 1.9.1's values (``fixtures/random_pdf``, from
``gen_random_pdf_goldens.py``)."""

import json
import os

import numpy as np
import pytest

import mxmod as mx
from mxmod.base import MXNetError

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "random_pdf")
with open(os.path.join(HERE, "goldens.json")) as f:
    GOLD = json.load(f)


@pytest.mark.parametrize("kind", sorted(GOLD["cases"]))
def test_densities_are_mxnets(kind):
    sample, params = GOLD["cases"][kind]
    fn = getattr(mx.nd, "random_pdf_" + kind)
    args = [mx.nd.array(sample)] + [mx.nd.array(p) for p in params]
    np.testing.assert_allclose(fn(*args).asnumpy(), GOLD["pdf"][kind], rtol=2e-5, atol=1e-6)
    log = fn(*args, is_log=True).asnumpy()
    np.testing.assert_allclose(log, GOLD["log"][kind], rtol=2e-5, atol=2e-6)


def test_log_density_gradient_is_mxnets():
    sample, mu, sigma = mx.sym.var("x"), mx.sym.var("mu"), mx.sym.var("sigma")
    loss = mx.sym.MakeLoss(mx.sym.sum(mx.sym.random_pdf_normal(sample, mu, sigma, is_log=True)))
    ex = loss.simple_bind(mx.cpu(), x=(1, 2), mu=(1,), sigma=(1,))
    args = {"x": [[0.3, 1.2]], "mu": [0.5], "sigma": [1.5]}
    ex.forward(is_train=True, **{k: mx.nd.array(v) for k, v in args.items()})
    ex.backward()
    for name, expect in zip(("x", "mu", "sigma"), GOLD["normal_log_grad"]):
        np.testing.assert_allclose(ex.grad_dict[name].asnumpy(), expect, rtol=1e-5)


def test_sample_shape_must_lead_with_the_parameters():
    with pytest.raises(MXNetError, match="must start with the parameters' shape"):
        mx.nd.random_pdf_normal(mx.nd.ones((3, 2)), mx.nd.zeros((2,)), mx.nd.ones((2,)))
    sym = mx.sym.random_pdf_dirichlet(mx.sym.var("s"), mx.sym.var("a"))
    assert sym.infer_shape(s=(1, 2, 3), a=(1, 3))[1] == [(1, 2)]
