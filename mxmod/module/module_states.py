"""A Module's optimizer-state file, in the one ``.states`` format shared with
``mx.optimizer.Updater`` (``opt_states.py`` holds the format itself)."""

from __future__ import annotations

import os
import warnings

from ..fileio import remove_stale_temps
from ..optimizer.state_files import held_counts
from . import opt_states as fmt
from .stages import require


def states_bytes_of(mod) -> bytes:
    """What ``mod.save_optimizer_states`` writes."""
    require(mod, "save_optimizer_states", "optimizer_initialized")
    mod._exec_group.flush()
    box = mod._exec_group.state.opt
    if not box.fused:
        return _box_updater(box).get_states()
    opt = box.optimizer
    counts = held_counts(opt, box.state).per_index
    layout = layout_of(mod, box)
    return fmt.states_bytes(box.state, counts, opt.num_update, layout, type(opt).__name__.lower())


def load_states_into(mod, fname, allow_pickle=False) -> None:
    """``mod.load_optimizer_states(fname, allow_pickle)``."""
    require(mod, "load_optimizer_states", "optimizer_initialized")
    remove_stale_temps(os.path.dirname(os.path.abspath(fname)))  # of writers killed mid-save
    group = mod._exec_group
    group.flush()
    box = group.state.opt
    layout = layout_of(mod, box)
    if box.fused:
        loaded = fmt.read_states(fname, box.optimizer, box.state, layout, allow_pickle)
        box.state = fmt.place_like(loaded.states, box.state)
        if loaded.counts is not None:
            box.optimizer.num_update = loaded.num_update
            box.optimizer._index_update_count.update(loaded.counts)
        return
    reference = _created_states(box.optimizer, group, layout)
    loaded = fmt.read_states(
        fname, box.optimizer, reference, layout, allow_pickle, allow_empty=True
    )
    _box_updater(box).adopt_states(
        fmt.updater_table(loaded.states, layout), fmt.updater_counts(loaded, layout)
    )


def layout_of(mod, box):
    """Which parameters, keys and devices ``mod``'s states file covers."""
    trained = set(mod._exec_group._diff_params)
    return fmt.Layout(
        tuple(mod._param_names),
        tuple(n for n in mod._param_names if n in trained),
        tuple(mod._context),
        bool(box.update_on_kvstore),
    )


def _box_updater(box):
    """The per-index Updater that holds a non-fused optimizer's states."""
    if box.update_on_kvstore:
        return box.kvstore._check_updater("save or load")
    return box.updater


def _created_states(optimizer, group, layout) -> dict:
    """``{name: state}`` the optimizer creates for each trained weight (device 0's copy)."""
    states = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in layout.trained:
            weight = group.param_arrays[group.param_names.index(name)][0]
            states[name] = optimizer.create_state_multi_precision(layout.keys(name)[0], weight)
    return states
