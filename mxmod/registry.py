"""One small registry type shared by operators, optimizers, initializers and metrics."""

from __future__ import annotations

import json
import sys
import warnings
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


# ---------------------------------------------------------------- MXNet's mx.registry
_BY_BASE: dict = {}  # base class -> its Registry (the metric, initializer... tables adopt theirs)


def adopt(base_class: type, table: Registry) -> None:
    """Make ``table`` the registry of ``base_class`` for the ``get_*_func`` functions, so a
    class registered through them is what ``mx.metric.create`` (...) finds."""
    _BY_BASE[base_class] = table


def _table(base_class: type, nickname: str) -> Registry:
    if base_class not in _BY_BASE:
        _BY_BASE[base_class] = Registry(nickname, case_sensitive=False)
    return _BY_BASE[base_class]


def get_registry(base_class: type) -> dict:
    """A copy of the name -> class table of ``base_class`` (empty when it has none)."""
    table = _BY_BASE.get(base_class)
    return dict(table.items()) if table is not None else {}


def get_register_func(base_class: type, nickname: str) -> Callable:
    """MXNet's ``registry.get_register_func``: ``register(klass, name=None)`` files a
    subclass of ``base_class`` under its lower-cased name (a taken name is overridden, with
    a warning)."""
    table = _table(base_class, nickname)

    def register(klass: type, name: str | None = None) -> type:
        if not (isinstance(klass, type) and issubclass(klass, base_class)):
            raise TypeError(f"can only register subclasses of {base_class.__name__}, got {klass!r}")
        name = (name or klass.__name__).lower()
        old = table.find(name)
        if old is not None and old is not klass:
            warnings.warn(
                f"New {nickname} {klass.__module__}.{klass.__name__} registered with name "
                f"{name} is overriding existing {nickname} {old.__module__}.{old.__name__}",
                UserWarning,
                stacklevel=2,
            )
        table.register(name, klass, override=True)
        return klass

    register.__doc__ = f"Register a {nickname} class (a subclass of {base_class.__name__})."
    return register


def get_alias_func(base_class: type, nickname: str) -> Callable:
    """MXNet's ``registry.get_alias_func``: ``@alias('a', 'b')`` registers more names."""
    register = get_register_func(base_class, nickname)

    def alias(*aliases: str) -> Callable:
        def reg(klass: type) -> type:
            for name in aliases:
                register(klass, name)
            return klass

        return reg

    return alias


def get_create_func(base_class: type, nickname: str) -> Callable:
    """MXNet's ``registry.get_create_func``: ``create(name_or_instance_or_config, *args,
    **kwargs)``; a config is a dict (``{nickname: name, ...}``) or the JSON of
    ``[name, kwargs]`` or of such a dict."""
    table = _table(base_class, nickname)

    def create(*args: Any, **kwargs: Any) -> Any:
        if args:
            name, args = args[0], args[1:]
        elif nickname in kwargs:
            name = kwargs.pop(nickname)
        else:
            raise TypeError(f"create() needs the {nickname} name as its first argument")
        if isinstance(name, base_class):
            if args or kwargs:
                raise TypeError(
                    f"{nickname} is already an instance of {base_class.__name__}; additional "
                    "arguments are invalid"
                )
            return name
        if isinstance(name, dict):
            return create(**name)
        if not isinstance(name, str):
            raise TypeError(f"{nickname} must be a name, got {type(name).__name__}")
        if name.startswith("[") or name.startswith("{"):
            if args or kwargs:
                raise TypeError(f"a JSON {nickname} config takes no further arguments")
            config = json.loads(name)
            if isinstance(config, list):  # [name, kwargs]
                return create(config[0], **config[1])
            return create(**config)
        cls = table.find(name.lower())
        if cls is None:
            raise ValueError(
                f"{name.lower()} is not registered; register it with "
                f"{nickname}.register first (known: {', '.join(table.names())})"
            )
        return cls(*args, **kwargs)

    create.__doc__ = f"Create a {nickname} instance from a name, a config or an instance."
    return create
