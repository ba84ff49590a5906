"""``Optimizer.to_optax``: an optimizer's exact MXNet update as an
``optax.GradientTransformation`` (mxmod addition), built on the fused core."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from . import fused


class OptaxState(NamedTuple):
    """State of ``Optimizer.to_optax``: MXNet's update count, the fused state and any
    optimizer-wide state (``None`` except e.g. Nadam's ``m_schedule``)."""

    count: jax.Array
    inner: Any
    extra: Any = None


def to_optax(opt: Any, learning_rate: Any = None) -> optax.GradientTransformation:
    """See ``Optimizer.to_optax``."""
    if opt._has_rule() or not type(opt)._mxnet_style():
        fused.check(opt)
    begin, sched = opt.begin_num_update, None
    if learning_rate is None:
        if opt.lr_scheduler is not None:
            sched = opt.lr_scheduler.jax_schedule()

            def learning_rate(count):
                return sched(count + 1 + begin)
        else:
            learning_rate = float(opt.lr)
    elif callable(learning_rate):

        def sched(n, _fn=learning_rate):
            return _fn(n - 1 - begin)

    static = opt._optax_static()

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
