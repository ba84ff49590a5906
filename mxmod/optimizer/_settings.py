"""An optimizer's settings version: what keys the fused signature and the compile caches.

``fused_signature()`` is cached; every attribute assignment bumps ``_settings_version``
(:func:`note_assignment`) except the per-step attributes in :data:`STEP_ATTRS` and a class's
``_step_attrs``, and ``lr_mult``/``wd_mult``/``idx2name`` are :class:`TrackedDict` s whose
in-place edits (``opt.lr_mult['fc_weight'] = 2``) bump their own version. Objects in
``param_dict`` (gluon parameters) are re-read whenever ``param_dict`` is non-empty.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# assigned per step or owned by the bookkeeping: never a setting
STEP_ATTRS = frozenset(
    {
        "lr",
        "num_update",
        "_counts",
        "_all_index_update_counts",
        "_index_update_count",
        "_sig_cache",
        "_jit_fn",
        "_settings_version",
        "_custom_probe",
    }
)
TRACKED = ("lr_mult", "wd_mult", "idx2name")  # (settings_key spells them out)


class TrackedDict(dict):
    """A dict that counts its in-place modifications (``_version``)."""

    _version = 0

    def _bump(self) -> None:
        self._version = self._version + 1

    def __setitem__(self, k, v):
        super().__setitem__(k, v)
        self._bump()

    def __delitem__(self, k):
        super().__delitem__(k)
        self._bump()

    def __ior__(self, other):
        out = super().__ior__(other)
        self._bump()
        return out

    def update(self, *a, **kw):
        super().update(*a, **kw)
        self._bump()

    def setdefault(self, k, v=None):
        self._bump()
        return super().setdefault(k, v)

    def pop(self, *a):
        self._bump()
        return super().pop(*a)

    def popitem(self):
        self._bump()
        return super().popitem()

    def clear(self):
        super().clear()
        self._bump()

    def __reduce__(self):  # pickles as a plain dict; the optimizer re-wraps it
        return (dict, (dict(self),))


def tracked(name: str, value: Any) -> Any:
    """``value`` as the optimizer stores it: the tracked dicts wrapped."""
    return TrackedDict(value) if name in TRACKED and type(value) is dict else value


def note_assignment(opt: Any, name: str) -> None:
    """Bump the settings version unless ``name`` is a per-step attribute."""
    if name not in STEP_ATTRS and name not in opt._step_attrs:
        bump(opt)


def bump(opt: Any) -> None:
    d = opt.__dict__
    d["_settings_version"] = d.get("_settings_version", 0) + 1


def retrack(d: dict) -> None:
    """After unpickling/decoding: plain dicts back to tracked ones, caches dropped."""
    for k in TRACKED:
        if type(d.get(k)) is dict:
            d[k] = TrackedDict(d[k])
    d.pop("_sig_cache", None)


def settings_key(opt: Any) -> tuple:
    """Changes whenever a setting the fused signature may read changes (O(1) unless
    ``param_dict`` is used)."""
    d = opt.__dict__
    # written out (no generator): this runs once per training step
    key = (
        d.get("_settings_version", 0),
        getattr(d.get("lr_mult"), "_version", -1),
        getattr(d.get("wd_mult"), "_version", -1),
        getattr(d.get("idx2name"), "_version", -1),
    )
    pd = d.get("param_dict")
    if pd:
        key += tuple(
            (k, getattr(v, "lr_mult", None), getattr(v, "wd_mult", None)) for k, v in pd.items()
        )
    return key


def static_key(opt: Any) -> tuple:
    """Everything (besides lr/wd/t/extras) a built-in rule reads: part of every compile key.
    Cached until a setting changes; the hyperparameter checks run again when one did."""
    cache = opt.__dict__.get("_static_cache")
    key = settings_key(opt)
    if cache is None or cache[0] != key:
        opt._validate()
        extra = tuple(hashable(getattr(opt, a)) for a in opt._rule_attrs)
        static = (type(opt), float(opt.rescale_grad), hashable(opt.clip_gradient))
        cache = (key, static + extra)
        opt.__dict__["_static_cache"] = cache
    return cache[1]


def hashable(x: Any) -> Any:
    if isinstance(x, (list, tuple)):
        return tuple(hashable(v) for v in x)
    if isinstance(x, np.generic):
        return x.item()
    return x
