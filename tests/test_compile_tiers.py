"""Issue 24: MXMOD_COMPILE modes train as the optimised program does."""

import numpy as np
import pytest

import mxmod as mx
from mxmod.executor import tiers


def net():
    x = mx.sym.Variable("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=16, name="fc1"), act_type="relu")
    h = mx.sym.BatchNorm(h, name="bn")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=4, name="fc2"), name="softmax")


def trajectory(monkeypatch, mode, steps=20):
    monkeypatch.setenv("MXMOD_COMPILE", mode)
    mx.executor.forget_compiled()
    rng = np.random.RandomState(0)
    x, y = rng.randn(steps * 8, 6).astype("f"), rng.randint(0, 4, steps * 8).astype("f")
    it = mx.io.NDArrayIter(x, y, batch_size=8)
    mod = mx.mod.Module(net())
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(mx.init.Constant(0.05))
    mod.init_optimizer(optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    losses = []
    for batch in it:
        mod.forward_backward(batch)
        mod.update()
        losses.append(mod.get_outputs()[0].asnumpy().max(1).mean())
    return np.array(losses), mod.get_params()[0]


@pytest.mark.parametrize("mode", ["fast", "tiered"])
def test_a_mode_follows_the_optimised_trajectory_over_20_steps(monkeypatch, mode):
    want_losses, want = trajectory(monkeypatch, "sync")
    got_losses, got = trajectory(monkeypatch, mode)
    # XLA fuses differently per optimisation level: agreement to float32 rounding
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-4, atol=1e-6)
    for name in want:
        np.testing.assert_allclose(got[name].asnumpy(), want[name].asnumpy(), rtol=1e-4, atol=1e-5)


def test_tiered_switches_to_the_optimised_build(monkeypatch):
    import jax.numpy as jnp

    monkeypatch.setenv("MXMOD_COMPILE", "tiered")
    prog = tiers.program_jit(lambda a, b: a @ b + 1.0)
    assert isinstance(prog, tiers.Tiered)
    a = jnp.ones((4, 4))
    first = prog(a, a)  # the level-0 build
    build = prog._builds[tiers.signature((a, a))]
    assert not build.optimised and build.future is None  # a few calls compile nothing more
    prog.wait()
    second = prog(a, a)  # the optimised build now
    assert build.optimised and prog._cache_size() == 1
    np.testing.assert_allclose(np.asarray(first), np.asarray(second))
    prog(jnp.ones((2, 4)), jnp.ones((4, 3)))  # new shapes: a new pair of builds
    assert prog._cache_size() == 2


def test_tiered_optimises_a_program_called_in_a_loop(monkeypatch):
    import jax.numpy as jnp

    monkeypatch.setenv("MXMOD_COMPILE", "tiered")
    monkeypatch.setattr(tiers, "PROMOTE_AFTER", 3)
    prog = tiers.program_jit(lambda a: a * 2.0)
    a = jnp.ones(3)
    for _ in range(3):
        prog(a)
    build = prog._builds[tiers.signature((a,))]
    assert build.future is not None  # compiling in the background after the 3rd call
    build.future.result()
    np.testing.assert_array_equal(np.asarray(prog(a)), [2.0, 2.0, 2.0])
    assert build.optimised and build.lowered is None  # the trace is released


def test_tiered_keeps_its_quick_builds_on_disk(tmp_path, monkeypatch):
    import jax.numpy as jnp

    from mxmod import program_store

    monkeypatch.setenv("MXMOD_COMPILE", "tiered")
    monkeypatch.setattr(program_store, "folder", lambda: str(tmp_path))
    program_store._ENVIRONMENT = None
    try:
        a = jnp.arange(4.0)
        first = tiers.program_jit(lambda x: x + 1.0, key="test-tiered")
        np.testing.assert_array_equal(np.asarray(first(a)), [1, 2, 3, 4])
        loaded = program_store.COUNTS["loaded"]
        again = tiers.program_jit(lambda x: x + 1.0, key="test-tiered")  # as a new process
        np.testing.assert_array_equal(np.asarray(again(a)), [1, 2, 3, 4])
        assert program_store.COUNTS["loaded"] == loaded + 1
        build = again._builds[tiers.signature((a,))]
        assert build.lowered is None and build.spec is not None  # nothing traced
        again.wait()  # the optimised build is lowered from the kept shapes
        assert build.optimised
    finally:
        program_store._ENVIRONMENT = None


def test_an_unknown_mode_names_the_choices(monkeypatch):
    monkeypatch.setenv("MXMOD_COMPILE", "turbo")
    with pytest.raises(ValueError, match="MXMOD_COMPILE='turbo': use one of sync, fast, tiered"):
        tiers.compile_mode()
