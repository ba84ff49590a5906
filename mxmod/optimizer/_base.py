"""The Optimizer base class and registry (MXNet ``mx.optimizer.Optimizer``).

A subclass defines its update once, as a pure per-parameter JAX rule (``_init_leaf``,
``_rule``, ``_rule_attrs``; see ``README.md``). The class holds MXNet's settings; each other
concept lives in its own unit: the update counts (``_counts.UpdateCounts``, held as
``_counts``), the settings version (``_settings``), the multipliers (``_mults``), the
imperative update on NDArrays (``_imperative``), the fused core (``fused``), ``to_optax``
(``_optax``) and the fused form of MXNet-style subclasses (``_custom``).
"""

from __future__ import annotations

import warnings
import weakref
from typing import Any

import jax
import numpy as np

from ..registry import Registry, adopt
from . import _imperative, _optax, _settings, fused
from ._arg_checks import check_base_args, check_number, check_setting, unknown_param_error
from ._counts import UpdateCounts
from ._mults import index_mults, sym_mults
from .rules import LeafInfo, check_hyper, default_wd_mults

__all__ = ["Optimizer", "register", "create"]

_REGISTRY = Registry("optimizer", case_sensitive=False)
_HAS_RULE = weakref.WeakKeyDictionary()  # class -> whether its update is its _rule
# MXNet 1.9.1's SGD, NAG, LARS and LAMB define update_multi_precision as their own rule: the
# Updater (so Module) never calls a subclass's overridden update() (MXNet's example/dsd).
_MP_RULE_CLASSES = ("SGD", "NAG", "LARS", "LAMB")
_CACHES = ("_sig_cache", "_static_cache", "_custom_probe", "_fused_shapes")  # not pickled


class Optimizer:
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
    # row_sparse gradients (lazy.py, _sparse_update.py): MXNet's sparse kernel kind, whether
    # it runs through a master copy, refuses weight decay; create_state's storage types
    _lazy_kernel: str | None = None
    _lazy_mp = True
    _lazy_no_wd = False
    _state_stype: str | None = None
    _counts_updates = True
    _lr_before_count = False  # the rate is read before the update is counted (LBSGD)
    _uses_names = False  # the rule reads leaf.name imperatively too (part of the jit key)
    _rate_hooks = "one"  # MXNet's update reads _get_lr/_get_wd ('many': _get_lrs/_get_wds)
    _extra_keys: tuple = ()  # keys of the per-step traced extras the rule reads
    _checks: tuple = ()  # ((attr, bounds), ...) validated by _validate (rules.check_hyper)
    _step_attrs: frozenset = frozenset()  # a subclass's per-step attributes (not settings)

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
        check_base_args(type(self).__name__, locals())
        self._counts = UpdateCounts()
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
        try:
            return klass(**kwargs)
        except TypeError as e:  # a misspelt optimizer_params key: list the right ones
            better = unknown_param_error(klass, e, kwargs)
            if better is None:
                raise
            raise better from None

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
        check_number(type(self).__name__, "learning_rate", lr)
        self.lr = lr

    def set_lr_scale(self, args_lrscale: dict) -> None:
        raise DeprecationWarning("set_lr_scale is deprecated: use set_lr_mult instead.")

    def set_lr_mult(self, args_lr_mult: dict) -> None:
        """Per-parameter lr multipliers: symbol ``__lr_mult__`` attrs, then ``args_lr_mult``."""
        mult = sym_mults(self.sym_info, "__lr_mult__")
        mult.update(args_lr_mult)
        self.lr_mult = mult

    def set_wd_mult(self, args_wd_mult: dict) -> None:
        """Per-parameter wd multipliers.

        Names in ``idx2name`` not ending in one of ``_wd_suffixes`` (``_weight``, ``_gamma``)
        get 0; then symbol ``__wd_mult__`` attributes; then ``args_wd_mult``.
        """
        mult = default_wd_mults(self.idx2name.values(), self._wd_suffixes)
        mult.update(sym_mults(self.sym_info, "__wd_mult__"))
        mult.update(args_wd_mult)
        self.wd_mult = mult

    def _base_lr(self) -> float:
        return self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr

    def _get_lrs(self, indices: list) -> list:
        lr = self._base_lr()
        return [lr * m for m in index_mults(self, indices, self.lr_mult, "lr_mult")]

    def _get_wds(self, indices: list) -> list:
        return [self.wd * m for m in index_mults(self, indices, self.wd_mult, "wd_mult")]

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
            imperative = ("update", "update_multi_precision", "create_state",
                          "create_state_multi_precision")  # fmt: skip
            if any(k.__name__ in _MP_RULE_CLASSES and k.__module__.startswith(__package__)
                   for k in cls.__mro__):  # fmt: skip
                imperative = imperative[1:]
            rule_owner = _owner(cls, "_rule")
            known = rule_owner is not Optimizer and all(
                issubclass(rule_owner, _owner(cls, a)) for a in imperative
            )
            _HAS_RULE[cls] = known
        return known

    @classmethod
    def _mxnet_style(cls) -> bool:
        """True when the class overrides ``update`` or ``update_multi_precision``."""
        return any(_owner(cls, a) is not Optimizer for a in ("update", "update_multi_precision"))

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

    def _set_hypers(self, **values: Any) -> None:
        """Store the rule's settings (MXNet's attribute names) and check them (``_checks``)."""
        for name, value in values.items():
            setattr(self, name, value)
        self._validate()

    def _validate(self) -> None:
        """Check the ``_checks`` hyperparameters (``(attr, bounds)`` pairs): at construction
        and again whenever a setting changed before a trace (they may be set later)."""
        owner = type(self).__name__
        for attr, bounds in self._checks:
            check_hyper(owner, attr, getattr(self, attr), bounds)

    # ------------------------------------------------------------------ settings version
    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, (str, bytes)):  # a number as a string: MXNet fails later
            check_setting(self, name, value)
        object.__setattr__(self, name, _settings.tracked(name, value))
        _settings.note_assignment(self, name)

    # ------------------------------------------------------------------ imperative MXNet API
    def create_state(self, index: Any, weight: Any) -> Any:
        """The state for one weight NDArray: ``None``, an NDArray or a tuple of them."""
        return _imperative.create_state(self, weight)

    def create_state_multi_precision(self, index: Any, weight: Any) -> Any:
        """Like ``create_state``, adding a float32 master copy for float16 weights when
        ``multi_precision`` (base layout ``(w32, state)``; SGD ``(state, w32)``)."""
        return _imperative.create_state_multi_precision(self, index, weight)

    def update(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        """Update ``weight`` (and ``state``) in place from ``grad``; lists allowed."""
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index: Any, weight: Any, grad: Any, state: Any) -> None:
        """``update`` through the float32 master copy when ``multi_precision`` applies."""
        _imperative.update_multi_precision(self, index, weight, grad, state)

    def _update_impl(self, index, weight, grad, state, multi_precision: bool) -> None:
        """The rule applied to NDArrays (a hook: some classes add MXNet's side effects)."""
        _imperative.update_chunk(self, index, weight, grad, state, multi_precision)

    # ------------------------------------------------------------------ update counts
    @property
    def _all_index_update_counts(self) -> dict:
        """``{device_id: {index: count}}`` (MXNet's attribute), pending fused steps included."""
        return self._counts.all(self.begin_num_update)

    @_all_index_update_counts.setter
    def _all_index_update_counts(self, value: dict) -> None:
        self._counts.flush(self.begin_num_update)
        self._counts.tables = value

    @property
    def _index_update_count(self) -> dict:
        """The current device's ``{index: count}`` (MXNet's attribute)."""
        return self._counts.table(self.begin_num_update)

    @_index_update_count.setter
    def _index_update_count(self, value: dict) -> None:
        self._all_index_update_counts[self._counts.device] = value

    def _set_current_context(self, device_id: int) -> None:
        """Switch the per-device update-count dict (replicas do not inflate counts)."""
        self._counts.set_device(device_id, self.begin_num_update)

    def _update_count(self, index: Any) -> None:
        """Increment the count of each index (MXNet's rule); ``num_update`` is the max."""
        indices = index if isinstance(index, (list, tuple)) else [index]
        self.num_update = self._counts.count(indices, self.begin_num_update, self.num_update)

    # ------------------------------------------------------------------ fused core, optax
    fused_supported = fused.ClassOrInstance(fused.supported)

    def fused_init(self, params: dict) -> dict:
        """Initial state ``{name: leaf_state}`` (``create_state_multi_precision``'s layout,
        as JAX arrays) of ``{name: jax.Array}``; records the names, MXNet's update order.

        Raises:
            TypeError: ``params`` is not a dict.
            NotImplementedError: the optimizer has no fused form (see ``fused_supported``).
        """
        return fused.init(self, params)

    # once per training step: the functions themselves (no wrapper call)
    fused_hyper = fused.hyper
    fused_signature = fused.signature

    def fused_update(self, params: dict, grads: dict, state: dict, hyper: dict) -> tuple:
        """Pure, jittable MXNet update of every parameter that has a gradient (a missing or
        None gradient leaves it and its state as they are): ``(new_params, new_state)``.
        ``state`` from :meth:`fused_init`, ``hyper`` from :meth:`fused_hyper` (traceable)."""
        return fused.update(self, params, grads, state, hyper)

    def fused_update_rows(self, params, grads, state, hyper, lazy: frozenset) -> tuple:
        """:meth:`fused_update` where the parameters ``lazy`` hold a row_sparse gradient's
        rows (weight, gradient and state rows): MXNet's sparse kernel for them. A subclass
        that overrides ``fused_update`` keeps its own (its rule on the rows)."""
        if type(self).fused_update is not Optimizer.fused_update:
            return self.fused_update(params, grads, state, hyper)
        return fused.update(self, params, grads, state, hyper, frozenset(lazy))

    def to_optax(self, learning_rate: Any = None):
        """An ``optax.GradientTransformation`` with this optimizer's exact MXNet update;
        ``learning_rate`` (a float or a schedule) overrides the scheduler/``lr`` (an
        ``inject_hyperparams`` hyperparameter). Pytree leaves are named by their ``_``-joined
        path for the multipliers."""
        return _optax.to_optax(self, learning_rate)

    def _optax_extra_init(self) -> Any:
        """Optimizer-wide state carried in ``OptaxState.extra`` (default none)."""
        return None

    def _optax_hyper(self, hyper: dict, names: list, extra: Any) -> tuple:
        """Traced counterpart of an optimizer's own ``fused_hyper`` additions:
        ``(hyper, new_extra)``. Default: unchanged."""
        return hyper, extra

    # ------------------------------------------------------------------ pickling / codec
    def __getstate__(self) -> dict:
        ret = {k: v for k, v in self.__dict__.items() if k not in _CACHES and k != "_counts"}
        ret.update(self._counts.to_attrs(self.begin_num_update))
        ret.pop("param_dict", None)
        ret["_jit_fn"] = None
        return ret

    def __setstate__(self, state: dict) -> None:
        self.__dict__ = state
        self._after_restore()

    def _after_restore(self) -> None:
        d = self.__dict__
        d["param_dict"] = {}
        d["_jit_fn"] = None
        d["_counts"] = UpdateCounts.from_attrs(d)
        _settings.retrack(d)


adopt(Optimizer, _REGISTRY)  # mx.registry.get_register_func(Optimizer, ...) files here


def _owner(cls: type, attr: str) -> type:
    return next(k for k in cls.__mro__ if attr in k.__dict__)


register = Optimizer.register
create = Optimizer.create_optimizer
