"""``mx.sym.linalg``: MXNet's linear-algebra operator constructors.

MXNet registers them as ``_linalg_<name>`` (with flat aliases ``linalg_<name>``, which are
``mx.sym.linalg_<name>``) and exposes ``mx.sym.linalg.<name>`` with the prefix stripped;
every operator of the table named ``_linalg_<name>`` is ``linalg.<name>`` here. Automatic
node names use the function name (``det0``, ``gemm20``), as MXNet's do.
"""

from __future__ import annotations

from ..ops import OPS
from ..registry import prefixed_module
from .creation import creator

PREFIX = "_linalg_"


linalg_names, __getattr__, __dir__ = prefixed_module(
    __name__, OPS, PREFIX, lambda name: creator(PREFIX + name, hint=name.lower())
)
