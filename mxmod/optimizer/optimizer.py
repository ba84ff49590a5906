"""The Optimizer base class and registry (MXNet ``mx.optimizer.Optimizer``).

An optimizer subclass defines its update once, as a pure per-parameter JAX rule:

* ``_init_leaf(w) -> state``: the state for one weight (``None``, an array or a tuple of
  arrays; the JAX form of MXNet's ``create_state``),
* ``_rule(w, g, state, leaf) -> (new_w, new_state)``: MXNet's update formula, where
  ``leaf`` is a :class:`~mxmod.optimizer.rules.LeafInfo` (this parameter's ``lr``, ``wd``,
  count ``t``, name, position, per-step extras),
* ``_rule_attrs``: the names of the attributes the rule reads (they key the compile cache).

The imperative MXNet API (``_imperative.ImperativeMixin``), the functional core
(``_fused.FusedMixin``) and ``to_optax`` derive from the rule. A subclass written the MXNet
way (``create_state``/``update`` in NDArray ops) also gets a fused form, by tracing its
``update`` (``_custom``). See ``README.md``.
"""

from __future__ import annotations

import warnings
import weakref
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..registry import Registry
from ._bookkeeping import BookkeepingMixin
from ._fused import FusedMixin
from ._imperative import ImperativeMixin
from .rules import LeafInfo, check_hyper, default_wd_mults

__all__ = ["Optimizer", "register", "create"]

_REGISTRY = Registry("optimizer", case_sensitive=False)
_MP_DTYPES = (np.dtype(np.float16), np.dtype(jnp.bfloat16))
_HAS_RULE = weakref.WeakKeyDictionary()  # class -> whether its update is its _rule


class Optimizer(FusedMixin, ImperativeMixin, BookkeepingMixin):
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
    _lr_before_count = False  # the rate is read before the update is counted (LBSGD)
    _uses_names = False  # the rule reads leaf.name imperatively too (part of the jit key)
    _extra_keys: tuple = ()  # keys of the per-step traced extras the rule reads
    _checks: tuple = ()  # ((attr, bounds), ...) validated by _validate (rules.check_hyper)

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
        self._init_counts()
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
        mult = {}
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and "__lr_mult__" in attr[name]:
                    mult[name] = float(attr[name]["__lr_mult__"])
        mult.update(args_lr_mult)
        self.lr_mult = mult

    def set_wd_mult(self, args_wd_mult: dict) -> None:
        """Per-parameter wd multipliers.

        Names in ``idx2name`` not ending in one of ``_wd_suffixes`` (``_weight``, ``_gamma``)
        get 0; then symbol ``__wd_mult__`` attributes; then ``args_wd_mult``.
        """
        mult = default_wd_mults(self.idx2name.values(), self._wd_suffixes)
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and "__wd_mult__" in attr[name]:
                    mult[name] = float(attr[name]["__wd_mult__"])
        mult.update(args_wd_mult)
        self.wd_mult = mult

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

    def _rule(self, w, g, s, leaf: LeafInfo):
        """Pure MXNet update of one parameter: ``(new_w, new_state)``."""
        raise NotImplementedError(
            f"{type(self).__name__} defines no update rule: override update() (imperative) "
            f"or _init_leaf/_rule (imperative + fused)"
        )

    @classmethod
    def _has_rule(cls) -> bool:
        """True when the class's update is its pure ``_rule`` (not an overridden ``update``)."""
        known = _HAS_RULE.get(cls)
        if known is None:
            known = _HAS_RULE[cls] = cls._find_rule()
        return known

    @classmethod
    def _find_rule(cls) -> bool:
        def owner(attr: str) -> type:
            return next(k for k in cls.__mro__ if attr in k.__dict__)

        rule_owner = owner("_rule")
        if rule_owner is Optimizer:
            return False
        imperative = ("update", "update_multi_precision", "create_state",
                      "create_state_multi_precision")  # fmt: skip
        return all(issubclass(rule_owner, owner(a)) for a in imperative)

    # per-step traced extras (leaf.extra), from the host (imperative / fused) or in-graph
    def _host_extras(self, indices: list, ts: np.ndarray) -> dict:
        """Host side, once per imperative update call, after counting."""
        return {}

    def _fused_extras(self, names: Any, hyper: dict) -> dict:
        """Host side, once per fused step, after ``fused_hyper`` counted it."""
        return {}

    def _traced_extras(self, hyper: dict, sched: Any, static: Any) -> dict:
        """Jittable fallback when ``hyper`` lacks ``_extra_keys`` (``to_optax``, a hand-built
        hyper). ``sched``: ``num_update -> lr`` of ``to_optax`` or None; ``static``: what
        :meth:`_optax_static` fixed."""
        return {}

    def _optax_static(self) -> Any:
        """Anything ``to_optax`` fixes at creation (SGLD: its base key)."""
        return None

    # ------------------------------------------------------------------ one leaf
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

    def _leaf_step(self, w, g, s, leaf: LeafInfo, mp: bool):
        """One parameter's step, unwrapping the float32 master copy when ``mp``."""
        if mp:
            w32, inner = s if self._mp_master_first else (s[1], s[0])
            leaf = leaf._replace(
                lr=jnp.asarray(leaf.lr, jnp.float32),
                wd=jnp.asarray(leaf.wd, jnp.float32),
                low_dtype=w.dtype,
            )
            nw32, ninner = self._rule(w32, g.astype(jnp.float32), inner, leaf)
            ns = (nw32, ninner) if self._mp_master_first else (ninner, nw32)
            return nw32.astype(w.dtype), _cast_like(ns, s)
        # MXNet computes in the weight's DType
        leaf = leaf._replace(lr=jnp.asarray(leaf.lr, w.dtype), wd=jnp.asarray(leaf.wd, w.dtype))
        nw, ns = self._rule(w, g.astype(w.dtype), s, leaf)
        return nw.astype(w.dtype), _cast_like(ns, s)

    def _static_key(self) -> tuple:
        """Everything (besides lr/wd/t/extras) the rule reads: part of every compile key.
        Cached until a setting changes (see ``_bookkeeping``)."""
        cache = self.__dict__.get("_static_cache")
        key = self._settings_key()
        if cache is None or cache[0] != key:
            self._validate()
            extra = tuple(_hashable(getattr(self, a)) for a in self._rule_attrs)
            static = (type(self), float(self.rescale_grad), _hashable(self.clip_gradient))
            cache = (key, static + extra)
            self.__dict__["_static_cache"] = cache
        return cache[1]

    def _validate(self) -> None:
        """Check the ``_checks`` hyperparameters (``(attr, bounds)`` pairs): at construction
        and again whenever a setting changed before a trace (they may be set later)."""
        owner = type(self).__name__
        for attr, bounds in self._checks:
            check_hyper(owner, attr, getattr(self, attr), bounds)

    # ------------------------------------------------------------------ pickling / codec
    def __getstate__(self) -> dict:
        self._flush_counts()
        ret = self.__dict__.copy()
        ret.pop("param_dict", None)
        for k in ("_sig_cache", "_static_cache", "_custom_probe", "_fused_shapes"):
            ret.pop(k, None)
        ret["_jit_fn"] = None
        return ret

    def __setstate__(self, state: dict) -> None:
        self.__dict__ = state
        self._after_restore()

    def _after_restore(self) -> None:
        self.__dict__["param_dict"] = {}
        self.__dict__["_jit_fn"] = None
        self.__dict__.pop("_index_update_count", None)  # a property now (older pickles)
        self._restore_bookkeeping()


def _hashable(x: Any) -> Any:
    if isinstance(x, (list, tuple)):
        return tuple(_hashable(v) for v in x)
    if isinstance(x, np.generic):
        return x.item()
    return x


def _cast_like(new: Any, old: Any) -> Any:
    return jax.tree_util.tree_map(lambda n, o: jnp.asarray(n).astype(o.dtype), new, old)


register = Optimizer.register
create = Optimizer.create_optimizer

# MXNet 1.9.1 defines every optimizer in ``mx.optimizer.optimizer``; mxmod groups them by
# family, and this module resolves the other names lazily (``from
# mxnet.optimizer.optimizer import SGD`` keeps working).
_MXNET_NAMES = ("AdaDelta", "AdaGrad", "Adam", "Adamax", "DCASGD", "FTML", "Ftrl", "LARS",
                "LBSGD", "NAG", "NDabs", "Nadam", "RMSProp", "SGD", "SGLD", "Signum", "LAMB",
                "Test", "Updater", "ccSGD", "get_updater")  # fmt: skip


def __getattr__(name: str) -> Any:
    if name in _MXNET_NAMES:
        from .. import optimizer as package

        return getattr(package, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
