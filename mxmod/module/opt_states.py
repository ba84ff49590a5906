"""Optimizer-state files of a Module, in mxmod's pickle-free format.

The file holds the fused optimizer state (keyed by parameter name) and the update
counts, encoded by ``mx.optimizer``'s safe codec: loading a file never runs code.
MXNet's pickled ``.states`` files are read only with ``allow_pickle=True`` (restricted
unpickler, ``mxmod/optimizer/_mxnet_pickle.py``).
"""

from __future__ import annotations

import jax
import numpy as np

from ..base import MXNetError, MXNetFileError
from ..fileio import atomic_write


def states_bytes(opt, fused_state) -> bytes:
    """The ``.states`` file content: ``fused_state`` and ``opt``'s update counts."""
    from ..optimizer import _codec

    host = jax.tree_util.tree_map(np.asarray, fused_state)
    payload = {
        "fused_state": host,
        "num_update": opt.num_update,
        "index_update_count": dict(opt._index_update_count),
        "optimizer": type(opt).__name__.lower(),
    }
    return _codec.dumps(payload)


def save_states(fname: str, opt, fused_state) -> None:
    """Write ``fused_state`` and ``opt``'s update counts to ``fname`` (atomically)."""
    atomic_write(fname, states_bytes(opt, fused_state))


def load_states(
    fname: str,
    opt,
    fused_state,
    param_names: list,
    shapes: dict,
    num_device: int,
    allow_pickle: bool = False,
):
    """The fused state read from ``fname`` (placed like ``fused_state``); restores ``opt``'s
    update counts from an mxmod file."""
    from ..optimizer import _codec, _mxnet_pickle

    try:
        with open(fname, "rb") as f:
            blob = f.read()
    except OSError as e:
        raise MXNetError(f"cannot read optimizer states {fname!r}: {e}") from None
    if _mxnet_pickle.is_pickle(blob):
        if not allow_pickle:
            raise MXNetError(
                f"{fname!r} is a Python pickle (optimizer states written by "
                f"MXNet); {_mxnet_pickle.REFUSED_HELP}"
            )
        return _load_mxnet_pickle(fname, blob, fused_state, param_names, shapes, num_device)
    payload, _ = _codec.loads(blob, f"optimizer states {fname!r}")
    if not isinstance(payload, dict) or not (_PAYLOAD_KEYS[0] <= set(payload) <= _PAYLOAD_KEYS[1]):
        keys = sorted(map(str, payload))[:6] if isinstance(payload, dict) else ""
        raise _bad(
            fname,
            "states",
            f"holds {type(payload).__name__} {keys}, not a Module's "
            f"optimizer states (expected a dict with keys {sorted(_PAYLOAD_KEYS[1])}; "
            "a file of Updater.get_states loads with updater.set_states)",
        )
    loaded = payload["fused_state"]
    _check_layout(fname, payload, loaded, opt, fused_state)
    num_update, counts = payload["num_update"], payload["index_update_count"]
    if type(num_update) is not int or num_update < 0:
        raise _bad(fname, "num_update", f"num_update is {num_update!r} (expected an int >= 0)")
    if not isinstance(counts, dict) or any(type(c) is not int or c < 0 for c in counts.values()):
        raise _bad(
            fname,
            "index_update_count",
            "index_update_count is not a dict of update counts (expected {index: int >= 0})",
        )
    new = _install(loaded, fused_state, fname)
    opt.num_update = num_update
    opt._index_update_count.update(counts)
    return new


_PAYLOAD_KEYS = (
    {"fused_state", "num_update", "index_update_count"},  # required
    {"fused_state", "num_update", "index_update_count", "optimizer"},
)  # allowed


def _bad(fname: str, where: str, problem: str) -> MXNetFileError:
    return MXNetFileError(f"optimizer states in {fname!r}: {problem}", fname, where)


def _check_layout(fname, payload, loaded, opt, fused_state) -> None:
    """Name the first difference between a saved state and the bound one."""
    kind = payload.get("optimizer")
    mine = type(opt).__name__.lower()
    if kind is not None and not isinstance(kind, str):
        raise _bad(fname, "optimizer", f"optimizer is {kind!r} (expected an optimizer name)")
    if kind is not None and kind != mine:
        raise _bad(
            fname,
            "optimizer",
            f"saved by optimizer {kind!r} but this module uses "
            f"{mine!r}; init_optimizer(optimizer={kind!r}) first",
        )
    if not isinstance(loaded, dict):
        raise _bad(
            fname, "fused_state", "'fused_state' is not a dict name -> state; the file is damaged"
        )
    missing = [n for n in fused_state if n not in loaded]
    extra = [n for n in loaded if n not in fused_state]
    if missing or extra:
        raise _bad(
            fname,
            "fused_state",
            f"they do not match this module's trained "
            f"parameters: missing {missing[:5]}, unexpected {extra[:5]}",
        )
    for name, mine_leaf in fused_state.items():
        theirs, where = loaded[name], f"fused_state[{name!r}]"
        if jax.tree_util.tree_structure(theirs) != jax.tree_util.tree_structure(mine_leaf):
            raise _bad(
                fname,
                where,
                f"the state of {name!r} has another layout than {mine}'s "
                "(another optimizer or multi_precision)",
            )
        for new, old in zip(
            jax.tree_util.tree_leaves(theirs), jax.tree_util.tree_leaves(mine_leaf)
        ):
            if not hasattr(new, "shape") or not hasattr(new, "dtype"):
                raise _bad(
                    fname,
                    where,
                    f"the state of {name!r} holds a "
                    f"{type(new).__name__} where {mine} keeps an array",
                )
            new = np.asarray(new)
            if new.shape != tuple(old.shape):
                raise _bad(
                    fname,
                    where,
                    f"the state of {name!r} has shape {new.shape} but the "
                    f"bound parameter needs {tuple(old.shape)}",
                )
            if new.dtype != np.dtype(old.dtype):
                raise _bad(
                    fname,
                    where,
                    f"the state of {name!r} is {new.dtype} but the bound "
                    f"parameter's is {np.dtype(old.dtype)}",
                )
            if new.dtype.kind == "f" and not np.isfinite(new).all():
                raise _bad(
                    fname,
                    where,
                    f"the state of {name!r} holds non-finite values; the file is damaged",
                )


def _install(loaded, fused_state, fname):
    def put(new, old):
        new = np.asarray(new)
        if new.shape != tuple(old.shape):
            raise _bad(
                fname,
                "fused_state",
                f"an array of shape {new.shape} where the bound "
                f"parameters need {tuple(old.shape)}; the file is for another network "
                "or optimizer",
            )
        return jax.device_put(new.astype(old.dtype), old.sharding)

    return jax.tree_util.tree_map(put, loaded, fused_state)


def _load_mxnet_pickle(fname, blob, fused_state, param_names, shapes, num_device):
    """MXNet's pickled states, keyed by index ``i*num_device+k`` or by name, mapped onto the
    fused state. MXNet does not save update counts, so (as in MXNet) they are not restored."""
    from ..optimizer import _mxnet_pickle

    source = f"optimizer states {fname!r}"
    states = _mxnet_pickle.restricted_loads(blob, source)
    loaded = _mxnet_pickle.to_fused(states, param_names, fused_state, shapes, num_device, source)
    return _install(loaded, fused_state, fname)
