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


class _ThreadScope:
    """A ``with`` scope; the innermost one entered in this thread is ``current()`` (until
    then a fresh instance of the class that names the thread-local slot: a NameManager,
    not a Prefix)."""

    _slot = ""

    def __enter__(self):
        self._old = self.current()
        self._entered(self._old)
        setattr(_local, self._slot, self)
        return self

    def __exit__(self, *exc):
        setattr(_local, self._slot, self._old)

    def _entered(self, outer) -> None:
        """Hook: combine with the enclosing scope ``outer``."""

    @classmethod
    def current(cls):
        scope = getattr(_local, cls._slot, None)
        if scope is None:
            root = next(k for k in cls.__mro__ if _ThreadScope in k.__bases__)
            scope = root()
            setattr(_local, cls._slot, scope)
        return scope


class NameManager(_ThreadScope):
    """Gives ``<hint><counter>`` names; ``with NameManager():`` starts fresh counters."""

    _slot = "name_manager"

    def __init__(self):
        self._counter: dict[str, int] = {}
        self._old: Optional[NameManager] = None

    def get(self, name: Optional[str], hint: str) -> str:
        if name:
            return name
        n = self._counter.get(hint, 0)
        self._counter[hint] = n + 1
        return f"{hint}{n}"


class Prefix(NameManager):
    """Prepends ``prefix`` to every name, given or automatic."""

    def __init__(self, prefix: str):
        super().__init__()
        self._prefix = prefix

    def get(self, name: Optional[str], hint: str) -> str:
        return self._prefix + super().get(name, hint)


class AttrScope(_ThreadScope):
    """Attributes merged into every symbol created inside ``with AttrScope(...)``."""

    _slot = "attr_scope"

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

    def _entered(self, outer: "AttrScope") -> None:
        self._attr = {**outer._attr, **self._attr}
