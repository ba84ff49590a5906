"""Automatic node names (``fullyconnected0``) and attribute scopes, as ``mx.name``
and ``mx.AttrScope`` provide them in MXNet."""

from __future__ import annotations

import threading
from typing import Optional

HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage")
_local = threading.local()


def dunder(key: str) -> str:
    """``lr_mult`` -> ``__lr_mult__``; other keys unchanged."""
    return f"__{key}__" if key in HIDDEN_KEYS else key


class NameManager:
    """Gives ``<hint><counter>`` names; ``with NameManager():`` starts fresh counters."""

    def __init__(self):
        self._counter: dict[str, int] = {}
        self._old: Optional[NameManager] = None

    def get(self, name: Optional[str], hint: str) -> str:
        if name:
            return name
        n = self._counter.get(hint, 0)
        self._counter[hint] = n + 1
        return f"{hint}{n}"

    def __enter__(self):
        self._old = NameManager.current()
        _local.name_manager = self
        return self

    def __exit__(self, *exc):
        _local.name_manager = self._old

    @staticmethod
    def current() -> "NameManager":
        nm = getattr(_local, "name_manager", None)
        if nm is None:
            nm = _local.name_manager = NameManager()
        return nm


class Prefix(NameManager):
    """Prepends ``prefix`` to every name, given or automatic."""

    def __init__(self, prefix: str):
        super().__init__()
        self._prefix = prefix

    def get(self, name: Optional[str], hint: str) -> str:
        return self._prefix + super().get(name, hint)


class AttrScope:
    """Attributes merged into every symbol created inside ``with AttrScope(...)``."""

    def __init__(self, **kwargs):
        for v in kwargs.values():
            if not isinstance(v, str):
                raise ValueError(
                    "AttrScope values must be strings, e.g. AttrScope(ctx_group='dev1')"
                )
        self._attr = kwargs
        self._old: Optional[AttrScope] = None

    def get(self, attr: Optional[dict]) -> dict:
        out = dict(self._attr)
        if attr:
            out.update(attr)
        return {dunder(k): v for k, v in out.items()}

    def __enter__(self):
        self._old = AttrScope.current()
        merged = dict(self._old._attr)
        merged.update(self._attr)
        self._attr = merged
        _local.attr_scope = self
        return self

    def __exit__(self, *exc):
        _local.attr_scope = self._old

    @staticmethod
    def current() -> "AttrScope":
        sc = getattr(_local, "attr_scope", None)
        if sc is None:
            sc = _local.attr_scope = AttrScope()
        return sc
