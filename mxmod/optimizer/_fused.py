"""The functional core every optimizer provides (mxmod addition, no MXNet namesake).

The Module's compiled train step calls, per batch::

    hyper = opt.fused_hyper()                       # host, O(1): count the step, scheduled lr
    key = opt.fused_signature()                     # host, O(1) (cached): re-trace if changed
    params, state = step(params, grads, state, hyper)   # jitted; inside:
        #   opt.fused_update(params, grads, state, hyper)

``hyper`` holds only traced values (``'lr'``: float32 base rate, ``'t'``: int32 update count,
plus the optimizer's per-step extras), so a changing learning rate never recompiles.
Everything else the update reads (rescale_grad, clip_gradient, wd, lr/wd multipliers,
momentum, ...) is a trace-time constant that ``fused_signature()`` covers.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import _custom
from .rules import LeafInfo


class OptaxState(NamedTuple):
    """State of :meth:`FusedMixin.to_optax`: MXNet's update count, the fused state and any
    optimizer-wide state (``None`` except e.g. Nadam's ``m_schedule``)."""

    count: jax.Array
    inner: Any
    extra: Any = None


class Signature:
    """A hashable compile key with its hash computed once (cheap to use as a dict key)."""

    __slots__ = ("key", "_hash")

    def __init__(self, key: tuple):
        self.key = key
        self._hash = hash(key)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: Any) -> bool:
        return self is other or (
            isinstance(other, Signature) and self._hash == other._hash and self.key == other.key
        )

    def __repr__(self) -> str:
        return f"Signature({self.key!r})"


class _ClassOrInstance:
    """A method that receives ``(cls, instance_or_None, ...)``."""

    def __init__(self, fn):
        self.fn = fn
        self.__doc__ = fn.__doc__

    def __get__(self, obj, cls):
        return lambda *a, **kw: self.fn(cls, obj, *a, **kw)


def _fused_supported(cls, obj, params: Any = None) -> bool:
    """Whether ``fused_init``/``fused_update`` can run this optimizer.

    True for every optimizer with a pure ``_rule``. For one written the MXNet way
    (``create_state``/``update`` in NDArray ops), call it on an instance: it traces the
    ``update`` (on ``params``: a dict name -> array or ``jax.ShapeDtypeStruct``; default
    the ``fused_init`` parameters, else a small float32 weight) and answers False when the
    code needs host values (``asnumpy``, ``asscalar``, a Python ``if`` on an array, host
    state changed per step); ``fused_init`` then raises ``NotImplementedError`` saying why.
    On the class such optimizers answer False (nothing to trace).
    """
    if cls._has_rule():
        return True
    if obj is None or not _custom.is_mxnet_style(cls):
        return False
    return _custom.probe(obj, params) is None


class FusedMixin:
    """``fused_init`` / ``fused_update`` / ``fused_hyper`` / ``to_optax`` for Optimizer."""

    fused_supported = _ClassOrInstance(_fused_supported)

    def _check_fused(self) -> None:
        if self._has_rule():
            return
        if not _custom.is_mxnet_style(type(self)):
            raise NotImplementedError(
                f"optimizer {type(self).__name__} defines no update: implement _init_leaf/"
                f"_rule, or create_state/update (see mxmod/optimizer/README.md)"
            )
        reason = _custom.probe(self, None)
        if reason is not None:
            raise NotImplementedError(
                f"optimizer {type(self).__name__}: its update() cannot run inside a compiled "
                f"step ({reason}); train it through the imperative Updater "
                f"(mx.optimizer.get_updater), or write it without host values"
            )

    def fused_init(self, params: dict) -> dict:
        """Initial state ``{name: leaf_state}`` for a dict of ``jax.Array`` parameters.

        ``leaf_state`` has exactly the structure of ``create_state_multi_precision`` (None,
        an array, or a tuple), as JAX arrays. Records the names (their order is MXNet's
        update order) for :meth:`fused_hyper`.

        Raises:
            TypeError: ``params`` is not a dict.
            NotImplementedError: the optimizer has no fused form (see ``fused_supported``).
        """
        if not isinstance(params, dict):
            raise TypeError(f"fused_init expects a dict name -> jax.Array, got {type(params)}")
        self._fused_names = tuple(params)
        if not self._has_rule():
            self._check_fused_shapes(params)
            return _custom.fused_init(self, params)
        return {name: self._init_leaf_mp(jnp.asarray(w)) for name, w in params.items()}

    def _check_fused_shapes(self, params: dict) -> None:
        self._fused_shapes = {n: jax.ShapeDtypeStruct(jnp.shape(w), jnp.result_type(w))
                              for n, w in params.items()}  # fmt: skip
        self._check_fused()

    def fused_hyper(self, names: Any = None) -> dict:
        """Count one step on the host and return this step's traced values. O(1) in the
        number of parameters (the per-name counts are written lazily, see ``_bookkeeping``).

        Args:
            names: parameter names; default the keys given to the last ``fused_init``.

        Returns:
            ``{'lr': float32 base learning rate, 't': int32 update count, ...extras}``.
        """
        if names is None and not self.__dict__.get("_fused_names"):
            raise ValueError(
                "fused_hyper() needs the parameter names: call fused_init(params) first "
                "or pass fused_hyper(names=[...])"
            )
        pre = self._base_lr() if self._lr_before_count or not self._has_rule() else None
        t = self._count_fused_step(names) if self._counts_updates else self.num_update
        hyper = {"lr": np.float32(self._base_lr()), "t": np.int32(t)}
        if pre is not None:
            hyper["lr_pre"] = np.float32(pre)  # the rate MXNet's first update reads
        hyper.update(self._fused_extras(names, hyper))
        return hyper

    def _name_mults(self, names: Any) -> dict:
        """``{name: (lr_mult, wd)}`` resolved as MXNet resolves them for name keys: the
        name in ``param_dict``, then in the multiplier dict, then any index of that name."""
        by_name: dict = {}
        for idx, n in self.idx2name.items():
            by_name.setdefault(n, []).append(idx)

        def mult(name: str, mults: dict, attr: str) -> float:
            if name in self.param_dict:
                return float(getattr(self.param_dict[name], attr))
            if name in mults:
                return float(mults[name])
            for idx in by_name.get(name, ()):
                if idx in mults:
                    return float(mults[idx])
            return 1.0

        return {
            n: (mult(n, self.lr_mult, "lr_mult"), float(self.wd) * mult(n, self.wd_mult, "wd_mult"))
            for n in names
        }

    def _first_name(self, names: list) -> Any:
        """The name MXNet updates first: lowest integer index in ``idx2name`` (jit sorts dict
        keys, so the dict order is not MXNet's order), else the first of ``names``."""
        rank: dict = {}
        for idx, n in self.idx2name.items():
            if isinstance(idx, int) and (n not in rank or idx < rank[n]):
                rank[n] = idx
        order = sorted(range(len(names)), key=lambda i: (rank.get(names[i], math.inf), i))
        return names[order[0]] if names else None

    def _positions(self, names: list) -> dict:
        """MXNet's update order: the ``fused_init`` order, unknown names after it."""
        fused = {n: i for i, n in enumerate(self.__dict__.get("_fused_names", ()))}
        return {n: fused.get(n, len(fused) + j) for j, n in enumerate(names)}

    def fused_update(self, params: dict, grads: dict, state: dict, hyper: dict) -> tuple:
        """Pure, jittable MXNet update of every parameter that has a gradient.

        Args:
            params: ``{name: jax.Array}``.
            grads: ``{name: jax.Array}``; a missing or None entry leaves that parameter
                (and its state) unchanged.
            state: from :meth:`fused_init` (or a previous call).
            hyper: from :meth:`fused_hyper` (values may be tracers).

        Returns:
            ``(new_params, new_state)`` with the same structure and dtypes.
        """
        if not self._has_rule():
            self._check_fused()
            return _custom.fused_update(self, params, grads, state, hyper)
        self._check_fused()
        extra = {k: hyper[k] for k in self._extra_keys if k in hyper}
        if len(extra) < len(self._extra_keys):
            extra = {**self._traced_extras(hyper, None, None), **extra}
        lr, t = hyper["lr"], hyper["t"]
        active = [n for n in params if grads.get(n) is not None]
        mults, pos = self._name_mults(active), self._positions(active)
        first = self._first_name(sorted(active, key=pos.get))
        new_p, new_s = dict(params), dict(state)
        for name in active:
            w = params[name]
            lr_mult, wd = mults[name]
            leaf = LeafInfo(lr if lr_mult == 1.0 else lr * lr_mult, wd, t, name, pos[name],
                            extra, None, lr_mult, name == first)  # fmt: skip
            new_p[name], new_s[name] = self._leaf_step(
                w, grads[name], state[name], leaf, self._use_mp(w.dtype)
            )
        return new_p, new_s

    def fused_signature(self, names: Any = None) -> Signature:
        """Hashable key of every trace-time constant ``fused_update`` reads for ``names``.

        Cached: O(1) until a setting changes (attribute assignment, ``set_lr_mult``/
        ``set_wd_mult``, in-place edits of ``lr_mult``/``wd_mult``/``idx2name``).
        """
        key = self._settings_key()
        cache = self.__dict__.get("_sig_cache")
        if cache is None or cache[0] != key:
            cache = (key, {})
            self.__dict__["_sig_cache"] = cache
        k = None if names is None else tuple(names)
        sig = cache[1].get(k)
        if sig is None:
            sig = cache[1][k] = Signature(self._compute_signature(k))
        return sig

    def _compute_signature(self, names: Any) -> tuple:
        names = list(names if names is not None else self.__dict__.get("_fused_names", ()))
        mults = self._name_mults(names)
        static = self._static_key() if self._has_rule() else _custom.static_key(self)
        return static + (
            bool(self.multi_precision),
            tuple((n, *mults[n]) for n in names),
            self._first_name(names),
        )

    def _optax_extra_init(self) -> Any:
        """Optimizer-wide state carried in ``OptaxState.extra`` (default none)."""
        return None

    def _optax_hyper(self, hyper: dict, names: list, extra: Any) -> tuple:
        """Traced counterpart of an optimizer's own ``fused_hyper`` additions:
        ``(hyper, new_extra)``. Default: unchanged."""
        return hyper, extra

    def to_optax(self, learning_rate: Any = None):
        """An ``optax.GradientTransformation`` with this optimizer's exact MXNet update.

        The rate is an ``optax.inject_hyperparams`` hyperparameter (read or set
        ``state.hyperparams['learning_rate']``). By default it follows ``lr_scheduler`` (its
        jittable closed form, counting from ``begin_num_update + 1`` like MXNet) or ``lr``.
        Parameters may be any pytree; leaves are named by joining their path with ``_``
        (``{'fc': {'weight': w}}`` -> ``fc_weight``) for ``lr_mult``/``wd_mult`` lookups.

        Args:
            learning_rate: override: a float or an optax schedule ``count -> lr``.
        """
        import optax

        if self._has_rule() or not _custom.is_mxnet_style(type(self)):
            self._check_fused()
        opt, begin, sched = self, self.begin_num_update, None
        if learning_rate is None:
            if self.lr_scheduler is not None:
                sched = self.lr_scheduler.jax_schedule()

                def learning_rate(count):
                    return sched(count + 1 + begin)
            else:
                learning_rate = float(self.lr)
        elif callable(learning_rate):

            def sched(n, _fn=learning_rate):
                return _fn(n - 1 - begin)

        static = self._optax_static()

        def factory(learning_rate):
            def init(params):
                flat, _ = _named_leaves(params)
                count = jnp.asarray(opt.begin_num_update, jnp.int32)
                return OptaxState(count, opt.fused_init(flat), opt._optax_extra_init())

            def update(updates, state, params=None):
                if params is None:
                    raise ValueError(
                        f"{type(opt).__name__}.to_optax() needs params: call "
                        f"tx.update(grads, state, params)"
                    )
                flat_p, treedef = _named_leaves(params)
                flat_g, _ = _named_leaves(updates)
                t = state.count + 1
                hyper = {"lr": jnp.asarray(learning_rate, jnp.float32), "t": t}
                hyper, extra = opt._optax_hyper(hyper, list(flat_p), state.extra)
                hyper = {**opt._traced_extras(hyper, sched, static), **hyper}
                new_p, inner = opt.fused_update(flat_p, flat_g, state.inner, hyper)
                deltas = [new_p[n] - flat_p[n] for n in flat_p]
                return treedef.unflatten(deltas), OptaxState(t, inner, extra)

            return optax.GradientTransformation(init, update)

        # float32 rate whatever the parameters' dtype (inject_hyperparams would cast to it)
        return optax.inject_hyperparams(factory, hyperparam_dtype=jnp.float32)(
            learning_rate=learning_rate
        )


def _path_name(path: tuple) -> str:
    parts = []
    for k in path:
        for attr in ("key", "name", "idx"):
            if hasattr(k, attr):
                parts.append(str(getattr(k, attr)))
                break
        else:
            parts.append(str(k))
    return "_".join(parts) or "param"


def _named_leaves(tree: Any) -> tuple[dict, Any]:
    """``({name: leaf}, treedef)`` with names from the leaves' paths."""
    leaves, treedef = jax.tree_util.tree_flatten_with_path(tree)
    out: dict = {}
    for path, leaf in leaves:
        name = _path_name(path)
        if name in out:
            raise ValueError(f"two parameters flatten to the same name {name!r}; rename one")
        out[name] = leaf
    return out, treedef
