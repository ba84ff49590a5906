"""``mx.error``: MXNet's error classes and the registry naming them.

MXNet maps an error raised in its C++ core to the Python class registered under the
error's type name (``ValueError: ...`` becomes a ``ValueError``); ``register`` adds a class.
mxmod raises Python exceptions directly, and keeps the registry for programs that extend it
(``mx.error.register``) or look a class up (``error_class``).
"""

from __future__ import annotations

from .base import MXNetError

__all__ = ["MXNetError", "InternalError", "register", "register_error", "error_class"]

_ERROR_TYPES: dict = {}


def register_error(func_name=None, cls=None):
    """Register an error class under a name: ``@register_error`` (the class's own name),
    ``@register_error("Name")`` or ``register_error("Name", cls)``; returns the class (or
    the decorator)."""
    if isinstance(func_name, type):  # used as @register_error
        cls, func_name = func_name, func_name.__name__

    def add(klass):
        name = func_name if func_name is not None else klass.__name__
        if not (isinstance(klass, type) and issubclass(klass, BaseException)):
            raise TypeError(f"register_error: {klass!r} is not an exception class")
        _ERROR_TYPES[name] = klass
        return klass

    return add(cls) if cls is not None else add


register = register_error


def error_class(name: str) -> type:
    """The class registered under ``name`` (``MXNetError`` for an unknown name)."""
    return _ERROR_TYPES.get(name, MXNetError)


@register_error
class InternalError(MXNetError):
    """An internal error of the framework (a bug, not a user mistake)."""


for _cls in (ValueError, TypeError, AttributeError, IndexError, NotImplementedError):
    register_error(_cls.__name__, _cls)
register_error("MXNetError", MXNetError)
