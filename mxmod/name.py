"""``mx.name``: automatic naming of symbols."""

from .symbol.naming import NameManager, Prefix

__all__ = ["NameManager", "Prefix"]
