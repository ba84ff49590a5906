"""Build features, as ``mxnet.runtime`` (``mx.runtime.Features()``).

MXNet reports the features its library was compiled with. mxmod answers the same
questions from what JAX/XLA can use on this machine: ``CUDA``/``CUDNN``/``NCCL``
are enabled when JAX has a GPU backend, the ``CPU_*`` instruction sets come from the
host CPU (XLA compiles for it), ``PROFILER`` is ``jax.profiler``, ``DIST_KVSTORE`` is
``jax.distributed``, ``INT64_TENSOR_SIZE`` follows ``jax_enable_x64``. Libraries
mxmod does not use (MKLDNN, OpenCV, TensorRT, ...) are reported disabled. mxmod adds
``TPU``.
"""

from __future__ import annotations

import collections
import os

import jax

__all__ = ["Feature", "Features", "feature_list"]

# MXNet 1.9.1's feature names, in its order.
_MXNET_FEATURES = (
    "CUDA",
    "CUDNN",
    "NCCL",
    "CUDA_RTC",
    "TENSORRT",
    "CPU_SSE",
    "CPU_SSE2",
    "CPU_SSE3",
    "CPU_SSE4_1",
    "CPU_SSE4_2",
    "CPU_SSE4A",
    "CPU_AVX",
    "CPU_AVX2",
    "OPENMP",
    "SSE",
    "F16C",
    "JEMALLOC",
    "BLAS_OPEN",
    "BLAS_ATLAS",
    "BLAS_MKL",
    "BLAS_APPLE",
    "LAPACK",
    "MKLDNN",
    "OPENCV",
    "CAFFE",
    "PROFILER",
    "DIST_KVSTORE",
    "CXX14",
    "INT64_TENSOR_SIZE",
    "SIGNAL_HANDLER",
    "DEBUG",
    "TVM_OP",
)
# Feature -> /proc/cpuinfo flag.
_WITH_GPU = ("CUDA", "CUDNN", "NCCL")  # on when JAX sees a GPU
_ALWAYS = ("LAPACK", "PROFILER", "DIST_KVSTORE", "CXX14")  # what mxmod always provides

_CPU_FLAGS = {
    "CPU_SSE": "sse",
    "CPU_SSE2": "sse2",
    "CPU_SSE3": "pni",
    "CPU_SSE4_1": "sse4_1",
    "CPU_SSE4_2": "sse4_2",
    "CPU_SSE4A": "sse4a",
    "CPU_AVX": "avx",
    "CPU_AVX2": "avx2",
    "SSE": "sse",
    "F16C": "f16c",
}


class Feature:
    """One feature: ``name`` and ``enabled`` (MXNet's ``mx.runtime.Feature``)."""

    def __init__(self, name: str, enabled: bool):
        self._name, self._enabled = name, bool(enabled)

    @property
    def name(self) -> str:
        """Feature name, e.g. ``'CUDA'``."""
        return self._name

    @property
    def enabled(self) -> bool:
        """True if the feature is available to mxmod here."""
        return self._enabled

    def __repr__(self) -> str:
        return f"{'✔' if self.enabled else '✖'} {self.name}"


def _cpu_flags() -> set:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _has_backend(platform: str) -> bool:
    try:
        return bool(jax.devices(platform))
    except RuntimeError:
        return False


def feature_list() -> list:
    """The list of :class:`Feature` objects (MXNet's ``mx.runtime.feature_list``)."""
    flags = _cpu_flags()
    enabled = {name: False for name in _MXNET_FEATURES}
    enabled.update({name: flag in flags for name, flag in _CPU_FLAGS.items()})
    enabled.update(dict.fromkeys(_WITH_GPU, _has_backend("gpu")))
    enabled.update(dict.fromkeys(_ALWAYS, True))
    enabled["INT64_TENSOR_SIZE"] = bool(jax.config.read("jax_enable_x64"))
    enabled["DEBUG"] = bool(os.environ.get("JAX_DEBUG_NANS"))
    features = [Feature(name, enabled[name]) for name in _MXNET_FEATURES]
    features.append(Feature("TPU", _has_backend("tpu")))
    return features


class Features(collections.OrderedDict):
    """Ordered dict name -> :class:`Feature` (MXNet's ``mx.runtime.Features()``).

    Built once per process, like MXNet's singleton.
    """

    instance = None

    def __new__(cls):
        if cls.instance is None:
            cls.instance = super().__new__(cls)
            collections.OrderedDict.__init__(cls.instance, [(f.name, f) for f in feature_list()])
        return cls.instance

    def __repr__(self) -> str:
        return str(list(self.values()))

    def is_enabled(self, feature_name: str) -> bool:
        """True if ``feature_name`` (any case) is enabled.

        Raises:
            RuntimeError: for an unknown name (the message lists the known ones).
        """
        key = feature_name.upper()
        if key not in self:
            raise RuntimeError(
                f"Feature '{key}' is unknown, known features are: {list(self.keys())}"
            )
        return self[key].enabled
