"""Imperative optimizer updates on sparse NDArrays, as MXNet 1.9.1 dispatches them.

* States: MXNet's ``create_state`` gives some states the weight's storage type
  (``_state_stype``: ``"weight"``, or ``"lazy_update"`` = the weight's when ``lazy_update``
  is on, else dense); the rule's initial values are stored that way.
* A row_sparse gradient takes the optimizer's sparse kernel where MXNet has one
  (:func:`lazy.supports_lazy`): only the gradient's rows of the weight and states move
  (:func:`lazy.lazy_step`, one jitted program per padded row count).
* Anything else (MXNet's *std* sparse update, or its storage fallback for operators without
  a sparse kernel, csr weights included) is the dense rule on densified inputs; the results
  are written back in each array's own storage type.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import jax
import numpy as np

from ..ndarray import NDArray
from ..ndarray.sparse import BaseSparseNDArray, RowSparseNDArray
from ..ndarray.sparse._updates import padded_rows, write_back
from .lazy import check_lazy_wd, lazy_step, supports_lazy
from .rules import LeafInfo, leaf_step


def is_sparse(x: Any) -> bool:
    return isinstance(x, BaseSparseNDArray)


def any_sparse(*trees: Any) -> bool:
    return any(is_sparse(x) for t in trees for x in jax.tree_util.tree_leaves(t))


def state_stype(opt: Any, weight_stype: str) -> str:
    """The storage type MXNet's ``create_state`` gives ``opt``'s weight-shaped states."""
    kind = getattr(type(opt), "_state_stype", None)
    if kind == "weight" or (kind == "lazy_update" and getattr(opt, "lazy_update", False)):
        return weight_stype
    return "default"


def wrap_sparse_state(opt: Any, state: Any, weight: Any) -> Any:
    """Initial state values (JAX) as NDArrays in MXNet's storage types for a sparse weight."""
    stype = state_stype(opt, weight.stype)
    cls = type(weight)

    def wrap(x):
        per_row = x.ndim == len(weight.shape) and x.shape[0] == weight.shape[0]
        if stype != "default" and per_row:
            return cls._from_dense(np.asarray(x), weight.context)
        return NDArray(x, weight.context)

    return jax.tree_util.tree_map(wrap, state)


def dense_value(x: Any) -> jax.Array:
    return x._densify() if is_sparse(x) else x._data


def update_one(opt: Any, w: Any, g: Any, s: Any, leaf: LeafInfo, mp: bool, key: tuple) -> None:
    """Update one parameter in place where the weight, gradient or a state is sparse.
    ``leaf``'s rates, count and extras are traced; ``key`` (hashable) names everything else
    the rule reads (``static_key``)."""
    leaves, treedef = jax.tree_util.tree_flatten(s)
    s_dense = treedef.unflatten([dense_value(x) for x in leaves])
    w_dense = dense_value(w)
    traced = (leaf.lr, leaf.wd, leaf.t, leaf.extra)
    static = (key, mp, leaf.name, leaf.pos, leaf.first)
    rsp_grad = isinstance(g, RowSparseNDArray)
    if rsp_grad and opt._lazy_kernel == "not_implemented" and opt.lazy_update:
        name = type(opt).__name__
        raise NotImplementedError(
            f"{name}: MXNet updates a row_sparse gradient lazily (only its rows) through "
            f"sgd_update/sgd_mom_update with {name}'s rates; mxmod does not implement that "
            f"lazy form. Pass lazy_update=False (LARS: the standard update) or a dense gradient "
            f"(grad.tostype('default'))"
        )
    if rsp_grad and supports_lazy(opt, w.stype, mp):
        check_lazy_wd(opt, [leaf.wd])
        new_w, new_s = _fn(opt, True)(static, w_dense, padded_rows(g), s_dense, traced)
        all_rows = True
    else:
        new_w, new_s = _fn(opt, False)(static, w_dense, dense_value(g), s_dense, traced)
        all_rows = rsp_grad and _has_std_kernel(opt, w, leaves, mp)
    write_back(w, new_w, all_rows)
    for x, new in zip(leaves, jax.tree_util.tree_leaves(new_s)):
        write_back(x, new, all_rows)


def _has_std_kernel(opt: Any, w: Any, state_leaves: list, mp: bool) -> bool:
    """MXNet's std (non-lazy) row_sparse kernel runs (its row_sparse outputs then store
    every row): SGD/Adam, the states in the weight's storage type, no master copy."""
    if getattr(type(opt), "_lazy_kernel", None) != "lazy_update" or mp:
        return False
    return w.stype in ("default", "row_sparse") and all(s.stype == w.stype for s in state_leaves)


def _apply(opt, lazy, static, w, g, s, traced):
    _, mp, name, pos, first = static
    lr, wd, t, extra = traced
    leaf = LeafInfo(lr, wd, t, name, pos, extra, first=first)
    if lazy:
        return lazy_step(opt, w, g[0], g[1], s, leaf, mp)
    return leaf_step(opt, w, g, s, leaf, mp)


_tracing = threading.local()
_shared = {
    lazy: jax.jit(
        lambda static, *a, lazy=lazy: _apply(_tracing.opt, lazy, static, *a), static_argnums=0
    )
    for lazy in (False, True)
}


def _fn(opt: Any, lazy: bool):
    """The jitted update, shared by the instances of built-in classes (their ``static_key``
    is part of the key); eager for user subclasses, whose rule may read other attributes."""
    if type(opt).__module__.startswith("mxmod."):
        _tracing.opt = opt
        return _shared[lazy]
    return functools.partial(_apply, opt, lazy)
