"""A Module's optimizer-state files: the format of ``Updater.get_states`` (issue 9).

A Module writes what an ``mx.optimizer.Updater`` holding its states would write, as MXNet
1.9.1 does: ``{index: state}`` keyed by MXNet's index ``i * num_device + k`` (parameter
position ``i``, device ``k``), or by parameter name when the kvstore updates
(``update_on_kvstore``), plus the update counts, in the safe codec (``optimizer.state_files``):
loading never runs code. So ``Updater.set_states`` reads a Module's file and a Module
reads an Updater's. Loading also accepts files of mxmod's first Module format
(``{"fused_state": {name: state}, "num_update", "index_update_count", "optimizer"}``) and,
only with ``allow_pickle=True``, MXNet's pickles (restricted unpickler). Every state is
checked against the state the module holds or creates before anything is installed.

The functions take what they need as arguments (:class:`Layout`, states, counts); the
Module gathers those and installs the result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import numpy as np

from ..base import MXNetError, MXNetFileError
from ..ndarray import NDArray
from ..optimizer import state_files
from ..optimizer._state_objects import conform


@dataclass(frozen=True)
class Layout:
    """How a Module keys its optimizer states.

    Args:
        param_names: the module's parameters in MXNet's order (index ``i`` is a position).
        trained: the parameters the optimizer updates (those with gradients).
        contexts: the module's devices (``num_device = len(contexts)``).
        by_name: True with ``update_on_kvstore`` (the kvstore's updater keys by name).
    """

    param_names: tuple
    trained: tuple
    contexts: tuple
    by_name: bool

    @property
    def num_device(self) -> int:
        return len(self.contexts)

    def keys(self, name: str) -> list:
        """The updater keys of ``name``: itself, or ``i * num_device + k`` per device."""
        if self.by_name:
            return [name]
        i, d = self.param_names.index(name), self.num_device
        return [i * d + k for k in range(d)]

    def key_context(self, key: Any) -> Any:
        return self.contexts[0] if self.by_name else self.contexts[key % self.num_device]


class Loaded(NamedTuple):
    """Checked states of a file, by parameter name, and the counts it restores (or None)."""

    states: dict
    counts: dict | None  # {name: count}
    num_update: int | None


MAX_DEVICES = 4096  # device counts tried when mapping a file's indices onto parameters


# ------------------------------------------------------------ writing
def states_bytes(
    states: dict, counts: dict, num_update: int, layout: Layout, kind: str | None = None
) -> bytes:
    """What an Updater holding ``states`` ``{name: state}`` would write.

    Args:
        states: each trained parameter's state (jax/numpy arrays, tuples of them or None).
        counts: ``{name: update count}`` (names without a count are left out).
        num_update: the optimizer's ``num_update``.
        layout: how the module keys its states.
        kind: the optimizer's lower-case class name (``type(opt).__name__.lower()``).
    """
    table, per_index = {}, {}
    for name in layout.trained:
        host = jax.tree_util.tree_map(np.asarray, states[name])
        for key in layout.keys(name):
            ctx = layout.key_context(key)
            table[key] = jax.tree_util.tree_map(
                lambda a, c=ctx: state_files.HostNDArray(a, c.device_type, c.device_id), host
            )
            if name in counts:
                per_index[key] = int(counts[name])
    return state_files.dumps(table, None, state_files.Counts(int(num_update), per_index), kind)


# ------------------------------------------------------------ reading
def read_states(
    fname: str,
    optimizer: Any,
    reference: dict,
    layout: Layout,
    allow_pickle: bool = False,
    allow_empty: bool = False,
) -> Loaded:
    """The states of ``fname`` mapped onto ``layout``'s trained parameters and checked.

    Args:
        fname: the file.
        optimizer: the module's optimizer (a dumped or recorded optimizer must be its kind).
        reference: ``{name: state}`` the module holds or would create: every loaded state
            must have its layout, shapes and dtypes.
        layout: how the module keys its states.
        allow_pickle: also read MXNet's pickled states (restricted unpickler).
        allow_empty: accept a file without states (an Updater's before its first update).

    Returns:
        :class:`Loaded` (numpy leaves; counts None for an MXNet pickle, which has none).

    Raises:
        MXNetError: the file is missing or a pickle without ``allow_pickle``.
        MXNetFileError: the file is damaged or does not fit the module, naming the
            parameter or index and the fix.
    """
    try:
        with open(fname, "rb") as f:
            blob = f.read()
    except OSError as e:
        raise MXNetError(f"cannot read optimizer states {fname!r}: {e}") from None
    source = f"optimizer states {fname!r}"
    if state_files.is_pickle(blob):
        if not allow_pickle:
            raise MXNetError(
                f"{fname!r} is a Python pickle (optimizer states written by "
                f"MXNet); {state_files.REFUSED_HELP}"
            )
        states = state_files.restricted_loads(blob, source)
        return _map(fname, states, None, reference, layout, allow_empty)
    got = state_files.loads_file(blob, source)
    _check_optimizer_kind(fname, got.optimizer, optimizer)
    _check_optimizer_kind(fname, got.kind, optimizer)
    if state_files.is_v1_module_payload(got):
        return _read_v1(fname, got.states, optimizer, reference, layout)
    state_files.check_states_dict(got.states, got.counts, source)
    return _map(fname, got.states, got.counts, reference, layout, allow_empty)


def _bad(fname: str, where: str, problem: str) -> MXNetFileError:
    return MXNetFileError(f"optimizer states in {fname!r}: {problem}", fname, where)


def _kind(optimizer: Any) -> str:
    return type(optimizer).__name__.lower()


def _check_optimizer_kind(fname: str, saved: Any, optimizer: Any) -> None:
    kind = saved if saved is None or isinstance(saved, str) else _kind(saved)
    if kind is not None and kind != _kind(optimizer):
        raise _bad(
            fname,
            "optimizer",
            f"saved by optimizer {kind!r} but this module uses "
            f"{_kind(optimizer)!r}; init_optimizer(optimizer={kind!r}) first",
        )


def _read_v1(fname, payload, optimizer, reference, layout) -> Loaded:
    kind, states = payload.get("optimizer"), payload["fused_state"]
    num_update, counts = payload["num_update"], payload["index_update_count"]
    if kind is not None and not isinstance(kind, str):
        raise _bad(fname, "optimizer", f"optimizer is {kind!r} (expected an optimizer name)")
    _check_optimizer_kind(fname, kind, optimizer)
    if not isinstance(states, dict) or not all(isinstance(k, str) for k in states):
        raise _bad(
            fname, "fused_state", "'fused_state' is not a dict name -> state; the file is damaged"
        )
    if type(num_update) is not int or num_update < 0:
        raise _bad(fname, "num_update", f"num_update is {num_update!r} (expected an int >= 0)")
    if not isinstance(counts, dict) or any(type(c) is not int or c < 0 for c in counts.values()):
        raise _bad(
            fname,
            "index_update_count",
            "index_update_count is not a dict of update counts (expected {index: int >= 0})",
        )
    counts = {k: c for k, c in counts.items() if k in states}
    return _map(fname, states, state_files.Counts(num_update, counts), reference, layout)


def _host(state: Any) -> Any:
    """A state's leaves as numpy arrays (NDArray, jax and numpy leaves alike)."""

    def leaf(a):
        data = getattr(a, "_data", a) if hasattr(a, "_set_data") else a
        return np.asarray(data) if hasattr(data, "shape") and hasattr(data, "dtype") else data

    return jax.tree_util.tree_map(leaf, state)


def _map(fname, states, counts, reference, layout, allow_empty=False) -> Loaded:
    """``states`` keyed by index or name -> ``{name: state}``, checked against ``reference``."""
    keys = list(states)
    if not keys and allow_empty:
        return Loaded({}, {} if counts else None, counts.num_update if counts else None)
    if not keys:
        raise _bad(
            fname,
            "states",
            "the file holds no states (saved before any update by an optimizer that "
            "creates its states on first use?); train without loading it",
        )
    if all(isinstance(k, str) for k in keys):
        owner = {k: k for k in keys}
    elif all(type(k) is int and k >= 0 for k in keys):
        d = _num_device(fname, states, reference, layout)
        owner = {k: layout.param_names[k // d] for k in keys}
    else:
        raise _bad(
            fname,
            "states",
            f"keys mix types ({sorted(map(repr, keys))[:6]}); expected all parameter "
            "indices (i * num_device + device) or all parameter names",
        )
    by_name: dict = {}
    for key in keys if isinstance(keys[0], str) else sorted(keys):
        by_name.setdefault(owner[key], (key, states[key]))  # device 0's copy
    missing = [n for n in layout.trained if n not in by_name]
    extra = [n for n in by_name if n not in reference]
    if missing or extra:
        raise _bad(
            fname,
            "states",
            f"they do not match this module's trained parameters: missing "
            f"{missing[:5]}, unexpected {extra[:5]}; load them into a Module with the same "
            "symbol and fixed_param_names",
        )
    out = {}
    for name in reference:  # the module's order (the first difference is reported)
        key, state = by_name[name]
        state = conform(state, reference[name])  # namedtuples, user state classes
        out[name] = _checked(fname, name, key, _host(state), reference[name])
    if counts is None:
        return Loaded(out, None, None)
    named = {}
    for key, c in counts.per_index.items():
        name = owner.get(key)
        if name is not None:
            named[name] = max(named.get(name, 0), c)
    return Loaded(out, named, counts.num_update)


def _leaf_shapes(state: Any) -> list:
    return [tuple(np.shape(x)) for x in jax.tree_util.tree_leaves(_host(state))]


def _num_device(fname, states, reference, layout) -> int:
    """The device count ``D`` for which keys ``i*D+k`` cover exactly the trained parameters
    with states shaped like the module's (the module's own count first). Failing that, the
    module's own count if its keys name parameters (the differences are then reported per
    parameter)."""
    names, trained = layout.param_names, set(layout.trained)

    def covers(d: int) -> bool:
        owners = {key // d for key in states}
        return (
            all(i < len(names) and names[i] in trained for i in owners)
            and {names[i] for i in owners} == trained
        )

    def shaped(d: int) -> bool:
        return all(
            _leaf_shapes(state) == _leaf_shapes(reference[names[key // d]])
            for key, state in states.items()
        )

    # the largest key must belong to the last trained position p: p*D <= key < (p+1)*D
    top, last = max(states), max((names.index(n) for n in trained), default=0)
    lo, hi = top // (last + 1) + 1, min(top // last if last else top + 1, MAX_DEVICES)
    candidates = dict.fromkeys([layout.num_device, *range(lo, hi + 1)])
    covering = [d for d in candidates if covers(d)]
    for d in covering:
        if shaped(d):
            return d
    if layout.num_device in covering or all(k // layout.num_device < len(names) for k in states):
        return layout.num_device  # report the differences per parameter
    raise _bad(
        fname,
        "states",
        f"the states are keyed by indices {sorted(states)[:12]}, which do not map onto this "
        f"module's trained parameters {list(layout.trained)[:6]} as index * num_device + "
        "device for any num_device; load them into a Module with the same symbol and "
        "fixed_param_names",
    )


def _checked(fname: str, name: str, key: Any, theirs: Any, mine: Any) -> Any:
    """``theirs`` if it has ``mine``'s layout, shapes and dtypes and finite values."""
    where = f"state of {name!r} (key {key!r})"

    def bad(problem: str) -> MXNetFileError:
        return _bad(fname, where, f"{problem} (the file's key {key!r})")

    mine = _host(mine)
    got_tree, want_tree = (jax.tree_util.tree_structure(t) for t in (theirs, mine))
    if got_tree != want_tree:
        raise bad(
            f"the state of {name!r} is {got_tree} but this optimizer keeps {want_tree}; "
            "use the optimizer (and momentum / multi_precision settings) the states were "
            "saved with",
        )
    for new, old in zip(jax.tree_util.tree_leaves(theirs), jax.tree_util.tree_leaves(mine)):
        if isinstance(old, (int, float)) and isinstance(new, (int, float)):
            continue  # a number a user state class keeps beside its arrays
        if not isinstance(new, np.ndarray):
            raise bad(
                f"the state of {name!r} holds a {type(new).__name__} where the optimizer "
                "keeps an array",
            )
        if new.shape != old.shape:
            raise bad(
                f"the state of {name!r} has shape {new.shape} but the bound parameter "
                f"needs {old.shape}",
            )
        if new.dtype != old.dtype:
            raise bad(
                f"the state of {name!r} is {new.dtype} but the bound parameter's is {old.dtype}",
            )
        if new.dtype.kind == "f" and not np.isfinite(new).all():
            raise bad(f"the state of {name!r} holds non-finite values; the file is damaged")
    return theirs


# ------------------------------------------------------------ installing
def place_like(states: dict, like: dict) -> dict:
    """``states`` (numpy leaves) as jax arrays with ``like``'s dtypes and shardings."""

    def put(new, old):
        if not hasattr(old, "dtype"):  # a number a user state class keeps
            return new
        return jax.device_put(np.asarray(new).astype(old.dtype), old.sharding)

    return {name: jax.tree_util.tree_map(put, states[name], like[name]) for name in like}


def updater_table(states: dict, layout: Layout) -> dict:
    """``{key: state}`` of NDArrays for an Updater, one entry per key of each parameter."""
    table = {}
    for name, state in states.items():
        for key in layout.keys(name):
            ctx = layout.key_context(key)
            table[key] = jax.tree_util.tree_map(
                lambda a, c=ctx: NDArray(a, c) if hasattr(a, "shape") else a, state
            )
    return table


def updater_counts(loaded: Loaded, layout: Layout) -> Any:
    """The loaded counts keyed like ``updater_table`` (None when the file has none)."""
    if loaded.counts is None:
        return None
    per_key = {k: c for n, c in loaded.counts.items() for k in layout.keys(n)}
    return state_files.Counts(loaded.num_update, per_key)
