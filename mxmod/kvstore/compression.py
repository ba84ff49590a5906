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

from ..executor.step import quantize_2bit

__all__ = ["quantize_2bit", "threshold_of"]


def threshold_of(kvstore):
    """The 2-bit threshold set on ``kvstore``, or None (no store, no compression)."""
    comp = getattr(kvstore, "_compression", None)
    return None if not comp else comp["threshold"]
