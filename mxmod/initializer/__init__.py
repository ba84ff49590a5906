"""Parameter initializers: MXNet's ``mx.init`` / ``mx.initializer``.

``Module.init_params`` calls ``initializer(InitDesc(name, attrs, global_init), arr)`` for every
parameter; the initializer fills the mxmod NDArray in place. Dispatch follows MXNet 1.9.1
(``__init__`` attribute first, then the name suffix); see :class:`Initializer`.
Random initializers draw from ``mxmod.random`` (seed it with ``mx.random.seed``): same
distributions as MXNet, not the same streams.
"""

from ._base import InitDesc, Initializer, alias, create, register
from ._basic import (
    Bilinear,
    Constant,
    LSTMBias,
    MSRAPrelu,
    Normal,
    One,
    Orthogonal,
    Uniform,
    Xavier,
    Zero,
)
from ._composite import FusedRNN, Load, Mixed

__all__ = [
    "InitDesc",
    "Initializer",
    "register",
    "alias",
    "create",
    "Zero",
    "One",
    "Constant",
    "Uniform",
    "Normal",
    "Orthogonal",
    "Xavier",
    "MSRAPrelu",
    "Bilinear",
    "LSTMBias",
    "Load",
    "Mixed",
    "FusedRNN",
]
