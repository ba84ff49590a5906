"""``mx.sym.Custom``: a node running a Python operator registered with ``mx.operator.register``."""

from __future__ import annotations

from typing import Any

from ..base import MXNetError
from ..ops.custom import attr_value
from .creation import make_op
from .symbol import Symbol


def Custom(
    *data: Any,
    op_type: str | None = None,
    name: str | None = None,
    attr: dict | None = None,
    **kwargs: Any,
):
    """``mx.sym.Custom``: a node running the registered Python operator ``op_type``.

    Inputs are given positionally or by the names of ``list_arguments()`` /
    ``list_auxiliary_states()`` (missing ones become variables ``<name>_<input>``); other
    keyword arguments reach the ``CustomOpProp`` constructor as strings.

    Raises:
      MXNetError: if ``op_type`` is missing or not registered.
    """
    if op_type is None:
        raise MXNetError("mx.sym.Custom needs op_type=<the name given to @mx.operator.register>")
    kw = {k: v if isinstance(v, Symbol) else attr_value(k, v) for k, v in kwargs.items()}
    sym = make_op("Custom", list(data), {"op_type": op_type, **kw}, name=name, attr=attr)
    node = sym._outputs[0][0]
    node.op = node.op.for_attrs(node.parsed())
    return sym
