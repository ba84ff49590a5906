"""Keyword checking for the native-style iterators (MXNet's C++ ``MXDataIter`` factories
take every value as a string and parse it by the declared type; this does the same for
Python values or strings, and names any unknown or unsupported parameter)."""

from __future__ import annotations

import ast
import warnings

import numpy as np

from ..base import MXNetError
from ..ops._attrs import AttrError, p_bool

REQUIRED = object()  # a parameter with no default
# the batching parameters every native iterator declares, with MXNet's defaults
BATCH_PARAMS = {
    "batch_size": REQUIRED,
    "round_batch": True,
    "prefetch_buffer": 4,
    "ctx": "gpu",
    "dtype": None,
    "data_name": "data",
    "label_name": "softmax_label",
}


def _bool(name, v):
    if not isinstance(v, str):
        return bool(v)
    try:
        return p_bool(v)  # the operators' string rule: true/false/1/0, any case
    except AttrError:
        raise MXNetError(f"parameter {name}={v!r}: expected a boolean (True/False/1/0)") from None


def _shape(name, v):
    if isinstance(v, str):
        try:
            v = ast.literal_eval(v.strip())
        except (ValueError, SyntaxError):
            raise MXNetError(
                f"parameter {name}={v!r}: expected a shape like (3, 224, 224)"
            ) from None
    if isinstance(v, int):
        v = (v,)
    try:
        return tuple(int(x) for x in v)
    except (TypeError, ValueError):
        raise MXNetError(f"parameter {name}={v!r}: expected a shape like (3, 224, 224)") from None


def _convert(name, v, default):
    if v is None:
        return None
    if name in ("data_shape", "label_shape"):
        return _shape(name, v)
    if isinstance(default, bool):
        return _bool(name, v)
    if name == "batch_size":
        default = 0
    try:
        if isinstance(default, int) and name != "seed_aug":
            return int(float(v)) if isinstance(v, str) else int(v)
        if isinstance(default, float) or name == "min_aspect_ratio":
            return float(v)
        if name == "seed_aug":
            return int(v)
    except (TypeError, ValueError):
        raise MXNetError(f"parameter {name}={v!r}: expected a number") from None
    if name == "dtype":
        return np.dtype(v).name
    return str(v)


def check_params(iter_name, kwargs, params, unsupported, required, stacklevel=3):
    """Parameters with defaults filled in and values converted to their types.

    Raises:
        MXNetError: a required name missing (unknown names only warn, as MXNet ignores
            them).
        NotImplementedError: an MXNet option mxmod does not implement, set to a
            non-default value.
    """
    unknown = sorted(k for k in kwargs if k not in params and k not in unsupported)
    if unknown:  # MXNet's C++ iterators ignore them silently; a warning catches typos
        warnings.warn(
            f"{iter_name}: unknown parameter(s) {unknown} ignored, as MXNet does; see "
            f"help(mx.io.{iter_name}) for the accepted ones",
            stacklevel=stacklevel,
        )
    for k, default in unsupported.items():
        if k in kwargs and float(kwargs[k]) != default:
            raise NotImplementedError(
                f"{iter_name} option {k}={kwargs[k]!r} is not implemented in mxmod"
            )
    if "ctx" in kwargs and str(kwargs["ctx"]) not in ("cpu", "gpu"):
        raise MXNetError(
            f"{iter_name}: ctx={kwargs['ctx']!r} must be 'cpu' or 'gpu' (it names "
            "the loader variant; mxmod places batches with place_on())"
        )
    out = {}
    for k, default in params.items():
        if k in kwargs:
            out[k] = _convert(k, kwargs[k], default)
        elif default is required:
            raise MXNetError(f"{iter_name}: required parameter {k} is missing")
        else:
            out[k] = default
    for k in ("batch_size", "label_width", "num_parts"):
        if k in out and out[k] < 1:
            raise MXNetError(f"{iter_name}: {k}={out[k]} must be at least 1")
    return out
