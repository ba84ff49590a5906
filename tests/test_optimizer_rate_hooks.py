"""A subclass's own _get_lr/_get_lrs/_get_wd/_get_wds set its rates, in the compiled
Module step and imperatively, read as MXNet 1.9.1's update of each class reads them
(Keras-MXNet decays its rates this way)."""

import numpy as np
import pytest

import mxmod as mx


class Halving(mx.lr_scheduler.LRScheduler):
    def __call__(self, num_update):
        return 0.05 * 0.5**num_update


def _adam_own_lr():
    class AdamOwnLR(mx.optimizer.Adam):
        def _get_lr(self, index):
            return 0.05 * 0.5**self.num_update

    return AdamOwnLR(learning_rate=123.0)  # never read: the hook decides


def _sgd_own_lrs():
    class SGDOwnLRs(mx.optimizer.SGD):
        def _get_lrs(self, indices):
            return [0.05 * 0.5**self.num_update for _ in indices]

    return SGDOwnLRs(learning_rate=123.0, momentum=0.9)


def _adam_own_wd():
    class AdamOwnWD(mx.optimizer.Adam):
        def _get_wd(self, index):
            return 0.1

    return AdamOwnWD(learning_rate=0.05)


CASES = {
    "adam_get_lr": (_adam_own_lr, lambda: mx.optimizer.Adam(lr_scheduler=Halving())),
    "sgd_get_lrs": (_sgd_own_lrs, lambda: mx.optimizer.SGD(momentum=0.9, lr_scheduler=Halving())),
    "adam_get_wd": (_adam_own_wd, lambda: mx.optimizer.Adam(learning_rate=0.05, wd=0.1)),
}


def _train(opt, steps=4):
    rng = np.random.RandomState(0)
    x, y = rng.uniform(-1, 1, (8, 4)), rng.uniform(-1, 1, (8, 2))
    data, label = mx.sym.var("data"), mx.sym.var("label")
    out = mx.sym.FullyConnected(data, num_hidden=2, name="fc")
    sym = mx.sym.LinearRegressionOutput(out, label, name="lro")
    mod = mx.mod.Module(sym, label_names=["label"])
    mod.bind([("data", (8, 4))], [("label", (8, 2))])
    mod.init_params(mx.init.Constant(0.3))
    mod.init_optimizer(optimizer=opt)
    batch = mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)])
    for _ in range(steps):
        mod.forward_backward(batch)
        mod.update()
    return {k: v.asnumpy() for k, v in mod.get_params()[0].items()}


@pytest.mark.parametrize("case", sorted(CASES))
def test_module_step_reads_a_subclass_rate_hooks(case):
    own, same = CASES[case]
    got, want = _train(own()), _train(same())
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-7)
    assert not np.allclose(_train(own()).get("fc_weight"), _train(same(), steps=0)["fc_weight"])


def test_a_hook_the_class_does_not_read_changes_nothing():
    """MXNet's SGD reads _get_lrs: overriding _get_lr alone leaves its rate."""

    class SGDOwnLR(mx.optimizer.SGD):
        def _get_lr(self, index):
            return 0.0

    got, want = _train(SGDOwnLR(learning_rate=0.1)), _train(mx.optimizer.SGD(learning_rate=0.1))
    np.testing.assert_allclose(got["fc_weight"], want["fc_weight"], rtol=1e-6)


def test_a_zero_rate_from_the_hook_freezes_the_weights():
    class Frozen(mx.optimizer.Adam):
        def _get_lr(self, index):
            return 0.0

    np.testing.assert_array_equal(_train(Frozen())["fc_weight"], np.float32(0.3))


@pytest.mark.parametrize("case", sorted(CASES))
def test_imperative_update_reads_a_subclass_rate_hooks(case):
    own, same = CASES[case]
    results = []
    for opt in (own(), same()):
        updater = mx.optimizer.get_updater(opt)
        w = mx.nd.array(np.linspace(-1, 1, 6).reshape(2, 3))
        for step in range(3):
            updater(0, mx.nd.array(np.full((2, 3), 0.5 - step)), w)
        results.append(w.asnumpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-5, atol=1e-7)
