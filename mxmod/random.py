"""``mx.random``: seeding and sampling, as MXNet's ``mxnet.random``.

``seed(s)`` resets mxmod's global ``jax.random`` key; :func:`next_key` hands
out fresh keys to the rest of mxmod (initializers, dropout, shuffling), so one
seed makes a program reproducible. Values differ from MXNet's generator.
"""

from .ndarray._random import next_key
from .ndarray.random import (
    exponential,
    gamma,
    generalized_negative_binomial,
    multinomial,
    negative_binomial,
    normal,
    poisson,
    randint,
    randn,
    seed,
    shuffle,
    uniform,
)

__all__ = [
    "seed",
    "next_key",
    "uniform",
    "normal",
    "randn",
    "randint",
    "exponential",
    "gamma",
    "poisson",
    "negative_binomial",
    "generalized_negative_binomial",
    "multinomial",
    "shuffle",
]
