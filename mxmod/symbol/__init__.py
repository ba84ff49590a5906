"""``mx.sym`` / ``mx.symbol``: symbols, their constructors (one per operator), JSON I/O."""

import importlib

from ..ops import OPS, get_op
from . import arith as _arith
from . import contrib, image, linalg, random, sparse
from .creation import Group, Variable, creator, full, load, load_json, ones, var, zeros
from .naming import AttrScope, NameManager, Prefix
from .symbol import Symbol

for _name, _op in list(OPS.items()):
    if _name not in globals():
        globals()[_name] = creator(_name)

from .custom import Custom  # noqa: E402,F401  (names/is_loss from the user's Prop)
from . import backends as _backends  # noqa: E402
from . import fluent as _fluent  # noqa: E402
from .pyfuncs import (  # noqa: E402,F401
    arange,
    eye,
    histogram,
    hypot,
    linspace,
    maximum,
    minimum,
    pow,
    power,
    split_v2,
)

_fluent.install()
_backends.install()
_arith.install()


def __getattr__(name):
    if name == "_internal":
        return importlib.import_module(f"{__name__}._internal")
    if name in OPS:
        fn = creator(name)
        globals()[name] = fn
        return fn
    if name == "Correlation":
        get_op(name)
    raise AttributeError(f"mxmod.symbol has no attribute {name!r}")


__all__ = [
    "contrib",
    "image",
    "linalg",
    "random",
    "sparse",
    "Symbol",
    "Variable",
    "var",
    "Group",
    "load",
    "load_json",
    "zeros",
    "ones",
    "full",
    "AttrScope",
    "NameManager",
    "Prefix",
]
