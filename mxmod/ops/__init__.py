"""The operator table. Importing this package registers every operator module in it."""

import importlib
import pkgutil

from ._def import OPS, HINT_ATTRS, LowerCtx, OpDef, ShapeError, get_op, register

for _m in pkgutil.iter_modules(__path__):
    if not _m.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_m.name}")


def list_ops() -> list:
    """Names (and aliases) of every operator mxmod implements."""
    return OPS.names()


__all__ = ["OPS", "HINT_ATTRS", "LowerCtx", "OpDef", "ShapeError", "get_op", "register", "list_ops"]
