"""One small registry type shared by operators, optimizers, initializers and metrics."""

from __future__ import annotations

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
