"""``mx.attribute``: ``AttrScope``, the attributes given to the symbols built in a
``with`` block (defined in ``mxmod/symbol/naming.py``)."""

from .symbol.naming import AttrScope

__all__ = ["AttrScope"]
