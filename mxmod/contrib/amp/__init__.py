"""``mx.contrib.amp``: MXNet 1.9.1's automatic mixed precision for symbols.

* ``convert_symbol`` / ``convert_model`` insert ``amp_cast``/``amp_multicast`` nodes by
  MXNet's operator lists (``list_lp16_ops``...), giving MXNet's graph node for node.
* ``init(target_dtype)`` wraps the ``mx.sym`` constructors so networks built afterwards get
  the same casts at construction (MXNet's ``amp.init``).
* ``LossScaler`` is MXNet's dynamic loss scaler; ``insert_loss_scale`` +
  ``init_trainer(module)`` run it inside ``Module.fit``'s compiled steps (mxmod only; see
  ``loss_scaler.py``).

``init_trainer``/``scale_loss``/``unscale`` belong to Gluon's Trainer in MXNet, which mxmod
does not have: for an Optimizer they raise TypeError as MXNet's do.
"""

from __future__ import annotations

from . import amp, lists
from .amp import (
    LossScaler,
    convert_bucketing_module,
    convert_hybrid_block,
    convert_model,
    convert_symbol,
    init,
    init_trainer,
    insert_loss_scale,
    is_initialized,
    list_conditional_fp32_ops,
    list_fp32_ops,
    list_loss_output_functions,
    list_lp16_fp32_ops,
    list_lp16_ops,
    list_lp16_use_fp32_params,
    list_widest_type_cast,
    scale_loss,
    unscale,
)

__all__ = [
    "init",
    "init_trainer",
    "scale_loss",
    "unscale",
    "convert_model",
    "convert_symbol",
    "convert_hybrid_block",
    "convert_bucketing_module",
    "list_lp16_ops",
    "list_fp32_ops",
    "list_lp16_fp32_ops",
    "list_conditional_fp32_ops",
    "list_widest_type_cast",
    "list_loss_output_functions",
    "list_lp16_use_fp32_params",
    "LossScaler",
    "insert_loss_scale",
    "is_initialized",
    "amp",
    "lists",
]
