"""Optimizer-state files of a Module, in mxmod's pickle-free format.

The file holds the fused optimizer state (keyed by parameter name) and the update
counts, encoded by ``mx.optimizer``'s safe codec: loading a file never runs code.
"""
from __future__ import annotations

import jax
import numpy as np

from ..base import MXNetError
from ..fileio import atomic_write


def save_states(module, fname: str) -> None:
    from ..optimizer import _codec
    opt = module._optimizer
    host = jax.tree_util.tree_map(np.asarray, module._opt_state)
    payload = {"fused_state": host, "num_update": opt.num_update,
               "index_update_count": dict(opt._index_update_count)}
    atomic_write(fname, _codec.dumps(payload))


def load_states(module, fname: str) -> None:
    from ..optimizer import _codec
    try:
        with open(fname, "rb") as f:
            blob = f.read()
    except OSError as e:
        raise MXNetError(f"cannot read optimizer states {fname!r}: {e}") from None
    try:
        payload, _ = _codec.loads(blob)
    except Exception as e:  # noqa: BLE001 - any decode failure is a bad file
        raise MXNetError(f"{fname!r} is not an mxmod optimizer-state file ({e}); MXNet-written "
                         ".states files are pickles and are not loaded for safety") from None
    if not isinstance(payload, dict) or "fused_state" not in payload:
        raise MXNetError(f"{fname!r} is not an mxmod Module optimizer-state file")
    current = module._opt_state
    loaded = payload["fused_state"]
    if jax.tree_util.tree_structure(loaded) != jax.tree_util.tree_structure(current):
        raise MXNetError(f"optimizer states in {fname!r} do not match this module's parameters "
                         "or optimizer")
    module._opt_state = jax.tree_util.tree_map(
        lambda new, old: jax.device_put(np.asarray(new, dtype=old.dtype), old.sharding),
        loaded, current)
    opt = module._optimizer
    opt.num_update = int(payload.get("num_update", opt.num_update))
    opt._index_update_count.update(payload.get("index_update_count", {}))
