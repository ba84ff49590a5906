"""``mx.nd.random``: the NDArray samplers (same functions as :mod:`mxmod.random`)."""

from ._random import normal, randint, seed, shuffle, uniform

__all__ = ["uniform", "normal", "randint", "shuffle", "seed"]
