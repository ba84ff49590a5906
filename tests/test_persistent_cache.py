"""Issue 24: compiled programs persist on disk, so a second process compiles nothing."""

import json
import os
import subprocess
import sys

import pytest

PROGRAM = r"""
import json, sys
from jax._src import monitoring
compiles, hits = [], []  # programs asked of XLA; those the persistent cache answered
monitoring.register_event_duration_secs_listener(
    lambda event, secs, **kw: compiles.append(secs)
    if event == "/jax/core/compile/backend_compile_duration" else None
)
monitoring.register_event_listener(
    lambda event, **kw: hits.append(1) if event == "/jax/compilation_cache/cache_hits" else None
)
import numpy as np
import mxmod as mx
from mxmod import program_store as stored
mx.random.seed(0)
x = mx.sym.Variable("data")
net = mx.sym.FullyConnected(x, num_hidden=8, name="fc1")
net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(net, num_hidden=3, name="fc2"), name="softmax")
rng = np.random.RandomState(0)
it = mx.io.NDArrayIter(rng.randn(32, 5).astype("f"), rng.randint(0, 3, 32).astype("f"), 8)
mod = mx.mod.Module(net)
mod.fit(it, num_epoch=2, initializer=mx.init.Uniform(0.1),
        optimizer_params={"learning_rate": 0.1})
w = mod.get_params()[0]["fc2_weight"].asnumpy()
print(json.dumps({"compiles": len(compiles) - len(hits), "w": w.ravel().tolist(),
                  "dir": mx.compile_cache.directory(), "stored": stored.COUNTS}))
"""


def run(env_changes):
    env = {**os.environ, **env_changes}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    out = subprocess.run(
        [sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_second_process_loads_every_program_from_the_cache(tmp_path):
    first = run({"MXMOD_CACHE_DIR": str(tmp_path)})
    second = run({"MXMOD_CACHE_DIR": str(tmp_path)})
    assert first["dir"].startswith(str(tmp_path)) and first["compiles"] > 0
    assert second["compiles"] == 0, second["compiles"]
    assert second["w"] == first["w"]  # the same programs, bit for bit
    # Module programs are kept by mxmod (executor/stored.py), the rest in JAX's entries
    entries = [f for f in os.listdir(first["dir"]) if f.endswith("-cache")]
    assert len(entries) + first["stored"]["saved"] >= first["compiles"]
    assert first["stored"]["saved"] > 0 and second["stored"]["loaded"] > 0


@pytest.mark.slow
def test_an_empty_cache_dir_turns_the_cache_off(tmp_path):
    off = run({"MXMOD_CACHE_DIR": "", "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path)})
    assert off["dir"] is None and os.listdir(tmp_path) == []


def test_a_folder_the_user_gave_jax_wins(tmp_path, monkeypatch):
    import jax

    from mxmod import compile_cache

    mine = str(tmp_path / "mine")
    monkeypatch.setenv("MXMOD_CACHE_DIR", str(tmp_path / "mxmod"))
    before = jax.config.jax_compilation_cache_dir
    jax.config.update("jax_compilation_cache_dir", mine)
    try:
        compile_cache.enable_by_default()
        assert compile_cache.directory() == mine
    finally:
        jax.config.update("jax_compilation_cache_dir", before)


def test_enable_and_disable(tmp_path, monkeypatch):
    import jax

    from mxmod import compile_cache

    monkeypatch.setenv("MXMOD_CACHE_MAX_MB", "16")
    folder = compile_cache.enable(str(tmp_path))
    try:
        assert folder.startswith(str(tmp_path)) and compile_cache.directory() == folder
        assert jax.config.jax_compilation_cache_max_size == 16 * 2**20
        assert f"jax-{jax.__version__}" in folder  # one folder per jax version
    finally:
        compile_cache.disable()
    assert compile_cache.directory() is None


def test_a_bad_size_names_the_variable(monkeypatch):
    from mxmod import compile_cache

    monkeypatch.setenv("MXMOD_CACHE_MAX_MB", "lots")
    with pytest.raises(ValueError, match="MXMOD_CACHE_MAX_MB must be a whole number"):
        compile_cache.enable("/tmp/never-used")


def test_debug_logging_shows_no_cache_lock_lines(tmp_path, caplog):
    """A program logging at DEBUG (SageMaker's scripts) sees no filelock lines about the
    cache's own locks, while its own locks still log."""
    import logging

    import filelock

    from mxmod import compile_cache

    compile_cache.enable(str(tmp_path / "cache"))
    try:
        with caplog.at_level(logging.DEBUG, logger="filelock"):
            with filelock.FileLock(str(tmp_path / "cache" / "x.lock")):
                pass
            with filelock.FileLock(str(tmp_path / "mine.lock")):
                pass
    finally:
        compile_cache.disable()
    messages = [r.getMessage() for r in caplog.records if r.name == "filelock"]
    assert messages and all("mine.lock" in m for m in messages)
