"""MXNet's imperative optimizer API on NDArrays, derived from the pure rule: the functions
behind ``Optimizer.create_state`` and ``update`` (scalars, or the lists the ``Updater``
passes when ``aggregate_num > 0``). Counting and ``_get_lrs``/``_get_wds`` happen on the
host exactly as in MXNet; then one jitted dispatch updates the whole chunk: rates, counts
and extras are traced arguments, so a scheduler never recompiles. Built-in optimizers share
one compile cache across instances: ``static_key`` names everything their rule reads, so a
second ``SGD(momentum=0.9)`` reuses the first one's program.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import jax
import numpy as np

from ..base import as_list
from ..ndarray import NDArray
from ._rates import host_rates, overrides_rates
from ._settings import static_key
from ._sparse_update import any_sparse, is_sparse, update_one, wrap_sparse_state
from .rules import LeafInfo, leaf_step, use_mp, warn_fp16


def create_state(opt: Any, weight: Any) -> Any:
    """``opt._init_leaf`` of one weight NDArray, as NDArrays on the weight's device (a
    sparse weight's states in the storage types MXNet gives them)."""
    if is_sparse(weight):
        return wrap_sparse_state(opt, opt._init_leaf(weight._densify()), weight)
    return _wrap_state(opt._init_leaf(weight._data), weight)


def create_state_multi_precision(opt: Any, index: Any, weight: Any) -> Any:
    """``opt.create_state`` with MXNet's float32 master copy (``_mp_master_first`` layout)."""
    if use_mp(opt, weight.dtype):
        w32 = weight.astype(np.float32)
        inner = opt.create_state(index, w32)
        return (w32, inner) if opt._mp_master_first else (inner, w32)
    warn_fp16(opt, weight.dtype)
    return opt.create_state(index, weight)


def update_multi_precision(opt: Any, index, weight, grad, state) -> None:
    """The rule through the master copy, or MXNet's wrapper around a user's ``update``."""
    first = weight[0] if isinstance(index, (list, tuple)) else weight
    if opt._has_rule():
        opt._update_impl(index, weight, grad, state, use_mp(opt, first.dtype))
        return
    if isinstance(index, (list, tuple)) or not use_mp(opt, weight.dtype):
        opt.update(index, weight, grad, state)
        return
    w32, inner = state if opt._mp_master_first else (state[1], state[0])
    opt.update(index, w32, grad.astype(np.float32), inner)
    weight._set_data(w32._data.astype(weight._data.dtype))


def update_chunk(opt: Any, index, weight, grad, state, multi_precision: bool) -> None:
    """Update ``weight`` (and ``state``) in place, one index or a list: count on the host,
    then one jitted dispatch for the whole chunk."""
    indices, weights, grads = as_list(index), as_list(weight), as_list(grad)
    states = list(state) if isinstance(index, (list, tuple)) else [state]
    for w, g in zip(weights, grads):
        if not (hasattr(w, "_set_data") and hasattr(g, "_set_data")):
            raise TypeError(
                f"{type(opt).__name__}.update needs NDArray weight and grad, got "
                f"{type(w).__name__} and {type(g).__name__}"
            )
    if opt._lr_before_count:  # MXNet's LBSGD reads the rate, then counts
        lrs = np.asarray(opt._get_lrs(indices), np.float32)
    if opt._counts_updates:
        opt._update_count(indices)
    if not opt._lr_before_count:
        lrs = np.asarray(opt._get_lrs(indices), np.float32)
    wds = np.asarray(opt._get_wds(indices), np.float32)
    if overrides_rates(opt):  # a subclass's own _get_lr/_get_wd (after counting, as MXNet)
        lrs, wds = host_rates(opt, indices)
    counts = opt._index_update_count
    ts = np.asarray([counts.get(i, opt.num_update) for i in indices], np.int32)
    extra = opt._host_extras(indices, ts)
    mps = tuple(bool(multi_precision) and use_mp(opt, w.dtype) for w in weights)
    names = tuple(_index_name(opt, i) for i in indices) if opt._uses_names else None
    if any_sparse(weights, grads, states):  # MXNet's sparse kernels or storage fallback
        key = static_key(opt)
        for i, (w, g, s) in enumerate(zip(weights, grads, states)):
            name = names[i] if names else None
            leaf = LeafInfo(lrs[i], wds[i], ts[i], name, i, extra, first=i == 0)
            update_one(opt, w, g, s, leaf, mps[i], key)
        return
    leaves, treedef = jax.tree_util.tree_flatten(states)
    s_data = treedef.unflatten([leaf._data for leaf in leaves])
    new_w, new_s = _step_fn(opt)(
        (mps, names, static_key(opt)),
        [w._data for w in weights],
        [g._data for g in grads],
        s_data,
        lrs,
        wds,
        ts,
        extra,
    )
    for w, nw in zip(weights, new_w):
        w._set_data(nw)
    for leaf, new in zip(leaves, jax.tree_util.tree_leaves(new_s)):
        leaf._set_data(new)


def _index_name(opt: Any, index: Any) -> str:
    return opt.idx2name[index] if index in opt.idx2name else str(index)


def _step_fn(opt: Any):
    """The jitted chunk update: shared by every instance of a built-in optimizer class
    (traced with the calling instance), per instance for user subclasses, whose rule may
    read attributes ``static_key`` does not list."""
    if type(opt).__module__.startswith("mxmod."):
        _tracing.opt = opt
        return _shared_step
    if opt._jit_fn is None:
        opt._jit_fn = jax.jit(functools.partial(_apply_many, opt), static_argnums=(0,))
    return opt._jit_fn


def _apply_many(opt, key, ws, gs, ss, lrs, wds, ts, extra):
    mps, names = key[0], key[1]
    out_w, out_s = [], []
    for i in range(len(ws)):
        leaf = LeafInfo(lrs[i], wds[i], ts[i], names[i] if names else None, i, extra,
                        first=i == 0)  # fmt: skip
        nw, ns = leaf_step(opt, ws[i], gs[i], ss[i], leaf, mps[i])
        out_w.append(nw)
        out_s.append(ns)
    return out_w, out_s


_tracing = threading.local()


def _apply_shared(key, ws, gs, ss, lrs, wds, ts, extra):
    # runs only while tracing, for the instance that asked (its key is part of ``key``)
    return _apply_many(_tracing.opt, key, ws, gs, ss, lrs, wds, ts, extra)


_shared_step = jax.jit(_apply_shared, static_argnums=(0,))


def _wrap_state(state: Any, weight: Any) -> Any:
    """Turn a JAX state tree into NDArrays on ``weight``'s device."""
    try:
        sharding = weight._data.sharding
    except (AttributeError, jax.errors.ConcretizationTypeError):  # a tracer: no placement
        sharding = None

    def wrap(x):
        if sharding is not None:
            x = jax.device_put(x, sharding)
        return NDArray(x, weight.context)

    return jax.tree_util.tree_map(wrap, state)
