"""Issue 24: MXMOD_COMPILE modes train as the optimised program does."""

import numpy as np
import pytest

import mxmod as mx
from mxmod import program_tiers as tiers


@pytest.fixture
def kept_on_disk(tmp_path, monkeypatch):
    """Programs kept in ``tmp_path`` (the suite runs with the cache off), as by a process
    whose environment text is computed afresh."""
    from mxmod import program_store

    monkeypatch.setattr(program_store, "folder", lambda: str(tmp_path))
    program_store._ENVIRONMENT = None
    yield tmp_path
    program_store._ENVIRONMENT = None


def net():
    x = mx.sym.Variable("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=16, name="fc1"), act_type="relu")
    h = mx.sym.BatchNorm(h, name="bn")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=4, name="fc2"), name="softmax")


def trajectory(monkeypatch, mode, steps=20, at_step=None):
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
    for i, batch in enumerate(it):
        if at_step is not None and i == steps // 2:
            at_step()
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


@pytest.mark.parametrize("mode", ["tiered", "fast"])
def test_same_shapes_on_another_device_run_their_own_build(monkeypatch, mode):
    import jax
    import jax.numpy as jnp

    monkeypatch.setenv("MXMOD_COMPILE", mode)
    # heavy: optimised at once, so the next call tries the last build directly
    prog = tiers.program_jit(lambda a: a * 2.0 + 1.0, estimate=lambda traced, args: None)
    cpu0, cpu1 = jax.devices("cpu")[:2]
    a0 = jax.device_put(jnp.arange(8.0), cpu0)
    a1 = jax.device_put(jnp.arange(8.0), cpu1)
    for _ in range(3):  # the build called last is tried first: it must not take cpu1's array
        np.testing.assert_array_equal(np.asarray(prog(a0)), np.arange(8.0) * 2 + 1)
        out = prog(a1)
        assert out.devices() == {cpu1}
        np.testing.assert_array_equal(np.asarray(out), np.arange(8.0) * 2 + 1)
    assert prog._cache_size() == 2


def test_tiered_optimises_a_program_called_in_a_loop_on_a_fixed_call(monkeypatch):
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
    for _ in range(2):  # ready, but the switch is call 6 in every run
        prog(a)
    assert not build.optimised
    np.testing.assert_array_equal(np.asarray(prog(a)), [2.0, 2.0, 2.0])
    assert build.optimised and build.spec is None  # nothing of the trace is kept


def test_a_late_optimised_build_is_waited_for_at_the_switch(monkeypatch):
    import threading

    import jax.numpy as jnp

    monkeypatch.setenv("MXMOD_COMPILE", "tiered")
    monkeypatch.setattr(tiers, "PROMOTE_AFTER", 3)
    prog = tiers.program_jit(lambda a: a + 2.0)
    a = jnp.ones(2)
    release = threading.Event()
    tiers._POOL.submit(release.wait)  # the background thread is busy
    for _ in range(5):
        prog(a)
    build = prog._builds[tiers.signature((a,))]
    assert not build.future.done()
    threading.Timer(0.2, release.set).start()
    prog(a)  # call 6 waits for the optimised build, then runs it
    assert build.optimised


def test_tiered_keeps_its_quick_builds_on_disk(kept_on_disk, monkeypatch):
    import jax.numpy as jnp

    from mxmod import program_store

    monkeypatch.setenv("MXMOD_COMPILE", "tiered")
    a = jnp.arange(4.0)
    first = tiers.program_jit(lambda x: x + 1.0, key="test-tiered")
    np.testing.assert_array_equal(np.asarray(first(a)), [1, 2, 3, 4])
    loaded = program_store.COUNTS["loaded"]
    again = tiers.program_jit(lambda x: x + 1.0, key="test-tiered")  # as a new process
    np.testing.assert_array_equal(np.asarray(again(a)), [1, 2, 3, 4])
    assert program_store.COUNTS["loaded"] == loaded + 1
    build = again._builds[tiers.signature((a,))]
    assert build.spec is not None  # shapes kept, for the optimised build
    again.wait()  # the optimised build is lowered from the kept shapes
    assert build.optimised


def test_an_unknown_mode_names_the_choices(monkeypatch):
    monkeypatch.setenv("MXMOD_COMPILE", "turbo")
    with pytest.raises(ValueError, match="MXMOD_COMPILE='turbo': use one of tiered, sync, fast"):
        tiers.compile_mode()


def test_tiered_is_the_default(monkeypatch):
    monkeypatch.delenv("MXMOD_COMPILE", raising=False)
    assert tiers.compile_mode() == "tiered"
    monkeypatch.setenv("MXMOD_COMPILE", "")
    assert tiers.compile_mode() == "tiered"


def test_promotion_waits_until_the_quick_build_has_cost_the_optimised_compile(monkeypatch):
    prog = tiers.Tiered(None, None, tiers.cost_estimate)
    # 20 ms a call optimised, ~40 ms more quick; 600 operations: a quick compile of ~0.3 s,
    # the optimised one ~4x that
    monkeypatch.setattr(tiers, "QUICK_S_PER_EQN", 5e-4)
    assert prog._promote_after(0.02, 600) == 30
    assert prog._promote_after(1e-6, 600) == tiers.PROMOTE_AFTER  # tiny: at most 50 calls
    assert prog._promote_after(0.5, 20) == 3  # at least 3
    assert prog._promote_after(None, 600) == tiers.PROMOTE_AFTER  # no estimate
    assert (
        tiers.Tiered(None, None, tiers.cost_estimate, quick_only=True)._promote_after(0.02, 600)
        == 0
    )  # fast: never


def test_a_heavy_program_compiles_optimised_at_once(kept_on_disk, monkeypatch):
    import jax.numpy as jnp

    from mxmod import program_store

    monkeypatch.setenv("MXMOD_COMPILE", "tiered")
    a = jnp.ones((64, 64))
    heavy = tiers.program_jit(lambda x: x @ x, key="test-heavy", estimate=lambda lo, ar: 1.0)
    np.testing.assert_allclose(np.asarray(heavy(a)), np.full((64, 64), 64.0))
    build = heavy._builds[tiers.signature((a,))]
    assert build.optimised and build.future is None
    saved = program_store.COUNTS["loaded"]
    # a later process loads the optimised build (its own estimate is never asked)
    again = tiers.program_jit(lambda x: x @ x, key="test-heavy", estimate=None)
    np.testing.assert_allclose(np.asarray(again(a)), np.full((64, 64), 64.0))
    assert program_store.COUNTS["loaded"] == saved + 1
    assert again._builds[tiers.signature((a,))].optimised


def test_no_cost_estimate_means_optimised(monkeypatch):
    import jax.numpy as jnp

    monkeypatch.setenv("MXMOD_COMPILE", "tiered")
    prog = tiers.program_jit(lambda x: x + 1.0, estimate=lambda lo, ar: None)
    prog(jnp.ones(3))
    assert prog._builds[tiers.signature((jnp.ones(3),))].optimised


def test_the_cost_estimate_counts_flops_and_bytes():
    import jax
    import jax.numpy as jnp

    def flops_and_bytes(fn, *args):
        return tiers._jaxpr_cost(jax.jit(fn).trace(*args).jaxpr.jaxpr)

    # a matmul: 2 n^3 flops; reads two n x n float32 matrices, writes one
    assert flops_and_bytes(lambda x: x @ x, jnp.ones((256, 256))) == (2 * 256**3, 3 * 256**2 * 4)

    # a scan counts its body once per step (XLA's cost analysis counts it once)
    def scanned(x, w):
        return jax.lax.scan(lambda c, _: (jnp.tanh(c @ w), None), x, None, length=5)[0]

    flops, _ = flops_and_bytes(scanned, jnp.ones((4, 64)), jnp.ones((64, 64)))
    assert flops == 5 * (2 * 4 * 64 * 64 + 4 * 64)

    # a convolution: 2 flops per output element and kernel tap of its input channels
    def conv(x, k):
        return jax.lax.conv_general_dilated(x, k, (1, 1), "SAME")

    flops, _ = flops_and_bytes(conv, jnp.ones((8, 16, 32, 32)), jnp.ones((32, 16, 3, 3)))
    assert flops == 2 * (8 * 32 * 32 * 32) * (16 * 3 * 3)

    # a cond runs one branch
    flops, _ = flops_and_bytes(
        lambda x: jax.lax.cond(x[0] > 0, jnp.sin, lambda v: jnp.cos(v) * 2, x), jnp.ones(1000)
    )
    assert 2000 <= flops < 2100

    big = jax.jit(lambda x: x @ x).trace(jnp.ones((2048, 2048)))
    assert tiers.cost_estimate(big, None) > tiers.HEAVY_S  # 17 GFLOP
    small = jax.jit(lambda x: x * 2.0).trace(jnp.ones(8))
    assert tiers.cost_estimate(small, None) < 1e-6


def test_a_later_process_replays_the_builds_and_their_schedule(kept_on_disk, monkeypatch):
    import jax.numpy as jnp

    from mxmod import program_store

    monkeypatch.setenv("MXMOD_COMPILE", "tiered")
    monkeypatch.setattr(tiers, "PROMOTE_AFTER", 3)
    a = jnp.arange(4.0)
    first = tiers.program_jit(lambda x: x - 1.0, key="test-promoted")
    for _ in range(6):
        first(a)
    assert first._builds[tiers.signature((a,))].optimised  # compiled and kept
    built = program_store.COUNTS["built"]
    again = tiers.program_jit(lambda x: x - 1.0, key="test-promoted")  # a new process
    for _ in range(5):
        np.testing.assert_array_equal(np.asarray(again(a)), [-1, 0, 1, 2])
    build = again._builds[tiers.signature((a,))]
    assert not build.optimised and build.promote_after == 3  # the quick build, as before
    again(a)
    assert build.optimised  # call 6: the kept optimised build, loaded
    assert program_store.COUNTS["built"] == built  # nothing traced or compiled


def test_fast_keeps_its_quick_builds(monkeypatch):
    import jax.numpy as jnp

    monkeypatch.setenv("MXMOD_COMPILE", "fast")
    prog = tiers.program_jit(lambda x: x * 3.0)
    a = jnp.ones(2)
    for _ in range(tiers.PROMOTE_AFTER + 1):
        prog(a)
    prog.wait()
    build = prog._builds[tiers.signature((a,))]
    assert not build.optimised and build.future is None


def test_sync_is_plain_jit_without_a_key(monkeypatch):
    from mxmod import xla_options

    monkeypatch.setenv("MXMOD_COMPILE", "sync")
    assert isinstance(tiers.program_jit(lambda x: x), xla_options.Jit)


def test_tiered_trajectory_across_the_switch_to_the_optimised_build(monkeypatch):
    # the switch comes at step 6: close to the optimised run, and the same in every run
    monkeypatch.setattr(tiers, "PROMOTE_AFTER", 3)
    monkeypatch.setattr(tiers, "FULL_OVER_QUICK", 0.0)
    from mxmod import program_store

    want_losses, want = trajectory(monkeypatch, "sync")
    promoted = program_store.COUNTS["promoted"]
    got_losses, got = trajectory(monkeypatch, "tiered")
    assert program_store.COUNTS["promoted"] > promoted
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-4, atol=1e-6)
    for name in want:
        np.testing.assert_allclose(got[name].asnumpy(), want[name].asnumpy(), rtol=1e-4, atol=1e-5)
    # a late background compile changes nothing: its build is waited for at the switch
    import time

    tiers._POOL.submit(time.sleep, 1.0)  # the optimised builds queue behind this
    again_losses, again = trajectory(monkeypatch, "tiered")
    np.testing.assert_array_equal(again_losses, got_losses)
    for name in got:
        np.testing.assert_array_equal(again[name].asnumpy(), got[name].asnumpy())


@pytest.mark.parametrize("mode", ["sync", "tiered", "fast"])
def test_a_kept_program_called_inside_another_trace_becomes_part_of_it(
    kept_on_disk, monkeypatch, mode
):
    # e.g. an mx.nd operator in a custom optimizer's update(), traced into the fused step
    import jax
    import jax.numpy as jnp

    monkeypatch.setenv("MXMOD_COMPILE", mode)
    inner = tiers.program_jit(lambda x: x * 2.0, key=f"test-inner-{mode}")
    np.testing.assert_array_equal(np.asarray(inner(jnp.ones(2))), [2.0, 2.0])
    outer = jax.jit(lambda x: inner(x) + 1.0)
    np.testing.assert_array_equal(np.asarray(outer(jnp.ones(2))), [3.0, 3.0])
    grad = jax.grad(lambda x: inner(x).sum())(jnp.ones(2))
    np.testing.assert_array_equal(np.asarray(grad), [2.0, 2.0])


EXIT_MID_COMPILE = """
import jax.numpy as jnp
from mxmod import program_tiers as tiers
tiers.PROMOTE_AFTER = 3
def chain(x, k):  # a long program: its optimised build takes seconds
    for i in range(300):
        x = jnp.tanh(x @ x * 0.01 + i * k)
    return x
progs = [tiers.program_jit(lambda x, k=k: chain(x, k)) for k in (1.0, 2.0)]
a = jnp.ones((8, 8))
for prog in progs:
    for _ in range(3):
        prog(a).block_until_ready()
futures = [next(iter(p._builds.values())).future for p in progs]
assert not futures[1].done(), "queued behind the first"
print("ended with optimised builds compiling", flush=True)
"""


def test_a_process_ends_cleanly_with_background_compiles_in_flight():
    import os
    import subprocess
    import sys

    env = {**os.environ, "MXMOD_COMPILE": "tiered", "MXMOD_CACHE_DIR": ""}
    done = subprocess.run(
        [sys.executable, "-c", EXIT_MID_COMPILE], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ended with optimised builds compiling" in done.stdout


def test_the_end_of_a_process_drops_the_compiles_not_started():
    import concurrent.futures
    import threading

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    release = threading.Event()
    running = pool.submit(release.wait)
    queued = pool.submit(lambda: "compiled")
    tiers._abandon_queued(pool)
    assert queued.cancelled()
    release.set()
    assert running.result() is True


def test_temporary_files_of_an_ended_write_are_pruned(tmp_path):
    import os
    import time

    from mxmod import program_files

    stale, fresh = tmp_path / ".tmp-stale", tmp_path / ".tmp-fresh"
    stale.write_bytes(b"x")
    fresh.write_bytes(b"x")  # another process may be writing it now
    old = time.time() - program_files.STALE_TMP_S - 10
    os.utime(stale, (old, old))
    program_files.prune(str(tmp_path))
    assert not stale.exists() and fresh.exists()


def test_a_multi_process_job_compiles_as_sync(monkeypatch):
    # its workers' programs meet in collectives: none may switch builds on its own
    import jax

    monkeypatch.setenv("MXMOD_COMPILE", "tiered")
    monkeypatch.setattr(jax, "process_count", lambda: 2)
    prog = tiers.program_jit(lambda x: x)
    assert not isinstance(prog, tiers.Tiered)
    monkeypatch.setattr(jax, "process_count", lambda: 1)
    assert isinstance(tiers.program_jit(lambda x: x), tiers.Tiered)


def test_a_program_with_python_scalars_is_optimised_from_its_kept_shapes(monkeypatch):
    # e.g. NDArrayIter's gather(arrays, order, start): the optimised build is lowered again
    # from shapes, dtypes, weak types and the scalars themselves
    import jax.numpy as jnp

    monkeypatch.setenv("MXMOD_COMPILE", "tiered")
    monkeypatch.setattr(tiers, "PROMOTE_AFTER", 3)
    prog = tiers.program_jit(lambda x, start: x[start] * 2.0)
    x = jnp.arange(6.0)
    got = [float(prog(x, 2)) for _ in range(3)]
    prog.wait()
    build = prog._builds[tiers.signature((x, 2))]
    assert build.optimised and got == [4.0] * 3 and float(prog(x, 2)) == 4.0


def test_sync_keeps_optimised_builds_and_a_later_process_loads_them(kept_on_disk, monkeypatch):
    import jax.numpy as jnp

    from mxmod import program_store

    monkeypatch.setenv("MXMOD_COMPILE", "sync")
    a = jnp.arange(3.0)
    first = tiers.program_jit(lambda x: x * x, key="test-sync")
    np.testing.assert_array_equal(np.asarray(first(a)), [0, 1, 4])
    assert first._builds[tiers.signature((a,))].optimised  # no quick build in sync
    loaded, built = program_store.COUNTS["loaded"], program_store.COUNTS["built"]
    again = tiers.program_jit(lambda x: x * x, key="test-sync")  # as a new process
    np.testing.assert_array_equal(np.asarray(again(a)), [0, 1, 4])
    assert program_store.COUNTS["loaded"] == loaded + 1
    assert program_store.COUNTS["built"] == built


def test_a_quick_option_this_xla_lacks_is_dropped(monkeypatch):
    # another JAX's XLA may no longer have an option: the quick build goes on without it
    import jax.numpy as jnp

    monkeypatch.setenv("MXMOD_COMPILE", "fast")
    monkeypatch.setattr(tiers, "_quick_options", {**tiers.QUICK_OPTIONS, "xla_no_such": True})
    prog = tiers.program_jit(lambda x: x + 5.0)
    np.testing.assert_array_equal(np.asarray(prog(jnp.zeros(2))), [5.0, 5.0])
    # (jax 0.12's XLA also lacks xla_cpu_use_fusion_emitters: dropped likewise)
    assert "xla_no_such" not in tiers._quick_options
    assert tiers._quick_options.items() <= tiers.QUICK_OPTIONS.items()
    assert tiers._quick_options["xla_backend_optimization_level"] == 0


def test_a_kept_optimised_build_that_no_longer_loads_is_compiled_again(kept_on_disk, monkeypatch):
    import jax.numpy as jnp

    from mxmod import program_store

    monkeypatch.setenv("MXMOD_COMPILE", "tiered")
    monkeypatch.setattr(tiers, "PROMOTE_AFTER", 3)
    a = jnp.arange(3.0)
    first = tiers.program_jit(lambda x: x + 7.0, key="test-torn")
    for _ in range(6):
        first(a)
    full = first._builds[tiers.signature((a,))]
    assert full.optimised
    digest = program_store.program_digest("test-torn", (a,))
    (kept_on_disk / digest).write_bytes(b"torn")  # a crash mid-copy, a foreign file
    again = tiers.program_jit(lambda x: x + 7.0, key="test-torn")  # a new process
    for _ in range(6):
        np.testing.assert_array_equal(np.asarray(again(a)), [7.0, 8.0, 9.0])
    assert again._builds[tiers.signature((a,))].optimised
    assert (kept_on_disk / digest).read_bytes() != b"torn"  # rewritten


def test_a_failed_optimised_compile_leaves_the_quick_build_running(monkeypatch):
    import jax.numpy as jnp

    monkeypatch.setenv("MXMOD_COMPILE", "tiered")
    monkeypatch.setattr(tiers, "PROMOTE_AFTER", 3)

    def broken(lowered, digest):
        raise RuntimeError("XLA ran out of memory")

    monkeypatch.setattr(tiers, "_compile_optimised", broken)
    prog = tiers.program_jit(lambda x: x * 4.0)
    a = jnp.ones(2)
    for _ in range(5):
        prog(a)
    with pytest.warns(UserWarning, match="the optimised build failed .*XLA ran out of memory"):
        np.testing.assert_array_equal(np.asarray(prog(a)), [4.0, 4.0])
    np.testing.assert_array_equal(np.asarray(prog(a)), [4.0, 4.0])  # quick build, no retry


def test_a_heavy_program_is_written_while_its_first_call_runs(kept_on_disk, monkeypatch):
    import jax.numpy as jnp

    from mxmod import program_store

    monkeypatch.setenv("MXMOD_COMPILE", "sync")
    written = []
    submit = tiers._SAVES.submit
    monkeypatch.setattr(tiers._SAVES, "submit", lambda *a: written.append(a) or submit(*a))
    a = jnp.arange(4.0)
    first = tiers.program_jit(lambda x: x * 3.0, key="test-save-soon")
    np.testing.assert_array_equal(np.asarray(first(a)), [0, 3, 6, 9])
    assert len(written) == 1  # in the background
    loaded = program_store.COUNTS["loaded"]
    again = tiers.program_jit(lambda x: x * 3.0, key="test-save-soon")  # waits for the write
    np.testing.assert_array_equal(np.asarray(again(a)), [0, 3, 6, 9])
    assert program_store.COUNTS["loaded"] == loaded + 1


def test_a_sorting_program_is_written_before_its_first_call(kept_on_disk, monkeypatch):
    # XLA:CPU cannot serialize a sort's comparator once the program has run
    import jax.numpy as jnp

    from mxmod import program_store

    monkeypatch.setenv("MXMOD_COMPILE", "sync")
    monkeypatch.setattr(tiers._SAVES, "submit", lambda *a: pytest.fail("written in background"))
    saved = program_store.COUNTS["saved"]
    prog = tiers.program_jit(lambda x: jnp.sort(x) * 2.0, key="test-save-sort")
    np.testing.assert_array_equal(np.asarray(prog(jnp.array([3.0, 1.0, 2.0]))), [2, 4, 6])
    assert program_store.COUNTS["saved"] == saved + 1
