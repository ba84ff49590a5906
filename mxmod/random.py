"""``mx.random``: seeding and sampling, as MXNet's ``mxnet.random``.

``seed(s)`` resets mxmod's global ``jax.random`` key; :func:`next_key` hands
out fresh keys to the rest of mxmod (initializers, dropout, shuffling), so one
seed makes a program reproducible. Values differ from MXNet's generator.
"""

from .ndarray._random import next_key, randint, seed, shuffle
from .ndarray._random_dists import normal, uniform
from .ndarray._random_dists import (
    exponential,
    gamma,
    generalized_negative_binomial,
    negative_binomial,
    poisson,
    randn,
)
from .ndarray._random_multinomial import multinomial

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
