"""Test setup: 8 simulated CPU devices so multi-device code runs everywhere."""

import os

os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
).strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# compile counts are asserted: no persistent cache unless a test turns one on itself
# (tests/test_persistent_cache.py runs fresh processes against a temporary one)
os.environ["MXMOD_CACHE_DIR"] = ""

import jax  # noqa: E402

jax.config.update("jax_enable_x64", False)

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_compile_cache_and_names():
    """Each test compiles its own programs (compile counts and program caches that tests
    inspect or patch never leak between tests through the structural cache) and names its
    symbols from 0 (``dropout0``), as in a fresh process, whatever ran before on the worker."""
    import mxmod as mx  # imported by the first test that runs, not at collection
    from mxmod import program_tiers as tiers

    mx.executor.forget_compiled()
    with mx.name.NameManager():
        yield
    tiers.drain()  # a background compile (MXMOD_COMPILE=tiered) ends inside its own test
