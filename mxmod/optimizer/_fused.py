"""The functional core every built-in optimizer provides (mxmod addition, no MXNet namesake).

The Module's compiled train step calls, per batch::

    hyper = opt.fused_hyper()                       # host: count the step, scheduled lr
    params, state = step(params, grads, state, hyper)   # jitted; inside:
        #   opt.fused_update(params, grads, state, hyper)

``hyper`` holds only traced scalars (``'lr'``: float32 base rate, ``'t'``: int32 update
count), so a changing learning rate never recompiles. Everything else the update reads
(rescale_grad, clip_gradient, wd, lr/wd multipliers, momentum, ...) is a trace-time constant;
``fused_signature()`` returns all of it as a hashable key so a caller can re-trace when the
user changes a setting.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


class OptaxState(NamedTuple):
    """State of :meth:`FusedMixin.to_optax`: MXNet's update count, the fused state and any
    optimizer-wide state (``None`` except e.g. Nadam's ``m_schedule``)."""

    count: jax.Array
    inner: Any
    extra: Any = None


class FusedMixin:
    """``fused_init`` / ``fused_update`` / ``fused_hyper`` / ``to_optax`` for Optimizer."""

    @classmethod
    def fused_supported(cls) -> bool:
        """True when the class's update is its pure ``_rule`` (not an overridden ``update``)."""
        from .optimizer import Optimizer

        def owner(attr: str) -> type:
            return next(k for k in cls.__mro__ if attr in k.__dict__)

        rule_owner = owner("_rule")
        if rule_owner is Optimizer:
            return False
        imperative = ("update", "update_multi_precision", "create_state",
                      "create_state_multi_precision")  # fmt: skip
        return all(issubclass(rule_owner, owner(a)) for a in imperative)

    def _check_fused(self) -> None:
        if not self.fused_supported():
            raise NotImplementedError(
                f"optimizer {type(self).__name__} defines its own update(); it has no fused "
                f"form. Use the imperative Updater (mx.optimizer.get_updater) or implement "
                f"_init_leaf/_rule (see mxmod/optimizer/README.md)"
            )

    def fused_init(self, params: dict) -> dict:
        """Initial state ``{name: leaf_state}`` for a dict of ``jax.Array`` parameters.

        ``leaf_state`` has exactly the structure of ``create_state_multi_precision`` (None,
        an array, or a tuple), as JAX arrays. Records the names for :meth:`fused_hyper`.
        """
        self._check_fused()
        if not isinstance(params, dict):
            raise TypeError(f"fused_init expects a dict name -> jax.Array, got {type(params)}")
        self._fused_names = tuple(params)
        return {name: self._init_leaf_mp(jnp.asarray(w)) for name, w in params.items()}

    def fused_hyper(self, names: Any = None) -> dict:
        """Count one step on the host and return this step's traced scalars.

        Increments the update count of every parameter name (as the Updater would) and
        ``num_update``, then evaluates the scheduler.

        Args:
            names: parameter names; default the keys given to the last ``fused_init``.

        Returns:
            ``{'lr': float32 base learning rate, 't': int32 update count}``.
        """
        if names is None:
            names = getattr(self, "_fused_names", None)
            if not names:
                raise ValueError(
                    "fused_hyper() needs the parameter names: call fused_init(params) first "
                    "or pass fused_hyper(names=[...])"
                )
        names = list(names)
        if self._counts_updates:
            self._update_count(names)
        counts = [self._index_update_count.get(n, self.num_update) for n in names]
        lr = self._base_lr()
        return {"lr": np.float32(lr), "t": np.int32(max(counts) if counts else self.num_update)}

    def _name_mults(self, names: Any) -> dict:
        """``{name: (lr_mult, wd)}`` resolved as MXNet resolves them for name keys."""
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
        self._check_fused()
        lr, t = hyper["lr"], hyper["t"]
        leaf_t = hyper.get("leaf_t")  # optional per-name t (an optimizer's own fused_hyper)
        mults = self._name_mults(params)
        new_p, new_s = dict(params), dict(state)
        for name, w in params.items():
            g = grads.get(name)
            if g is None:
                continue
            lr_mult, wd = mults[name]
            lr_i = lr if lr_mult == 1.0 else lr * lr_mult
            new_p[name], new_s[name] = self._leaf_step(
                w, g, state[name], lr_i, wd, t if leaf_t is None else leaf_t[name],
                self._use_mp(w.dtype),
            )
        return new_p, new_s

    def fused_signature(self, names: Any = None) -> tuple:
        """Hashable key of every trace-time constant ``fused_update`` reads for ``names``."""
        names = list(names if names is not None else getattr(self, "_fused_names", ()))
        mults = self._name_mults(names)
        return self._static_key() + (
            bool(self.multi_precision),
            tuple((n, *mults[n]) for n in names),
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

        self._check_fused()
        opt = self
        if learning_rate is None:
            if self.lr_scheduler is not None:
                fn, begin = self.lr_scheduler.jax_schedule(), self.begin_num_update

                def learning_rate(count):
                    return fn(count + 1 + begin)
            else:
                learning_rate = float(self.lr)

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

