"""One small registry type shared by operators, optimizers, initializers and metrics."""

from __future__ import annotations

import sys
from typing import Any, Callable, Iterable


class Registry:
    """Name -> object table. Registering a taken name raises unless ``override=True``;
    lookups of unknown names list the known ones."""

    def __init__(self, kind: str, case_sensitive: bool = True):
        self.kind = kind
        self._items: dict[str, Any] = {}
        self._case_sensitive = case_sensitive

    def _key(self, name: str) -> str:
        return name if self._case_sensitive else name.lower()

    def register(
        self, name: str, obj: Any, aliases: Iterable[str] = (), override: bool = False
    ) -> Any:
        for n in (name, *aliases):
            k = self._key(n)
            if k in self._items and self._items[k] is not obj and not override:
                raise ValueError(
                    f"{self.kind} {n!r} is already registered; pass override=True to replace it"
                )
            self._items[k] = obj
        return obj

    def decorator(
        self, name: str | None = None, aliases: Iterable[str] = ()
    ) -> Callable[[Any], Any]:
        def wrap(obj: Any) -> Any:
            return self.register(name or obj.__name__, obj, aliases)

        return wrap

    def __contains__(self, name: str) -> bool:
        return self._key(name) in self._items

    def get(self, name: str) -> Any:
        try:
            return self._items[self._key(name)]
        except KeyError:
            known = ", ".join(sorted(self._items))
            raise ValueError(
                f"unknown {self.kind} {name!r}; known {self.kind}s are: {known}"
            ) from None

    def find(self, name: str) -> Any | None:
        return self._items.get(self._key(name))

    def names(self) -> list[str]:
        return sorted(self._items)

    def items(self):
        return self._items.items()


def prefixed_module(module: str, registry: Registry, prefix: str, make: Callable[[str], Any]):
    """``(names, __getattr__, __dir__)`` of a module whose attribute ``<Name>`` is
    ``make(<Name>)`` for every ``<prefix><Name>`` in ``registry`` (``mx.sym.contrib.<Name>``
    for ``_contrib_<Name>``); made objects are kept in the module."""

    def names() -> list:
        """The ``<Name>`` of every ``<prefix><Name>`` entry (operator or alias)."""
        return sorted(n[len(prefix) :] for n, _ in registry.items() if n.startswith(prefix))

    def getattr_(name: str) -> Any:
        if name.startswith("__") or (prefix + name) not in registry:
            raise AttributeError(
                f"{module} has no operator {name!r}: no operator named "
                f"'{prefix}{name}' is registered (operators here: {', '.join(names())})"
            )
        obj = make(name)
        obj.__name__ = name
        setattr(sys.modules[module], name, obj)
        return obj

    def dir_() -> list:
        return sorted(set(vars(sys.modules[module])) | set(names()))

    return names, getattr_, dir_
