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
from .amp import *  # noqa: F403  (MXNet re-exports the submodule's functions here)
from .init import is_initialized

__all__ = [*amp.__all__, "is_initialized", "amp", "lists"]
