"""``mx.sym.contrib`` (and ``mx.contrib.symbol``): MXNet's contrib operator constructors.

MXNet registers its contrib operators under JSON names with a ``_contrib_`` prefix
(``_contrib_ROIAlign``) and exposes each as ``mx.sym.contrib.<Name>`` with the prefix
stripped. This module does the same generically: every operator (or alias) of the table
named ``_contrib_<Name>`` is ``contrib.<Name>``, so registering an OpDef is all an
operator file has to do. Automatic node names use the lower-cased function name
(``bilinearresize2d0``, ``ctc_loss0``), as MXNet's do.
"""

from __future__ import annotations

from ..ops import OPS
from .creation import creator

PREFIX = "_contrib_"


def contrib_names() -> list:
    """The ``<Name>`` of every ``_contrib_<Name>`` operator or alias in the table."""
    return sorted(n[len(PREFIX) :] for n, _ in OPS.items() if n.startswith(PREFIX))


def __getattr__(name: str):
    if name.startswith("__") or (PREFIX + name) not in OPS:
        raise AttributeError(
            f"mxmod.symbol.contrib has no operator {name!r}: no operator named "
            f"'{PREFIX}{name}' is registered (contrib operators: {', '.join(contrib_names())})"
        )
    fn = creator(PREFIX + name, hint=name.lower())
    fn.__name__ = name
    globals()[name] = fn
    return fn


def __dir__():
    return sorted(set(globals()) | set(contrib_names()))
