"""The Optimizer base class and registry (MXNet ``mx.optimizer.Optimizer``).

An optimizer subclass defines its update once, as a pure per-parameter JAX rule:

* ``_init_leaf(w) -> state``: the state for one weight (``None``, an array or a tuple of
  arrays; the JAX form of MXNet's ``create_state``),
* ``_rule(w, g, state, lr, wd, t) -> (new_w, new_state)``: MXNet's update formula, with
  ``lr``/``wd`` this parameter's resolved rates and ``t`` its update count,
* ``_rule_attrs``: the names of the attributes the rule reads (they key the compile cache).

Everything else derives from the rule: the imperative MXNet API (``create_state``,
``update``, ``update_multi_precision`` on NDArrays, one jitted dispatch per call) and the
functional core of ``_fused.FusedMixin`` (``fused_init``/``fused_update``/``fused_hyper``/
``to_optax``) that the Module's compiled train step uses. See ``README.md``.
"""

from __future__ import annotations

import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..registry import Registry
from ._fused import FusedMixin

__all__ = ["Optimizer", "register", "create"]

_REGISTRY = Registry("optimizer", case_sensitive=False)
_MP_DTYPES = (np.dtype(np.float16), np.dtype(jnp.bfloat16))


def _as_list(x: Any) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


class Optimizer(FusedMixin):
    """Base class of all optimizers, with MXNet 1.9.1's bookkeeping.

    Args:
        rescale_grad: multiply every gradient by this (the Module sets ``1/batch_size``).
        param_idx2name: dict index -> parameter name (maps ``lr_mult``/``wd_mult`` names).
        wd: weight decay.
        clip_gradient: clip the rescaled gradient to ``[-c, c]`` when truthy and > 0.
        learning_rate: the rate; default 0.01 without a scheduler.
        lr_scheduler: an ``mx.lr_scheduler.LRScheduler`` called with ``num_update``.
        sym: a Symbol whose ``__lr_mult__``/``__wd_mult__`` attributes set the multipliers.
        begin_num_update: the update count to start from.
        multi_precision: keep float32 master weights for float16 (mxmod: also bfloat16) ones.
        param_dict: gluon-style dict index -> object with ``lr_mult``/``wd_mult``.

    Raises:
        TypeError: ``param_idx2name`` is not a dict.
    """

    opt_registry = _REGISTRY._items
    _rule_attrs: tuple = ()
    _wd_suffixes: tuple = ("_weight", "_gamma")  # names that keep weight decay
    _mp_master_first = True  # multi-precision state layout: (w32, inner) vs (inner, w32)
    _counts_updates = True

    def __init__(
        self,
        rescale_grad: float = 1.0,
        param_idx2name: dict | None = None,
        wd: float = 0.0,
        clip_gradient: float | None = None,
        learning_rate: float | None = None,
        lr_scheduler: Any = None,
        sym: Any = None,
        begin_num_update: int = 0,
        multi_precision: bool = False,
        param_dict: dict | None = None,
    ):
        self.rescale_grad = rescale_grad
        self.lr_scheduler = lr_scheduler
        if self.lr_scheduler is None and learning_rate is None:
            learning_rate = 0.01
        self.lr = learning_rate
        if self.lr_scheduler is not None and learning_rate is not None:
            if self.lr_scheduler.base_lr != learning_rate:
                print(
                    UserWarning(
                        "learning rate from ``lr_scheduler`` has been overwritten by "
                        "``learning_rate`` in optimizer."
                    )
                )
                self.lr_scheduler.base_lr = learning_rate
        self.wd = wd
        self.lr_mult: dict = {}
        self.wd_mult: dict = {}
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        self._cur_dev = 0
        self._all_index_update_counts: dict = {0: {}}
        self._index_update_count = self._all_index_update_counts[0]
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        self.aggregate_num = 0
        if param_idx2name is None:
            param_idx2name = {}
        if not isinstance(param_idx2name, dict):
            raise TypeError(
                f"param_idx2name should be a dict of param indexes to names, got "
                f"{type(param_idx2name).__name__}"
            )
        self.idx2name = param_idx2name.copy()
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.param_dict = param_dict if param_dict else {}
        self.allow_np_array = False
        self._jit_fn = None
        self.set_lr_mult({})
        self.set_wd_mult({})

    # ------------------------------------------------------------------ registry
    @staticmethod
    def register(klass: type) -> type:
        """Register an optimizer class under ``klass.__name__.lower()`` (warns on override)."""
        if not (isinstance(klass, type) and issubclass(klass, Optimizer)):
            raise TypeError(f"can only register Optimizer subclasses, got {klass!r}")
        name = klass.__name__.lower()
        old = _REGISTRY.find(name)
        if old is not None and old is not klass:
            warnings.warn(
                f"WARNING: New optimizer {klass.__module__}.{klass.__name__} is overriding "
                f"existing optimizer {old.__module__}.{old.__name__}",
                stacklevel=2,
            )
        _REGISTRY.register(name, klass, override=True)
        return klass

    @staticmethod
    def create_optimizer(name: str, **kwargs: Any) -> "Optimizer":
        """Instantiate a registered optimizer by (case-insensitive) name.

        Raises:
            ValueError: unknown name; the message lists the registered ones.
        """
        if not isinstance(name, str):
            raise TypeError(f"optimizer name must be a string, got {type(name).__name__}")
        klass = _REGISTRY.find(name)
        if klass is None:
            raise ValueError(
                f"Cannot find optimizer {name}; registered optimizers are: "
                f"{', '.join(_REGISTRY.names())}"
            )
        return klass(**kwargs)

    # ------------------------------------------------------------------ learning rate
    @property
    def learning_rate(self) -> float:
        """The current rate: ``lr_scheduler(num_update)`` if a scheduler exists, else ``lr``."""
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def set_learning_rate(self, lr: float) -> None:
        """Set ``lr`` (takes effect at the next step; never recompiles).

        Raises:
            UserWarning: (raised, as in MXNet) when a scheduler owns the rate.
        """
        if self.lr_scheduler is not None:
            raise UserWarning(
                "LRScheduler of the optimizer has already been defined. Note that "
                "set_learning_rate can mutate the value of the learning rate of the optimizer "
                "only when the LRScheduler of the optimizer is undefined."
            )
        self.lr = lr

    def set_lr_scale(self, args_lrscale: dict) -> None:
        raise DeprecationWarning("set_lr_scale is deprecated: use set_lr_mult instead.")

    def set_lr_mult(self, args_lr_mult: dict) -> None:
        """Per-parameter lr multipliers: symbol ``__lr_mult__`` attrs, then ``args_lr_mult``."""
        self.lr_mult = {}
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and "__lr_mult__" in attr[name]:
                    self.lr_mult[name] = float(attr[name]["__lr_mult__"])
        self.lr_mult.update(args_lr_mult)

    def set_wd_mult(self, args_wd_mult: dict) -> None:
        """Per-parameter wd multipliers.

        Names in ``idx2name`` not ending in one of ``_wd_suffixes`` (``_weight``, ``_gamma``)
        get 0; then symbol ``__wd_mult__`` attributes; then ``args_wd_mult``.
        """
        self.wd_mult = {}
        for n in self.idx2name.values():
            if not n.endswith(self._wd_suffixes):
                self.wd_mult[n] = 0.0
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and "__wd_mult__" in attr[name]:
                    self.wd_mult[name] = float(attr[name]["__wd_mult__"])
        self.wd_mult.update(args_wd_mult)

    def _set_current_context(self, device_id: int) -> None:
        """Switch the per-device update-count dict (replicas do not inflate counts)."""
        if device_id not in self._all_index_update_counts:
            self._all_index_update_counts[device_id] = {}
        self._cur_dev = device_id
        self._index_update_count = self._all_index_update_counts[device_id]

    def _update_count(self, index: Any) -> None:
        """Increment the update count of each index; ``num_update`` is the max count."""
        for idx in _as_list(index):
            if idx not in self._index_update_count:
                self._index_update_count[idx] = self.begin_num_update
            self._index_update_count[idx] += 1
            self.num_update = max(self._index_update_count[idx], self.num_update)

    def _base_lr(self) -> float:
        return self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr

    def _mults(self, indices: list, mults: dict, attr: str) -> list:
        out = []
        for index in indices:
            if index in self.param_dict:
                out.append(getattr(self.param_dict[index], attr))
            elif index in mults:
                out.append(mults[index])
            elif index in self.idx2name:
                out.append(mults.get(self.idx2name[index], 1.0))
            else:
                out.append(1.0)
        return out

    def _get_lrs(self, indices: list) -> list:
        lr = self._base_lr()
        return [lr * m for m in self._mults(indices, self.lr_mult, "lr_mult")]

    def _get_wds(self, indices: list) -> list:
        return [self.wd * m for m in self._mults(indices, self.wd_mult, "wd_mult")]

    def _get_lr(self, index: Any) -> float:
        return self._get_lrs([index])[0]

    def _get_wd(self, index: Any) -> float:
        return self._get_wds([index])[0]

    # ------------------------------------------------------------------ pure rule hooks
    def _init_leaf(self, w: jax.Array) -> Any:
        """JAX form of ``create_state`` for one weight; ``None`` = stateless."""
        return None

    def _rule(self, w, g, s, lr, wd, t):
        """Pure MXNet update of one parameter: ``(new_w, new_state)``."""
        raise NotImplementedError(
            f"{type(self).__name__} defines no update rule: override update() (imperative) "
            f"or _init_leaf/_rule (imperative + fused)"
        )

    def _rule_ts(self, indices: list, ts: np.ndarray) -> Any:
        """What ``_rule`` receives as ``t`` for each index of an imperative call (host side,
        after counting). Default: the update counts. Optimizers with host-side scalar state
        (Nadam's shared ``m_schedule``) return per-index coefficient rows instead."""
        return ts

    def _rescale_clip(self, g):
        """``clip(rescale_grad * g, clip_gradient)`` with MXNet's truthiness rule."""
        g = g * float(self.rescale_grad)
        cg = self.clip_gradient
        if cg and cg > 0:
            g = jnp.clip(g, -float(cg), float(cg))
        return g

    def _use_mp(self, dtype: Any) -> bool:
        return bool(self.multi_precision) and np.dtype(dtype) in _MP_DTYPES

    def _warn_fp16(self, dtype: Any) -> None:
        if np.dtype(dtype) == np.float16 and not self.multi_precision:
            warnings.warn(
                "Accumulating with float16 in optimizer can lead to poor accuracy or slow "
                "convergence. Consider using multi_precision=True option of the "
                f"{type(self).__name__} optimizer",
                stacklevel=4,
            )

    def _init_leaf_mp(self, w: jax.Array) -> Any:
        if self._use_mp(w.dtype):
            w32 = w.astype(jnp.float32)
            inner = self._init_leaf(w32)
            return (w32, inner) if self._mp_master_first else (inner, w32)
        self._warn_fp16(w.dtype)
        return self._init_leaf(w)

    def _leaf_step(self, w, g, s, lr, wd, t, mp: bool):
        """One parameter's step, unwrapping the float32 master copy when ``mp``."""
        if mp:
            w32, inner = s if self._mp_master_first else (s[1], s[0])
            lr, wd = jnp.asarray(lr, jnp.float32), jnp.asarray(wd, jnp.float32)
            nw32, ninner = self._rule(w32, g.astype(jnp.float32), inner, lr, wd, t)
            ns = (nw32, ninner) if self._mp_master_first else (ninner, nw32)
            return nw32.astype(w.dtype), _cast_like(ns, s)
        lr, wd = jnp.asarray(lr, w.dtype), jnp.asarray(wd, w.dtype)  # MXNet computes in DType
        nw, ns = self._rule(w, g.astype(w.dtype), s, lr, wd, t)
        return nw.astype(w.dtype), _cast_like(ns, s)

    def _static_key(self) -> tuple:
        """Everything (besides lr/wd/t) the rule reads: part of every compile-cache key."""
        extra = tuple(_hashable(getattr(self, a)) for a in self._rule_attrs)
        return (type(self), float(self.rescale_grad), _hashable(self.clip_gradient)) + extra

    # ------------------------------------------------------------------ imperative API
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
        if self.fused_supported():
            self._update_impl(index, weight, grad, state, self._use_mp(first.dtype))
            return
        # a user-defined update(): MXNet's base wrapper
        if isinstance(index, (list, tuple)) or not self._use_mp(weight.dtype):
            self.update(index, weight, grad, state)
            return
        w32, inner = state if self._mp_master_first else (state[1], state[0])
        self.update(index, w32, grad.astype(np.float32), inner)
        weight._set_data(w32._data.astype(weight._data.dtype))

    def _update_impl(self, index, weight, grad, state, multi_precision: bool) -> None:
        indices, weights, grads = _as_list(index), _as_list(weight), _as_list(grad)
        states = list(state) if isinstance(index, (list, tuple)) else [state]
        for w, g in zip(weights, grads):
            if not (hasattr(w, "_set_data") and hasattr(g, "_set_data")):
                raise TypeError(
                    f"{type(self).__name__}.update needs NDArray weight and grad, got "
                    f"{type(w).__name__} and {type(g).__name__}"
                )
        if self._counts_updates:
            self._update_count(indices)
        lrs = np.asarray(self._get_lrs(indices), np.float32)
        wds = np.asarray(self._get_wds(indices), np.float32)
        counts = self._index_update_count
        ts = np.asarray([counts.get(i, self.num_update) for i in indices], np.int32)
        ts = self._rule_ts(indices, ts)
        mps = tuple(bool(multi_precision) and self._use_mp(w.dtype) for w in weights)
        leaves, treedef = jax.tree_util.tree_flatten(states)
        s_data = treedef.unflatten([leaf._data for leaf in leaves])
        if self._jit_fn is None:
            self._jit_fn = jax.jit(self._apply_many, static_argnums=(0,))
        new_w, new_s = self._jit_fn(
            (mps, self._static_key()),
            [w._data for w in weights],
            [g._data for g in grads],
            s_data,
            lrs,
            wds,
            ts,
        )
        for w, nw in zip(weights, new_w):
            w._set_data(nw)
        for leaf, new in zip(leaves, jax.tree_util.tree_leaves(new_s)):
            leaf._set_data(new)

    def _apply_many(self, key, ws, gs, ss, lrs, wds, ts):
        mps = key[0]
        out_w, out_s = [], []
        for i in range(len(ws)):
            nw, ns = self._leaf_step(ws[i], gs[i], ss[i], lrs[i], wds[i], ts[i], mps[i])
            out_w.append(nw)
            out_s.append(ns)
        return out_w, out_s

    # ------------------------------------------------------------------ pickling / codec
    def __getstate__(self) -> dict:
        ret = self.__dict__.copy()
        ret.pop("param_dict", None)
        ret["_jit_fn"] = None
        return ret

    def __setstate__(self, state: dict) -> None:
        self.__dict__ = state
        self._after_restore()

    def _after_restore(self) -> None:
        self.param_dict = {}
        self._jit_fn = None
        self.__dict__.setdefault("_cur_dev", 0)
        self._all_index_update_counts.setdefault(self._cur_dev, {})
        self._index_update_count = self._all_index_update_counts[self._cur_dev]


def _hashable(x: Any) -> Any:
    if isinstance(x, (list, tuple)):
        return tuple(_hashable(v) for v in x)
    if isinstance(x, np.generic):
        return x.item()
    return x


def _cast_like(new: Any, old: Any) -> Any:
    return jax.tree_util.tree_map(lambda n, o: jnp.asarray(n).astype(o.dtype), new, old)


def _wrap_state(state: Any, weight: Any) -> Any:
    """Turn a JAX state tree into NDArrays on ``weight``'s device."""
    from ..ndarray import NDArray

    sharding = getattr(weight._data, "sharding", None)

    def wrap(x):
        if sharding is not None:
            x = jax.device_put(x, sharding)
        return NDArray(x, weight.context)

    return jax.tree_util.tree_map(wrap, state)


register = Optimizer.register
create = Optimizer.create_optimizer

