"""``mx.nd.linalg``: MXNet's linear-algebra operators, imperative.

Every operator (or alias) of the table named ``_linalg_<name>`` is ``mx.nd.linalg.<name>``,
exactly as MXNet strips the prefix (the flat aliases are ``mx.nd.linalg_<name>``); each call
runs the operator's lowering like any other ``mx.nd.<Op>`` (see
:mod:`mxmod.ndarray.op_table`).
"""

from __future__ import annotations

from ..ops import OPS
from ..registry import prefixed_module
from .op_table import nd_function

PREFIX = "_linalg_"


linalg_names, __getattr__, __dir__ = prefixed_module(
    __name__, OPS, PREFIX, lambda name: nd_function(PREFIX + name)
)
