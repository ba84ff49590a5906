"""``mx.ndarray.utils``: the creation and file helpers MXNet keeps in this module."""

from .creation import array, empty, zeros  # noqa: F401
from .io import load, save  # noqa: F401

__all__ = ["zeros", "empty", "array", "load", "save"]
