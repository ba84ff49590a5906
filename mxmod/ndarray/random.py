"""``mx.nd.random``: the NDArray samplers (same functions as :mod:`mxmod.random`)."""

from ._random import randint, seed, shuffle
from ._random_dists import (
    exponential,
    exponential_like,
    gamma,
    gamma_like,
    generalized_negative_binomial,
    generalized_negative_binomial_like,
    negative_binomial,
    negative_binomial_like,
    normal,
    normal_like,
    poisson,
    poisson_like,
    randn,
    uniform,
    uniform_like,
)
from ._random_multinomial import multinomial

__all__ = [
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
    "seed",
    "uniform_like",
    "normal_like",
    "exponential_like",
    "gamma_like",
    "poisson_like",
    "negative_binomial_like",
    "generalized_negative_binomial_like",
]
