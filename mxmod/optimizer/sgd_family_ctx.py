"""Helpers for the SGD-family optimizers (no MXNet namesake).

* hyperparameter checks that raise ``ValueError`` naming the bad argument;
* :class:`LeafContextMixin`: gives a pure ``_rule`` what MXNet's per-parameter code reads
  besides ``(w, g, state, lr, wd, t)`` — the parameter's name (LARS skips biases and norms),
  its position in the update call, and per-step traced values (LARS's corrected momentum,
  SGLD's random key, LBSGD's pre-count learning rate). It is built on the base class's
  hooks only (``fused_hyper``/``fused_update``/``_update_impl``/``to_optax``), so
  ``optimizer.py`` and ``_fused.py`` are unchanged.

Per-step values ("extras") come from, in order of preference:

1. the ``hyper`` dict: :meth:`fused_hyper` adds ``_host_extras()`` (host side, after the
   step is counted) and the imperative path passes the same values as traced arguments, so
   new values never recompile;
2. otherwise (``to_optax``, or a hand-built ``hyper``) ``_traced_extras(hyper)`` derives them
   inside the graph from ``hyper['t']``/``hyper['lr']`` and the schedule ``to_optax`` uses.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax

__all__ = ["LeafContext", "LeafContextMixin", "check_range", "check_momentum"]


def check_range(opt: str, name: str, value: Any, lo: float, hi: float | None = None,
                hi_open: bool = True) -> None:
    """Raise ``ValueError`` unless ``lo <= value`` (and ``value < hi`` / ``<= hi``)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{opt}: {name} must be a number, got {value!r}") from None
    ok = not math.isnan(v) and v >= lo
    if hi is not None:
        ok = ok and (v < hi if hi_open else v <= hi)
    if not ok:
        rng = f"in [{lo:g}, {hi:g}{')' if hi_open else ']'}" if hi is not None else f">= {lo:g}"
        raise ValueError(f"{opt}: {name} must be {rng}, got {value!r}")


def check_momentum(opt: str, momentum: Any) -> None:
    check_range(opt, "momentum", momentum, 0.0, 1.0)


class LeafContext(NamedTuple):
    """What the rule of one parameter may read besides its arguments (trace-time)."""

    name: str | None  # parameter name (fused) or idx2name[index] / str(index) (imperative)
    pos: int  # position among the parameters updated by this call / step
    extra: dict  # this step's traced extras
    low_dtype: Any  # weight dtype when the rule runs on a float32 master copy, else None
    lr_mult: float  # this parameter's lr multiplier (fused path; 1.0 imperatively)
    first: bool  # the first parameter MXNet would update in this step (lowest index)


_NO_CTX = LeafContext(None, 0, {}, None, 1.0, True)


class LeafContextMixin:
    """Adds ``self._leaf`` (a :class:`LeafContext`) while a rule runs. See module docstring."""

    _extra_keys: tuple = ()  # keys of the per-step extras the rule reads
    _ctx_names = False  # the rule reads parameter names (part of the compile key)

    # ------------------------------------------------------------------ hooks
    def _host_extras(self) -> dict:
        """Host side, once per imperative update call, after counting."""
        return {}

    def _fused_extras(self, hyper: dict) -> dict:
        """Host side, once per fused step (after ``fused_hyper`` counted it)."""
        return self._host_extras()

    def _traced_extras(self, hyper: dict, sched: Any) -> dict:
        """Jittable fallback. ``sched``: ``num_update -> lr`` of ``to_optax`` or None."""
        return {}

    @property
    def _leaf(self) -> LeafContext:
        return self.__dict__.get("_leaf_ctx", _NO_CTX)

    # ------------------------------------------------------------------ fused path
    def fused_hyper(self, names: Any = None) -> dict:
        hyper = super().fused_hyper(names)
        hyper.update(self._fused_extras(hyper))
        return hyper

    def fused_update(self, params: dict, grads: dict, state: dict, hyper: dict) -> tuple:
        names = [n for n in params if grads.get(n) is not None]
        extra = {k: hyper[k] for k in self._extra_keys if k in hyper}
        if len(extra) < len(self._extra_keys):
            info = self.__dict__.get("_optax_sched")
            fallback = self._traced_extras(hyper, info[0] if info else None)
            extra.update({k: v for k, v in fallback.items() if k not in extra})
        mults = self._name_mults(names)
        call = {"names": names, "extra": extra, "pos": 0, "first": self._first_name(names),
                "lr_mult": [mults[n][0] for n in names]}  # fmt: skip
        with _Scope(self, "_ctx_call", call):
            return super().fused_update(params, grads, state, hyper)

    def _leaf_step(self, w, g, s, lr, wd, t, mp: bool):
        call = self.__dict__.get("_ctx_call")
        if call is None:
            ctx = LeafContext(None, 0, {}, w.dtype if mp else None, 1.0, True)
        else:
            pos = call["pos"]
            call["pos"] = pos + 1
            names, mults = call["names"], call.get("lr_mult")
            name = names[pos] if pos < len(names) else None
            first = name == call["first"] if "first" in call else pos == 0
            ctx = LeafContext(name, pos, call["extra"], w.dtype if mp else None,
                              mults[pos] if mults else 1.0, first)  # fmt: skip
        with _Scope(self, "_leaf_ctx", ctx):
            return super()._leaf_step(w, g, s, lr, wd, t, mp)

    def _first_name(self, names: list) -> Any:
        """The name MXNet updates first: lowest integer index in ``idx2name`` (jit sorts dict
        keys, so the dict order is not MXNet's order), else the first in ``names``."""
        rank: dict = {}
        for idx, n in self.idx2name.items():
            if isinstance(idx, int) and (n not in rank or idx < rank[n]):
                rank[n] = idx
        order = sorted(range(len(names)), key=lambda i: (rank.get(names[i], math.inf), i))
        return names[order[0]] if names else None

    # ------------------------------------------------------------------ imperative path
    def _update_impl(self, index, weight, grad, state, multi_precision: bool) -> None:
        if not isinstance(self._jit_fn, _CtxJit):
            self._jit_fn = _CtxJit(self)
        if self._ctx_names:
            indices = index if isinstance(index, (list, tuple)) else [index]
            self._jit_fn.names = tuple(self._index_name(i) for i in indices)
        super()._update_impl(index, weight, grad, state, multi_precision)

    def _index_name(self, index: Any) -> str:
        return self.idx2name[index] if index in self.idx2name else str(index)

    def _apply_ctx(self, key, ws, gs, ss, lrs, wds, ts, extra):
        static, names = key
        call = {"names": list(names or ()), "extra": extra, "pos": 0}
        with _Scope(self, "_ctx_call", call):
            return self._apply_many(static, ws, gs, ss, lrs, wds, ts)

    # ------------------------------------------------------------------ optax
    def to_optax(self, learning_rate: Any = None):
        """``Optimizer.to_optax``; the per-step extras are derived in the graph."""
        import optax

        tx = super().to_optax(learning_rate)
        begin = self.begin_num_update
        if learning_rate is None and self.lr_scheduler is not None:
            sched = self.lr_scheduler.jax_schedule()
        elif callable(learning_rate):
            def sched(n, _fn=learning_rate):
                return _fn(n - 1 - begin)
        else:
            sched = None
        info = (sched, self._optax_static())
        opt = self

        def update(updates, state, params=None):
            with _Scope(opt, "_optax_sched", info):
                return tx.update(updates, state, params)

        return optax.GradientTransformation(tx.init, update)

    def _optax_static(self) -> Any:
        """Anything ``to_optax`` fixes at creation (SGLD: its base key)."""
        return None


class _Scope:
    """Set ``obj.<attr>`` for the duration of a ``with`` block (restores the old value)."""

    def __init__(self, obj: Any, attr: str, value: Any):
        self.obj, self.attr, self.value = obj, attr, value

    def __enter__(self):
        self.old = self.obj.__dict__.get(self.attr, _MISSING)
        self.obj.__dict__[self.attr] = self.value

    def __exit__(self, *exc):
        if self.old is _MISSING:
            self.obj.__dict__.pop(self.attr, None)
        else:
            self.obj.__dict__[self.attr] = self.old


_MISSING = object()


class _CtxJit:
    """Stands in for ``Optimizer._jit_fn``: same call, plus names and traced extras."""

    def __init__(self, opt: Any):
        self.opt = opt
        self.names: tuple | None = None
        self._fn = jax.jit(opt._apply_ctx, static_argnums=(0,))

    def __call__(self, static, ws, gs, ss, lrs, wds, ts):
        extra = self.opt._host_extras()
        return self._fn((static, self.names), ws, gs, ss, lrs, wds, ts, extra)

    def _cache_size(self) -> int:
        return self._fn._cache_size()
