"""MXNet's ``mxnet.libinfo``: where the native library is, and the version.

mxmod has no ``libmxnet.so``: its native code is XLA's, in jaxlib. ``find_lib_path``
returns that library, so tools that print or check the path (MXNet's ``diagnose.py``,
build scripts) see the library that does the work. There are no C headers to include.
"""

from __future__ import annotations

import glob
import importlib.util
import os

__version__ = "1.9.1"  # the MXNet behaviour mxmod implements (mxmod.__mxmod_version__: ours)


def find_lib_path(prefix: str = "libmxnet") -> list:
    """Paths of the native library mxmod runs on: jaxlib's XLA extension(s)."""
    folder = importlib.util.find_spec("jaxlib").submodule_search_locations[0]
    found = sorted(glob.glob(os.path.join(folder, "_jax*.so")))
    found += sorted(glob.glob(os.path.join(folder, "libjax*.so")))
    if not found:
        raise RuntimeError(f"Cannot find jaxlib's native library in {folder}")
    return found


def find_include_path() -> str:
    """MXNet's C headers: mxmod has none (no C API)."""
    raise RuntimeError(
        "Cannot find the MXNet include path: mxmod has no C API or headers (it runs on "
        "JAX/XLA); build C++ extensions against XLA, or use a Python CustomOp"
    )


def find_conf_path(prefix: str = "tvmop") -> str:
    """MXNet's TVM operator config: mxmod has none."""
    raise RuntimeError("Cannot find the TVM op config: mxmod has no TVM operators")
