"""Behaviour of mxmod.context against MXNet 1.9.1's mx.Context semantics."""

import threading
import warnings

import jax
import pytest

from mxmod import context
from mxmod.base import MXNetError
from mxmod.context import Context, cpu, current_context, gpu, tpu


def test_repr_equality_hash():
    assert repr(cpu(1)) == "cpu(1)" and str(gpu(2)) == "gpu(2)" and repr(tpu()) == "tpu(0)"
    assert cpu(1) == Context("cpu", 1) and cpu(1) != cpu(0) and cpu(0) != gpu(0)
    assert cpu(0) != "cpu(0)"
    assert len({cpu(0), Context("cpu", 0), cpu(1)}) == 2
    assert Context(gpu(1)) == gpu(1) and Context(gpu(1)).device_type == "gpu"
    assert (cpu(3).device_type, cpu(3).device_id) == ("cpu", 3)
    assert cpu() == cpu(0)


def test_bad_device_type_and_id():
    with pytest.raises(ValueError, match=r"unknown device type 'foo'.*mx.cpu\(0\)"):
        Context("foo", 0)
    with pytest.raises(ValueError, match="device_id must be a non-negative integer, got -1"):
        cpu(-1)


def test_with_sets_default_and_nests():
    assert current_context() == cpu(0)
    c = cpu(3)
    with c:
        assert current_context() == cpu(3)
        with gpu(1):
            assert current_context() == gpu(1)
        with c:  # re-entering the same object (MXNet 1.x loses track here)
            assert current_context() == cpu(3)
        assert current_context() == cpu(3)
    assert current_context() == cpu(0)


def test_default_context_is_thread_local():
    seen = []
    with cpu(5):
        t = threading.Thread(target=lambda: seen.append(current_context()))
        t.start()
        t.join()
        assert current_context() == cpu(5)
    assert seen == [cpu(0)]


def test_default_ctx_class_property():
    assert Context.default_ctx == cpu(0)
    with cpu(2):
        assert Context.default_ctx == cpu(2)
        Context.default_ctx = cpu(4)
        assert current_context() == cpu(4)
    assert current_context() == cpu(0)


def test_cpu_maps_to_jax_devices():
    devs = jax.devices("cpu")
    assert len(devs) == 8  # conftest
    assert cpu(0).jax_device == devs[0]
    assert cpu(5).jax_device == devs[5]
    assert cpu_pinned_device() == devs[0]


def cpu_pinned_device():
    return context.cpu_pinned(0).jax_device


def test_cpu_beyond_device_count_wraps_and_warns_once(monkeypatch):
    monkeypatch.setattr(context, "_DEVICE_CACHE", {})
    monkeypatch.setattr(context, "_warned_cpu_wrap", False)
    with pytest.warns(UserWarning, match="xla_force_host_platform_device_count=10"):
        dev = cpu(9).jax_device
    assert dev == jax.devices("cpu")[1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cpu(12).jax_device == jax.devices("cpu")[4]
    assert cpu(9) != cpu(1)  # still distinct contexts


def test_missing_gpu_names_available_devices():
    with pytest.raises(MXNetError) as err:
        gpu(3).jax_device
    msg = str(err.value)
    assert "gpu(3) does not exist" in msg
    assert "cpu(0)..cpu(7)" in msg and "mx.cpu()" in msg
    with pytest.raises(MXNetError, match=r"tpu\(0\) does not exist"):
        tpu(0).jax_device


def test_num_gpus_and_memory_info():
    assert context.num_gpus() == 0
    with pytest.raises(MXNetError, match=r"gpu\(0\) does not exist"):
        context.gpu_memory_info(0)


def test_empty_cache_is_noop():
    assert cpu(0).empty_cache() is None
