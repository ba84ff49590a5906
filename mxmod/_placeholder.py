"""Stand-ins for MXNet packages mxmod does not provide, so that importing them works.

MXNet scripts often import ``mx.gluon`` or ``mx.contrib.amp`` at the top without
using them. Importing such a name gives a :class:`Unavailable` object; the first
real use of it (an attribute, a call, subclassing, indexing, iterating) raises
``NotImplementedError`` saying what is missing and what to use instead.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from typing import Any


class Unavailable:
    """A name MXNet has and mxmod does not; any use raises NotImplementedError.

    Args:
        name: the full MXNet name, e.g. ``'mx.gluon.nn'``.
        advice: what to use instead (one sentence).
    """

    def __init__(self, name: str, advice: str):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_advice", advice)

    def _fail(self, what: str = "") -> NotImplementedError:
        return NotImplementedError(f"{self._name}{what} is not available in mxmod: {self._advice}")

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)  # keeps copy/pickle/inspect probes working
        raise self._fail(f".{attr}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise self._fail("()")

    def __mro_entries__(self, bases: tuple) -> tuple:
        raise self._fail(" (as a base class)")

    def __getitem__(self, key: Any) -> Any:
        raise self._fail("[...]")

    def __iter__(self):
        raise self._fail(" (iteration)")

    def __setattr__(self, attr: str, value: Any) -> None:
        raise self._fail(f".{attr} = ...")

    def __repr__(self) -> str:
        return f"<unavailable {self._name}>"


def package_getattr(package: str, public: str, advice: dict | str, known: tuple = ()):
    """Module ``__getattr__`` for a package whose missing parts become :class:`Unavailable`.

    A real submodule (``<package>.<name>``) is imported when it exists, so parts that
    arrive later replace their stand-ins without touching this code.

    Args:
        package: the package's ``__name__``.
        public: its MXNet spelling, e.g. ``'mx.contrib'``.
        advice: one advice string, or a dict name -> advice (``'*'`` for the rest).
        known: names that stand-ins are given for; others raise AttributeError
            (empty: every public name).
    """

    def __getattr__(name: str) -> Any:
        if name.startswith("_") or (known and name not in known):
            raise AttributeError(f"module {public!r} has no attribute {name!r}")
        if _real_module_exists(package, name):
            return importlib.import_module(f"{package}.{name}")
        text = advice if isinstance(advice, str) else advice.get(name, advice.get("*", ""))
        return Unavailable(f"{public}.{name}", text)

    return __getattr__


def _real_module_exists(package: str, name: str) -> bool:
    """True if ``package.name`` is a real module (found by a finder other than the stubs')."""
    path = getattr(sys.modules.get(package), "__path__", None)
    full = f"{package}.{name}"
    if full in sys.modules:
        return True
    for finder in sys.meta_path:
        if isinstance(finder, _StubFinder) or not hasattr(finder, "find_spec"):
            continue
        if finder.find_spec(full, path) is not None:
            return True
    return False


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Import hook (last on ``sys.meta_path``) giving stand-in modules for missing parts.

    ``from mxmod.gluon.nn import Dense`` then imports, and ``Dense`` is an
    :class:`Unavailable`. Real modules are always found first.
    """

    def __init__(self, package: str, public: str, advice: dict | str, known: tuple):
        self.package, self.public, self.advice, self.known = package, public, advice, known

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if not fullname.startswith(self.package + "."):
            return None
        first = fullname[len(self.package) + 1 :].split(".")[0]
        if self.known and first not in self.known:
            return None
        return importlib.util.spec_from_loader(fullname, self, is_package=True)

    def create_module(self, spec: Any) -> None:
        return None  # the default module object

    def exec_module(self, module: Any) -> None:
        first = module.__name__[len(self.package) + 1 :].split(".")[0]
        text = (
            self.advice
            if isinstance(self.advice, str)
            else self.advice.get(first, self.advice.get("*", ""))
        )
        public = self.public + module.__name__[len(self.package) :]

        def __getattr__(name: str) -> Any:
            if name.startswith("__"):
                raise AttributeError(name)
            return Unavailable(f"{public}.{name}", text)

        module.__getattr__ = __getattr__
        module.__doc__ = f"Stand-in for {public}: {text}"


def install_stub_modules(package: str, public: str, advice: dict | str, known: tuple = ()) -> None:
    """Let ``import <package>.<missing part>...`` succeed with stand-in modules.

    Args:
        package: the real package's ``__name__``.
        public: its MXNet spelling, e.g. ``'mx.gluon'``.
        advice: one advice string, or a dict first-part name -> advice (``'*'``: the rest).
        known: the parts stand-ins are made for (empty: every part).
    """
    if not any(isinstance(f, _StubFinder) and f.package == package for f in sys.meta_path):
        sys.meta_path.append(_StubFinder(package, public, advice, known))
