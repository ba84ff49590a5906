"""``mx.sym.image``: MXNet's image operator constructors (``_image_<name>`` as ``<name>``;
automatic node names use the function name, as MXNet's do)."""

from __future__ import annotations

from ..ops import OPS
from ..registry import prefixed_module
from .creation import creator

PREFIX = "_image_"


image_names, __getattr__, __dir__ = prefixed_module(
    __name__, OPS, PREFIX, lambda name: creator(PREFIX + name, hint=name.lower())
)
