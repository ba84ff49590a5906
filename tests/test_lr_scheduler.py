"""mx.lr_scheduler: MXNet 1.9.1 sequences (spec 4.5 vectors), closed forms, errors."""

import jax
import numpy as np
import pytest

import mxmod as mx
from mxmod import lr_scheduler as lrs


def seq(s, n):
    return [s(i) for i in range(n)]


def test_factor_vector():
    s = lrs.FactorScheduler(step=3, factor=0.5, base_lr=1)
    np.testing.assert_allclose(seq(s, 11), [1, 1, 1, 1, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.125])


def test_factor_warmup_vector():
    s = lrs.FactorScheduler(step=3, factor=0.5, base_lr=1, warmup_steps=2, warmup_begin_lr=0.1)
    np.testing.assert_allclose(
        seq(s, 11), [0.1, 0.55, 1, 1, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.125]
    )


def test_factor_floor_and_statefulness():
    s = lrs.FactorScheduler(step=1, factor=0.1, stop_factor_lr=1e-3, base_lr=1)
    assert s(10) == pytest.approx(1e-3)  # floored
    assert s(1) == pytest.approx(1e-3)  # stateful: going back does not undo the decay


def test_multifactor_vector():
    s = lrs.MultiFactorScheduler([2, 5], 0.1, base_lr=1)
    np.testing.assert_allclose(seq(s, 8), [1, 1, 1, 0.1, 0.1, 0.1, 0.01, 0.01])


def test_poly_vector():
    s = lrs.PolyScheduler(10, base_lr=1, pwr=2, warmup_steps=2)
    np.testing.assert_allclose(
        seq(s, 13),
        [0, 0.5, 1, 0.765625, 0.5625, 0.390625, 0.25, 0.140625, 0.0625, 0.015625, 0, 0, 0],
    )


def test_cosine_vector():
    s = lrs.CosineScheduler(
        10, base_lr=1, final_lr=0.1, warmup_steps=2, warmup_mode="constant", warmup_begin_lr=0.5
    )
    np.testing.assert_allclose(
        seq(s, 13),
        [0.5, 0.5, 1, 0.9657, 0.8682, 0.7222, 0.55, 0.3778, 0.2318, 0.1343, 0.1, 0.1, 0.1],
        atol=1e-4,
    )


@pytest.mark.parametrize(
    "make",
    [
        lambda: lrs.FactorScheduler(
            step=3, factor=0.5, base_lr=1, warmup_steps=2, warmup_begin_lr=0.1
        ),
        lambda: lrs.FactorScheduler(step=1, factor=0.5, stop_factor_lr=0.1, base_lr=1),
        lambda: lrs.MultiFactorScheduler([2, 5], 0.1, base_lr=1, warmup_steps=1),
        lambda: lrs.PolyScheduler(10, base_lr=1, pwr=2, warmup_steps=2),
        lambda: lrs.CosineScheduler(
            10, base_lr=1, final_lr=0.1, warmup_steps=2, warmup_mode="constant", warmup_begin_lr=0.5
        ),
    ],
)
def test_jax_schedule_matches_stateful(make):
    fn = jax.jit(jax.vmap(make().jax_schedule()))
    ref = make()
    got = np.asarray(fn(np.arange(14)))
    np.testing.assert_allclose(got, seq(ref, 14), rtol=1e-5, atol=1e-7)


def test_jax_schedule_custom_subclass_raises():
    class Mine(lrs.LRScheduler):
        def __call__(self, n):
            return self.base_lr

    with pytest.raises(NotImplementedError, match="no jittable closed form"):
        Mine().jax_schedule()


def test_base_call_abstract():
    with pytest.raises(NotImplementedError):
        lrs.LRScheduler()(1)


@pytest.mark.parametrize(
    "make, exc, msg",
    [
        (lambda: lrs.LRScheduler(warmup_steps=-1), ValueError, "Warmup steps has to be positive"),
        (lambda: lrs.LRScheduler(warmup_steps=1.5), TypeError, "warmup_steps must be an int"),
        (
            lambda: lrs.LRScheduler(base_lr=0.1, warmup_begin_lr=0.2),
            ValueError,
            "Base lr has to be higher than warmup_begin_lr",
        ),
        (lambda: lrs.LRScheduler(warmup_mode="cubic"), ValueError, "linear and constant"),
        (lambda: lrs.FactorScheduler(step=0), ValueError, "step must be greater or equal than 1"),
        (
            lambda: lrs.FactorScheduler(step=2, factor=1.5),
            ValueError,
            "Factor must be no more than 1",
        ),
        (lambda: lrs.MultiFactorScheduler([3, 2]), ValueError, "increasing integer list"),
        (lambda: lrs.MultiFactorScheduler([0, 2]), ValueError, "greater or equal than 1"),
        (lambda: lrs.MultiFactorScheduler([]), ValueError, "non-empty list"),
        (lambda: lrs.MultiFactorScheduler([2], factor=2), ValueError, "Factor must be no more"),
        (lambda: lrs.PolyScheduler(0), ValueError, "strictly positive"),
        (lambda: lrs.PolyScheduler(5.0), TypeError, "max_update must be an int"),
        (lambda: lrs.CosineScheduler(3, warmup_steps=3), ValueError, "larger than warmup_steps"),
    ],
)
def test_errors(make, exc, msg):
    with pytest.raises(exc, match=msg):
        make()


def test_get_warmup_lr_after_warmup_raises():
    with pytest.raises(ValueError, match="after the warm-up"):
        lrs.FactorScheduler(step=2, warmup_steps=2).get_warmup_lr(3)


def test_public_alias():
    assert mx.lr_scheduler.FactorScheduler is lrs.FactorScheduler
