"""``mx.optimizer.Updater`` / ``get_updater``: the per-index state table the KVStore and
Module call as ``updater(index, grad, weight)`` (MXNet 1.9.1 semantics).

States are saved with :meth:`Updater.get_states` in a pickle-free format (``_codec``,
described in ``README.md``): ``{index: state}``, the update counts and optionally the
optimizer. ``Module.save_optimizer_states`` writes the same format, so either side reads the
other's files. MXNet's pickled ``.states`` files are refused unless the caller opts in with
``set_states(..., allow_pickle=True)`` (restricted unpickler, ``_mxnet_pickle``).
"""

from __future__ import annotations

import warnings
from typing import Any

import jax
import numpy as np

from ..base import MXNetFileError
from ..context import cpu
from ..ndarray import NDArray
from . import _codec, _mxnet_pickle
from ._state_objects import conform
from .rules import MP_DTYPES

__all__ = ["Updater", "get_updater"]


class Updater:
    """Apply an optimizer to indexed weights, creating each index's state on first use.

    Args:
        optimizer: an :class:`~mxmod.optimizer.Optimizer`.
    """

    def __init__(self, optimizer: Any):
        self.optimizer = optimizer
        self.states: dict = {}
        self.states_synced: dict = {}
        self.aggregate_updates = optimizer.aggregate_num > 0
        self._unchecked: set = set()  # loaded states not yet compared with their weight
        self._pending_counts: dict = {}  # loaded update counts, set on an index's first use

    def __call__(self, index: Any, grad: Any, weight: Any) -> None:
        """Update ``weight`` from ``grad`` (note MXNet's argument order); lists allowed.

        ``bytes`` indices (what a string-keyed KVStore passes) become ``str``.
        """
        if not isinstance(index, (list, tuple)):
            indices, grads, weights = [index], [grad], [weight]
        else:
            indices, grads, weights = list(index), list(grad), list(weight)
        if weights:
            self.optimizer._set_current_context(weights[0].context.device_id)
        for i, idx in enumerate(indices):
            if isinstance(idx, bytes):
                indices[i] = idx = idx.decode("utf-8")
            if idx not in self.states:
                self.states[idx] = self.optimizer.create_state_multi_precision(idx, weights[i])
                self.states_synced[idx] = True
            elif not self.states_synced.get(idx, False):
                if idx in getattr(self, "_unchecked", ()):  # loaded: first meets its weight
                    self._check_loaded(idx, weights[i])
                self.states[idx] = self.sync_state_context(self.states[idx], weights[i].context)
                self.states_synced[idx] = True
                if idx in getattr(self, "_pending_counts", ()):  # this device's count dict
                    self.optimizer._index_update_count[idx] = self._pending_counts.pop(idx)
        opt = self.optimizer
        if self.aggregate_updates:
            by_dtype: dict = {}  # MXNet groups by dtype; mxmod also by device (one dispatch)
            for i, w, g in zip(indices, weights, grads):
                by_dtype.setdefault((w.dtype, w.context), []).append((i, w, g))
            step = opt.aggregate_num
            for group in by_dtype.values():
                idxs, ws, gs = zip(*group)
                for j in range(0, len(idxs), step):
                    chunk = list(idxs[j : j + step])
                    opt.update_multi_precision(
                        chunk, list(ws[j : j + step]), list(gs[j : j + step]),
                        [self.states[k] for k in chunk],
                    )  # fmt: skip
        else:
            for i, w, g in zip(indices, weights, grads):
                opt.update_multi_precision(i, w, g, self.states[i])

    def sync_state_context(self, state: Any, context: Any) -> Any:
        """Move a state (NDArray, or tuples/lists of them) to ``context``."""
        if hasattr(state, "as_in_context"):
            return state.as_in_context(context)
        if isinstance(state, (tuple, list)):
            synced = [self.sync_state_context(s, context) for s in state]
            return tuple(synced) if isinstance(state, tuple) else synced
        return state

    def set_states(
        self, states: bytes, allow_pickle: bool = False, *, source: str = "optimizer states"
    ) -> None:
        """Load states from :meth:`get_states` bytes (with the optimizer if it was dumped).

        Also reads ``Module.save_optimizer_states`` files (the same format). mxmod restores
        the update counts the bytes hold (``num_update`` now, each index's count on its
        first update, in the count table of that update's device); MXNet's pickles hold
        none. mxmod checks at load what MXNet leaves to the first update: a loaded state
        must have the layout, shapes and dtypes of the state this updater already holds
        for its index, or else of a state the optimizer creates (for a weight shaped like
        one of its arrays); on its first update it is compared with the state the
        optimizer creates for the actual weight.

        Args:
            states: bytes from :meth:`get_states`, or MXNet's pickled states.
            allow_pickle: mxmod addition. MXNet writes its states as a Python pickle, and
                unpickling untrusted data can run arbitrary code, so pickles are refused
                unless this is True. Even then a restricted unpickler accepts only numpy
                arrays, MXNet NDArrays (loaded on cpu) and plain containers; an optimizer
                object inside the pickle (``dump_optimizer=True``) is refused.
            source: mxmod addition: how errors name the bytes (e.g. the file they came from).

        Raises:
            NotImplementedError: for MXNet pickles without ``allow_pickle=True``.
            MXNetFileError: malformed bytes, a pickle holding anything but states (with
                ``allow_pickle``), or states that do not fit the ones held, naming the field
                or index.
        """
        opt = counts = None
        if allow_pickle and _mxnet_pickle.is_pickle(states):
            source = f"pickled MXNet {source}"
            plain = _mxnet_pickle.restricted_loads(states, source)
            loaded = {
                k: jax.tree_util.tree_map(lambda a: NDArray(a, cpu()), v) for k, v in plain.items()
            }
        else:
            got = _codec.loads_file(states, source)
            if _codec.is_v1_module_payload(got):
                raise MXNetFileError(
                    f"{source}: a Module's states in mxmod's first format (keyed by "
                    "parameter name, no indices); load them with "
                    "Module.load_optimizer_states, then save_optimizer_states writes this "
                    "format",
                    source,
                    "states",
                    "{index: state}",
                )
            loaded, opt, counts = got.states, got.optimizer, got.counts
            check_states_dict(loaded, counts, source)
        for idx in loaded.keys() & self.states.keys():
            loaded[idx] = conform(loaded[idx], self.states[idx])
            _check_state(source, idx, loaded[idx], self.states[idx], "the state held")
        for idx in loaded.keys() - self.states.keys():
            check_own_layout(self.optimizer if opt is None else opt, idx, loaded[idx], source)
        if opt is not None:
            self.optimizer = opt
            self.aggregate_updates = opt.aggregate_num > 0
        self.adopt_states(loaded, counts)
        self._source = source

    def adopt_states(self, states: dict, counts: Any = None) -> None:
        """Hold ``states`` ``{index: state}`` as if loaded from a file (mxmod addition).

        Each state moves to its weight's device, and is checked against the state the
        optimizer creates for that weight, on the index's first update. ``counts`` (an
        ``_codec.Counts``, optional) sets the optimizer's ``num_update`` now and each
        index's update count on its first update.
        """
        self.states = dict(states)
        self.states_synced = dict.fromkeys(self.states, False)
        self._unchecked = set(self.states)
        self._pending_counts = dict(counts.per_index) if counts is not None else {}
        if counts is not None:
            self.optimizer.num_update = counts.num_update

    def _check_loaded(self, idx: Any, weight: Any) -> None:
        """Compare a loaded state with the one the optimizer creates for ``weight``."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fresh = self.optimizer.create_state_multi_precision(idx, weight)
        self.states[idx] = conform(self.states[idx], fresh)
        _check_state(
            getattr(self, "_source", "optimizer states"),
            idx,
            self.states[idx],
            fresh,
            f"the state {type(self.optimizer).__name__} creates for a weight of "
            f"shape {tuple(weight.shape)} {np.dtype(weight.dtype)}",
        )
        self._unchecked.discard(idx)

    def get_states(self, dump_optimizer: bool = False) -> bytes:
        """Serialise the states (and, if ``dump_optimizer``, the optimizer) to bytes.

        Raises:
            TypeError: the optimizer holds an attribute the safe format cannot store.
        """
        opt = self.optimizer
        counts = held_counts(opt, self.states)
        pending = getattr(self, "_pending_counts", {})  # loaded, not yet used
        counts.per_index.update({k: c for k, c in pending.items() if k in self.states})
        kind = type(opt).__name__.lower()
        return _codec.dumps(self.states, opt if dump_optimizer else None, counts, kind)

    # ------------------------------------------------------------ fused-state bridge
    def load_fused(self, fused_state: dict, keys: dict | None = None) -> None:
        """Adopt a ``fused_init``/``fused_update`` state (mxmod addition).

        Args:
            fused_state: ``{name: leaf_state}`` of jax arrays.
            keys: optional ``{name: updater_key}`` (e.g. the Module's integer indices).
        """
        for name, leaf in fused_state.items():
            key = keys.get(name, name) if keys else name
            self.states[key] = jax.tree_util.tree_map(NDArray, leaf)
            self.states_synced[key] = False

    def export_fused(self, names: Any, keys: dict | None = None) -> dict:
        """The states of ``names`` as a fused state ``{name: leaf_state}`` (mxmod addition)."""
        out = {}
        for name in names:
            key = keys.get(name, name) if keys else name
            out[name] = jax.tree_util.tree_map(lambda a: a._data, self.states[key])
        return out


def _leaf_desc(x: Any) -> str:
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return f"{tuple(x.shape)} {np.dtype(x.dtype)}"
    return type(x).__name__


def _check_state(source: str, idx: Any, got: Any, want: Any, what: str) -> None:
    """Raise MXNetFileError naming ``idx`` unless ``got`` has ``want``'s layout, shapes and
    dtypes."""
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    problem = None
    if got_tree != want_tree:
        problem = f"has the layout {got_tree} but {what} has {want_tree}"
    else:
        for a, b in zip(got_leaves, want_leaves):
            if _leaf_desc(a) != _leaf_desc(b):
                problem = f"holds {_leaf_desc(a)} where {what} holds {_leaf_desc(b)}"
                break
    if problem is not None:
        where = f"state of index {idx!r}"
        raise MXNetFileError(
            f"{source}: {where} {problem}; the states are damaged or were "
            "saved for another network or optimizer",
            source,
            where,
            what,
        )


def _probe_weights(state: Any, optimizer: Any) -> list:
    """(shape, dtype) of the weights ``state`` may belong to: each leaf's shape with each
    floating leaf dtype (float32 without one), and the low-precision dtypes under
    ``multi_precision`` (whose states hold float32 master copies)."""
    leaves = [x for x in jax.tree_util.tree_leaves(state) if hasattr(x, "shape")]
    shapes = list(dict.fromkeys(tuple(x.shape) for x in leaves)) or [(1,)]
    dtypes = [np.dtype(x.dtype) for x in leaves if np.dtype(x.dtype).kind == "f"]
    dtypes = dtypes or [np.dtype(np.float32)]
    if getattr(optimizer, "multi_precision", False):
        dtypes += list(MP_DTYPES)
    return [(s, d) for s in shapes for d in dict.fromkeys(dtypes)]


def check_own_layout(optimizer: Any, idx: Any, state: Any, source: str) -> None:
    """Refuse a loaded ``state`` that ``optimizer`` could not have created for any weight
    (mxmod: MXNet finds out at the first update): its layout, the shapes of its arrays
    relative to each other and their dtypes are compared with the state the optimizer
    creates for a weight shaped like one of its arrays.

    Raises:
        MXNetFileError: naming ``source``, the index and the state the optimizer keeps.
    """
    first = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for shape, dtype in _probe_weights(state, optimizer):
            weight = NDArray(np.zeros(shape, dtype), cpu())
            fresh = optimizer.create_state_multi_precision(idx, weight)
            what = (
                f"the state {type(optimizer).__name__} creates for a weight of shape "
                f"{shape} {dtype}"
            )
            try:
                _check_state(source, idx, state, fresh, what)
                return
            except MXNetFileError as e:
                first = first or e
    raise first


def held_counts(optimizer: Any, keys: Any) -> _codec.Counts:
    """``optimizer``'s update counts of ``keys`` (over all its devices' count tables)."""
    tables = getattr(optimizer, "_all_index_update_counts", None)
    if tables is None:
        tables = {0: getattr(optimizer, "_index_update_count", {})}
    per_index: dict = {}
    for table in tables.values():
        for key, count in table.items():
            if key in keys:
                per_index[key] = max(per_index.get(key, 0), int(count))
    return _codec.Counts(int(optimizer.num_update), per_index)


def check_states_dict(states: Any, counts: Any, source: str) -> None:
    """Refuse decoded states that are not ``{index: state}`` or counts of unknown indices."""
    if not isinstance(states, dict):
        raise MXNetFileError(
            f"{source}: states: a {type(states).__name__} (expected a dict index -> "
            f"state, as get_states writes)",
            source,
            "states",
            "a dict",
        )
    stray = [k for k in (counts.per_index if counts is not None else ()) if k not in states]
    if stray:
        raise MXNetFileError(
            f"{source}: counts.index_update_count: counts for indices {stray[:5]} that have "
            f"no state; the file is damaged",
            source,
            "counts.index_update_count",
            "indices of the states",
        )


def get_updater(optimizer: Any) -> Updater:
    """Return an :class:`Updater` for ``optimizer`` (MXNet ``mx.optimizer.get_updater``)."""
    return Updater(optimizer)
