"""MXNet's 2-bit gradient compression inside a Module's compiled step.

When the Module's kvstore has ``set_gradient_compression({'type': '2bit', ...})`` (or the
Module was built with ``compression_params``), each sender quantises what it sends, as
MXNet's ``device``/``dist`` stores do: ``r = residual + grad``; send ``+t`` where
``r >= t``, ``-t`` where ``r <= -t``, else 0; keep ``r - sent`` as the new residual. The
sum of what was sent replaces the exact gradient sum before the optimizer runs.

The step applies it as its gradient reduction (``executor.step.TwoBit``); senders are the
devices (MXNet's local ``device`` store quantises per device; its ``dist`` store quantises
each worker's merged sum instead, so multi-process runs here keep one residual per device
rather than one per worker). The residuals are part of the step's state
(``StepState.residual``), in the holder of the optimizer's module.
"""

from __future__ import annotations

from ..base import MXNetError
from ..executor.step import quantize_2bit

__all__ = ["checked_params", "quantize_2bit", "threshold_of"]


def checked_params(store_type: str, compression_params: dict) -> dict:
    """``set_gradient_compression``'s arguments checked: ``{'type': '2bit', 'threshold'}``."""
    if "device" not in store_type and "dist" not in store_type:
        raise MXNetError(
            f"Gradient compression is not supported for this type of kvstore "
            f"({store_type!r}); create a 'device' or 'dist_*' store to use it"
        )
    params = dict(compression_params)
    if "type" not in params:
        raise ValueError("compression_params needs a 'type', e.g. {'type': '2bit'}")
    if params["type"] != "2bit":
        raise NotImplementedError(
            f"gradient compression type {params['type']!r} is not supported; mxmod "
            f"implements {{'type': '2bit', 'threshold': t}}"
        )
    unknown = set(params) - {"type", "threshold"}
    if unknown:
        raise ValueError(f"unknown gradient compression option(s) {sorted(unknown)}")
    threshold = float(params.get("threshold", 0.5))
    if threshold <= 0:
        raise ValueError(f"2bit compression threshold must be > 0, got {threshold}")
    return {"type": "2bit", "threshold": threshold}


def threshold_of(kvstore):
    """The 2-bit threshold set on ``kvstore``, or None (no store, no compression)."""
    comp = getattr(kvstore, "_compression", None)
    return None if not comp else comp["threshold"]
