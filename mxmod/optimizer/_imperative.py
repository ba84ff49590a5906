"""MXNet's imperative optimizer API on NDArrays, derived from the pure rule.

``create_state``/``update``/``update_multi_precision`` as MXNet 1.9.1 has them (scalars, or
the lists the ``Updater`` passes when ``aggregate_num > 0``). Counting and ``_get_lrs``/
``_get_wds`` happen on the host exactly as in MXNet; then one jitted dispatch updates the
whole chunk: rates, counts and extras are traced arguments, so a scheduler never recompiles.
Built-in optimizers share one compile cache across instances: ``_static_key`` names everything
their rule reads, so a second ``SGD(momentum=0.9)`` reuses the first one's program.
"""

from __future__ import annotations

import threading
from typing import Any

import jax
import numpy as np

from ..base import _as_list
from .rules import LeafInfo


class ImperativeMixin:
    """``create_state``, ``update`` and their multi-precision forms for Optimizer."""

    def create_state(self, index: Any, weight: Any) -> Any:
        """The state for one weight NDArray: ``None``, an NDArray or a tuple of them."""
        return _wrap_state(self._init_leaf(weight._data), weight)

    def create_state_multi_precision(self, index: Any, weight: Any) -> Any:
        """Like ``create_state``, adding a float32 master copy for float16 weights when
        ``multi_precision`` (base layout ``(w32, state)``; SGD ``(state, w32)``)."""
        if self._use_mp(weight.dtype):
            w32 = weight.astype(np.float32)
            inner = self.create_state(index, w32)
            return (w32, inner) if self._mp_master_first else (inner, w32)
        self._warn_fp16(weight.dtype)
        return self.create_state(index, weight)

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        """Update ``weight`` (and ``state``) in place from ``grad``; lists allowed."""
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        """``update`` through the float32 master copy when ``multi_precision`` applies."""
        first = weight[0] if isinstance(index, (list, tuple)) else weight
        if self._has_rule():
            self._update_impl(index, weight, grad, state, self._use_mp(first.dtype))
            return
        # a user-defined update(): MXNet's base wrapper
        if isinstance(index, (list, tuple)) or not self._use_mp(weight.dtype):
            self.update(index, weight, grad, state)
            return
        w32, inner = state if self._mp_master_first else (state[1], state[0])
        self.update(index, w32, grad.astype(np.float32), inner)
        weight._set_data(w32._data.astype(weight._data.dtype))

    def _index_name(self, index: Any) -> str:
        return self.idx2name[index] if index in self.idx2name else str(index)

    def _update_impl(self, index, weight, grad, state, multi_precision: bool) -> None:
        indices, weights, grads = _as_list(index), _as_list(weight), _as_list(grad)
        states = list(state) if isinstance(index, (list, tuple)) else [state]
        for w, g in zip(weights, grads):
            if not (hasattr(w, "_set_data") and hasattr(g, "_set_data")):
                raise TypeError(
                    f"{type(self).__name__}.update needs NDArray weight and grad, got "
                    f"{type(w).__name__} and {type(g).__name__}"
                )
        if self._lr_before_count:  # MXNet's LBSGD reads the rate, then counts
            lrs = np.asarray(self._get_lrs(indices), np.float32)
        if self._counts_updates:
            self._update_count(indices)
        if not self._lr_before_count:
            lrs = np.asarray(self._get_lrs(indices), np.float32)
        wds = np.asarray(self._get_wds(indices), np.float32)
        counts = self._index_update_count
        ts = np.asarray([counts.get(i, self.num_update) for i in indices], np.int32)
        extra = self._host_extras(indices, ts)
        mps = tuple(bool(multi_precision) and self._use_mp(w.dtype) for w in weights)
        names = tuple(self._index_name(i) for i in indices) if self._uses_names else None
        leaves, treedef = jax.tree_util.tree_flatten(states)
        s_data = treedef.unflatten([leaf._data for leaf in leaves])
        new_w, new_s = self._step_fn()(
            (mps, names, self._static_key()),
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

    def _step_fn(self):
        """The jitted chunk update: shared by every instance of a built-in optimizer class
        (traced with the calling instance), per instance for user subclasses, whose rule may
        read attributes ``_static_key`` does not list."""
        if type(self).__module__.startswith("mxmod."):
            _tracing.opt = self
            return _shared_step
        if self._jit_fn is None:
            self._jit_fn = jax.jit(self._apply_many, static_argnums=(0,))
        return self._jit_fn

    def _apply_many(self, key, ws, gs, ss, lrs, wds, ts, extra):
        mps, names = key[0], key[1]
        out_w, out_s = [], []
        for i in range(len(ws)):
            leaf = LeafInfo(lrs[i], wds[i], ts[i], names[i] if names else None, i, extra,
                            first=i == 0)  # fmt: skip
            nw, ns = self._leaf_step(ws[i], gs[i], ss[i], leaf, mps[i])
            out_w.append(nw)
            out_s.append(ns)
        return out_w, out_s


_tracing = threading.local()


def _apply_shared(key, ws, gs, ss, lrs, wds, ts, extra):
    # runs only while tracing, for the instance that asked (its key is part of ``key``)
    return _tracing.opt._apply_many(key, ws, gs, ss, lrs, wds, ts, extra)


_shared_step = jax.jit(_apply_shared, static_argnums=(0,))


def _wrap_state(state: Any, weight: Any) -> Any:
    """Turn a JAX state tree into NDArrays on ``weight``'s device."""
    from ..ndarray import NDArray

    try:
        sharding = weight._data.sharding
    except (AttributeError, jax.errors.ConcretizationTypeError):  # a tracer: no placement
        sharding = None

    def wrap(x):
        if sharding is not None:
            x = jax.device_put(x, sharding)
        return NDArray(x, weight.context)

    return jax.tree_util.tree_map(wrap, state)
