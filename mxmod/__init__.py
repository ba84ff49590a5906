"""mxmod: Apache MXNet 1.x's symbolic Module API, running on JAX.

``import mxmod as mx`` and MXNet Module programs (symbols, Module/BucketingModule,
iterators, metrics, optimizers, initializers, callbacks, checkpoints) run compiled
by XLA on CPU, GPU or TPU.
"""

import importlib as _importlib

import numpy as _np

# Importing jax draws from numpy's global RNG (jax._src.clusters.k8s_cluster); restore it so
# np.random.seed(...) then `import mxmod` shuffles as `import mxnet` would (issue 15).
_np_rng_state = _np.random.get_state()
import jax as _jax  # noqa: E402,F401  (imported here, once, under the saved state)

_np.random.set_state(_np_rng_state)
del _np_rng_state

# MXNet programs run under logging.basicConfig(level=logging.DEBUG): JAX's compile-time
# debug records (hundreds a run) would bury their log. A level set on "jax" is kept.
import logging as _logging  # noqa: E402

if _logging.getLogger("jax").level == _logging.NOTSET:
    _logging.getLogger("jax").setLevel(_logging.WARNING)
del _logging

from .base import MXNetError  # noqa: E402
from . import compile_cache  # noqa: E402

compile_cache.enable_by_default()  # MXMOD_CACHE_DIR= turns it off (mxmod/compile_cache.py)

# A worker started by a launcher (DMLC_* or JAX_* variables) joins its job now, before JAX's
# first computation (see mxmod/kvstore/dist.py).
import os as _os  # noqa: E402

if "DMLC_ROLE" in _os.environ or "JAX_PROCESS_ID" in _os.environ:
    from .kvstore.dist import maybe_initialize_at_import as _join  # launched jobs only

    _join()
    del _join
del _os
from .context import Context, cpu, cpu_pinned, current_context, gpu, tpu  # noqa: E402

# The layers under the Module API. executor sets Symbol.bind/simple_bind (a hook table in
# mxmod.symbol.symbol), so it is imported with them.
from . import executor, ndarray, symbol  # noqa: E402,F401
from .symbol.naming import AttrScope  # noqa: E402

#: The MXNet version whose behaviour mxmod implements, so ``mx.__version__ >= "1.3.0"``
#: checks in MXNet programs take the modern branch; mxmod's own release is
#: ``__mxmod_version__``.
__version__ = "1.9.1"
__mxmod_version__ = "0.1.0"

# Public submodules, loaded on first use (MXNet's names and aliases).
_SUBMODULES = {
    "sym": "symbol",
    "symbol": "symbol",
    "nd": "ndarray",
    "ndarray": "ndarray",
    "mod": "module",
    "module": "module",
    "io": "io",
    "metric": "metric",
    "optimizer": "optimizer",
    "opt": "optimizer",
    "init": "initializer",
    "initializer": "initializer",
    "lr_scheduler": "lr_scheduler",
    "kv": "kvstore",
    "kvstore": "kvstore",
    "callback": "callback",
    "model": "model",
    "mon": "monitor",
    "monitor": "monitor",
    "random": "random",
    "rnd": "random",
    "executor": "executor",
    "context": "context",
    "name": "name",
    "base": "base",
    "ops": "ops",
    "operator": "operator",
    "rnn": "rnn",
    "contrib": "contrib",
    "recordio": "recordio",
    "image": "image",
    "img": "image",
    "viz": "visualization",
    "visualization": "visualization",
    "test_utils": "test_utils",
    "profiler": "profiler",
    "gluon": "gluon",
    "autograd": "autograd",
    "runtime": "runtime",
    "util": "util",
    "onnx": "onnx",
    "engine": "engine",
    "error": "error",
    "attribute": "attribute",
    "log": "log",
    "library": "library",
    "rtc": "rtc",
    "executor_manager": "executor_manager",
    "misc": "misc",
    "libinfo": "libinfo",
}


_NP_SWITCHES = ("is_np_shape", "set_np_shape", "np_shape", "use_np_shape", "is_np_array",
                "np_array", "use_np_array", "use_np")  # fmt: skip


def __getattr__(name):
    if name in _SUBMODULES:
        module = _importlib.import_module(f".{_SUBMODULES[name]}", __name__)
        globals()[name] = module
        return module
    if name in _NP_SWITCHES:  # MXNet exports its NumPy-semantics switches at top level
        return getattr(_importlib.import_module(".util", __name__), name)
    raise AttributeError(f"module 'mxmod' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBMODULES) | {"AttrScope", *_NP_SWITCHES})


__all__ = [
    "MXNetError",
    "Context",
    "cpu",
    "cpu_pinned",
    "gpu",
    "tpu",
    "current_context",
    "AttrScope",
    *sorted(_SUBMODULES),
]
