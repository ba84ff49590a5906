"""Optimizer-state files of a Module, in mxmod's pickle-free format.

The file holds the fused optimizer state (keyed by parameter name) and the update
counts, encoded by ``mx.optimizer``'s safe codec: loading a file never runs code.
MXNet's pickled ``.states`` files are read only with ``allow_pickle=True`` (restricted
unpickler, ``mxmod/optimizer/_mxnet_pickle.py``).
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


def load_states(module, fname: str, allow_pickle: bool = False) -> None:
    from ..optimizer import _codec, _mxnet_pickle
    try:
        with open(fname, "rb") as f:
            blob = f.read()
    except OSError as e:
        raise MXNetError(f"cannot read optimizer states {fname!r}: {e}") from None
    if _mxnet_pickle.is_pickle(blob):
        if not allow_pickle:
            raise MXNetError(f"{fname!r} is a Python pickle (optimizer states written by "
                             f"MXNet); {_mxnet_pickle.REFUSED_HELP}")
        _load_mxnet_pickle(module, fname, blob)
        return
    try:
        payload, _ = _codec.loads(blob)
    except Exception as e:  # noqa: BLE001 - any decode failure is a bad file
        raise MXNetError(f"{fname!r} is not an mxmod optimizer-state file ({e})") from None
    if not isinstance(payload, dict) or "fused_state" not in payload:
        raise MXNetError(f"{fname!r} is not an mxmod Module optimizer-state file")
    loaded = payload["fused_state"]
    if jax.tree_util.tree_structure(loaded) != jax.tree_util.tree_structure(module._opt_state):
        raise MXNetError(f"optimizer states in {fname!r} do not match this module's parameters "
                         "or optimizer")
    _install(module, loaded)
    opt = module._optimizer
    opt.num_update = int(payload.get("num_update", opt.num_update))
    opt._index_update_count.update(payload.get("index_update_count", {}))


def _install(module, loaded) -> None:
    module._opt_state = jax.tree_util.tree_map(
        lambda new, old: jax.device_put(np.asarray(new, dtype=old.dtype), old.sharding),
        loaded, module._opt_state)


def _load_mxnet_pickle(module, fname: str, blob: bytes) -> None:
    """MXNet's pickled states, keyed by index ``i*num_device+k`` or by name, mapped onto the
    fused state. MXNet does not save update counts, so (as in MXNet) they are not restored."""
    from ..optimizer import _mxnet_pickle
    source = f"optimizer states {fname!r}"
    states = _mxnet_pickle.restricted_loads(blob, source)
    shapes = {n: tuple(module._exec_group.params[n].shape) for n in module._opt_state}
    loaded = _mxnet_pickle.to_fused(states, module._param_names, module._opt_state, shapes,
                                    len(module._context), source)
    _install(module, loaded)
