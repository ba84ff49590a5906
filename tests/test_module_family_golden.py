"""Issue 12's Module family against MXNet 1.9.1 (fixtures from
``tests/fixtures/gen_module_family_goldens.py``; cases in ``module_family_cases.py``)."""

import os
import sys

import numpy as np
import pytest

import mxmod as mx
from mxmod.contrib.svrg_optimization.svrg_module import SVRGModule

HERE = os.path.join(os.path.dirname(__file__), "fixtures")
sys.path.insert(0, HERE)
import module_family_cases as cases  # noqa: E402

GOLD = os.path.join(HERE, "module_family")


def golden(name):
    return dict(np.load(os.path.join(GOLD, name + ".npz")))


def check_params(mod, want, rtol=1e-5, atol=1e-6):
    arg, aux = mod.get_params()
    got = {f"arg:{k}": v.asnumpy() for k, v in arg.items()}
    got.update({f"aux:{k}": v.asnumpy() for k, v in aux.items()})
    params = {k for k in want if k.startswith(("arg:", "aux:"))}
    assert set(got) == params
    for k in params:
        np.testing.assert_allclose(got[k], want[k], rtol=rtol, atol=atol, err_msg=k)


@pytest.mark.parametrize("ctx", ["one", "two"])
def test_bucketing_lstm_matches_mxnet(ctx):
    context = None if ctx == "one" else [mx.cpu(0), mx.cpu(1)]
    mod, ppl = cases.run_bucketing(mx, context)
    want = golden("bucketing")
    check_params(mod, want, rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(ppl, want["perplexity"], rtol=1e-5)


def test_mxnet_bucketing_checkpoint_loads_and_predicts_as_mxnet():
    want = golden("bucketing")
    mod = mx.mod.BucketingModule.load(
        os.path.join(GOLD, "bucketing"), 2, sym_gen=cases.lm_sym_gen(mx), default_bucket_key=5
    )
    assert sorted(mod._buckets) == [3, 5]
    mod.bind(
        [("data", (cases.BATCH, 5))], [("softmax_label", (cases.BATCH, 5))], for_training=False
    )
    for key, x, _ in cases.lm_batches()[:2]:
        mod.forward(
            mx.io.DataBatch(
                [mx.nd.array(x)],
                None,
                bucket_key=key,
                provide_data=[("data", x.shape)],
                provide_label=[("softmax_label", x.shape)],
            ),
            is_train=False,
        )
        np.testing.assert_allclose(
            mod.get_outputs()[0].asnumpy(), want[f"out:{key}"], rtol=1e-5, atol=1e-6
        )
    check_params(mod, want)


def test_sequential_module_matches_mxnet():
    check_params(cases.run_sequential(mx), golden("sequential"))


def test_python_loss_module_matches_mxnet():
    check_params(cases.run_python_loss(mx), golden("python_loss"), rtol=1e-4, atol=1e-6)


def test_svrg_module_matches_mxnet():
    check_params(cases.run_svrg(mx, SVRGModule), golden("svrg"))
