"""The functional core every optimizer provides (mxmod addition, no MXNet namesake): the
functions behind ``Optimizer.fused_init``/``fused_hyper``/``fused_update``/
``fused_signature``/``fused_supported``.

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

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from . import _custom
from ._mults import first_name, index_of, name_mults, positions
from ._rates import host_rates, overrides_rates
from ._settings import bump, settings_key, static_key
from .lazy import check_lazy_wd
from .rules import LeafInfo, init_leaf_mp, leaf_step, use_mp


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


class ClassOrInstance:
    """A method that receives ``(cls, instance_or_None, ...)`` (``fused_supported`` answers
    on the class and on an instance)."""

    def __init__(self, fn):
        self.fn = fn
        self.__doc__ = fn.__doc__

    def __get__(self, obj, cls):
        return lambda *a, **kw: self.fn(cls, obj, *a, **kw)


def supported(cls, obj, params: Any = None) -> bool:
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
    if obj is None or not cls._mxnet_style():
        return False
    return _custom.probe(obj, params) is None


def check(opt: Any) -> None:
    """Raise ``NotImplementedError`` saying why ``opt`` has no fused form."""
    if opt._has_rule():
        return
    if not type(opt)._mxnet_style():
        raise NotImplementedError(
            f"optimizer {type(opt).__name__} defines no update: implement _init_leaf/"
            f"_rule, or create_state/update (see mxmod/optimizer/README.md)"
        )
    reason = _custom.probe(opt, None)
    if reason is not None:
        raise NotImplementedError(
            f"optimizer {type(opt).__name__}: its update() cannot run inside a compiled "
            f"step ({reason}); train it through the imperative Updater "
            f"(mx.optimizer.get_updater), or write it without host values"
        )


def init(opt: Any, params: dict) -> dict:
    """See ``Optimizer.fused_init``."""
    if not isinstance(params, dict):
        raise TypeError(f"fused_init expects a dict name -> jax.Array, got {type(params)}")
    opt._counts.names = tuple(params)
    bump(opt)  # the default names of fused_signature changed
    if not opt._has_rule():
        opt._fused_shapes = {n: jax.ShapeDtypeStruct(jnp.shape(w), jnp.result_type(w))
                             for n, w in params.items()}  # fmt: skip
        check(opt)
        return _custom.fused_init(opt, params)
    return {name: init_leaf_mp(opt, jnp.asarray(w)) for name, w in params.items()}


def hyper(opt: Any, names: Any = None) -> dict:
    """``Optimizer.fused_hyper``: count one step on the host and return this step's traced
    values, O(1) in the number of parameters (the per-name counts are written when read).

    Args:
        names: parameter names; default the keys given to the last ``fused_init``.

    Returns:
        ``{'lr': float32 base learning rate, 't': int32 update count, ...extras}``.
    """
    if names is None and not opt._counts.names:
        raise ValueError(
            "fused_hyper() needs the parameter names: call fused_init(params) first "
            "or pass fused_hyper(names=[...])"
        )
    pre = opt._base_lr() if opt._lr_before_count or not opt._has_rule() else None
    t = opt.num_update
    if opt._counts_updates:  # num_update is a step attribute: no settings bookkeeping
        t, opt.__dict__["num_update"] = opt._counts.fused_step(
            names, opt.begin_num_update, opt.num_update
        )
    out = {"lr": np.float32(opt._base_lr()), "t": np.int32(t)}
    if pre is not None:
        out["lr_pre"] = np.float32(pre)  # the rate MXNet's first update reads
    out.update(opt._fused_extras(names, out))
    if overrides_rates(opt):  # a subclass's own _get_lr/_get_wd: per parameter, traced
        names = list(names if names is not None else opt._counts.names)
        lrs, wds = host_rates(opt, [index_of(opt.idx2name, n) for n in names])
        out["lrs"], out["wds"] = dict(zip(names, lrs)), dict(zip(names, wds))
    return out


def update(
    opt: Any, params: dict, grads: dict, state: dict, hyper: dict, lazy: frozenset = frozenset()
) -> tuple:
    """See ``Optimizer.fused_update``. ``lazy``: parameters whose ``params``/``grads``/
    ``state`` hold only a row_sparse gradient's rows: they take the optimizer's sparse
    kernel (``_lazy_rule`` where it differs from ``_rule``), as MXNet's lazy update."""
    check(opt)
    if not opt._has_rule():
        return _custom.fused_update(opt, params, grads, state, hyper)
    extra = {k: hyper[k] for k in opt._extra_keys if k in hyper}
    if len(extra) < len(opt._extra_keys):
        extra = {**opt._traced_extras(hyper, None, None), **extra}
    lr, t = hyper["lr"], hyper["t"]
    own_lrs, own_wds = hyper.get("lrs", {}), hyper.get("wds", {})
    active = [n for n in params if grads.get(n) is not None]
    mults, pos = name_mults(opt, active), positions(opt._counts.names, active)
    first = first_name(opt.idx2name, sorted(active, key=pos.get))
    new_p, new_s = dict(params), dict(state)
    for name in active:
        w = params[name]
        lr_mult, wd = mults[name]
        lr_n = lr if lr_mult == 1.0 else lr * lr_mult
        if name in own_lrs:
            lr_n, wd = own_lrs[name], own_wds[name]
        leaf = LeafInfo(lr_n, wd, t, name, pos[name],
                        extra, None, lr_mult, name == first)  # fmt: skip
        rule = None
        if name in lazy:
            rule = getattr(opt, "_lazy_rule", None)
            if not isinstance(wd, jax.core.Tracer):
                check_lazy_wd(opt, [wd])
        new_p[name], new_s[name] = leaf_step(
            opt, w, grads[name], state[name], leaf, use_mp(opt, w.dtype), rule
        )
    return new_p, new_s


def signature(opt: Any, names: Any = None) -> Signature:
    """``Optimizer.fused_signature``: a hashable key of every trace-time constant
    ``fused_update`` reads for ``names``. Cached: O(1) until a setting changes (attribute
    assignment, ``set_lr_mult``/``set_wd_mult``, in-place edits of ``lr_mult``/``wd_mult``/
    ``idx2name``)."""
    key = settings_key(opt)
    cache = opt.__dict__.get("_sig_cache")
    if cache is None or cache[0] != key:
        cache = (key, {})
        opt.__dict__["_sig_cache"] = cache
    k = None if names is None else tuple(names)
    sig = cache[1].get(k)
    if sig is None:
        sig = cache[1][k] = Signature(_signature_key(opt, k))
    return sig


def _signature_key(opt: Any, names: Any) -> tuple:
    names = list(names if names is not None else opt._counts.names)
    mults = name_mults(opt, names)
    static = static_key(opt) if opt._has_rule() else _custom.static_key(opt)
    return static + (
        bool(opt.multi_precision),
        overrides_rates(opt),
        tuple((n, *mults[n]) for n in names),
        first_name(opt.idx2name, names),
    )
