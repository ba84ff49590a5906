"""Custom backward passes shared by operator families (MXNet's gradients, not autodiff's)."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def identity_with_grad(grad):
    """``f(x, side) -> x`` whose backward gives ``x`` the gradient ``grad(g, side)`` and
    ``side`` (a loss scale, a running statistic: never trained) zeros."""

    @jax.custom_vjp
    def f(x, side):
        return x

    def fwd(x, side):
        return x, side

    def bwd(side, g):
        return grad(g, side), jnp.zeros_like(side)

    f.defvjp(fwd, bwd)
    return f


def grad_from_output(forward, grad):
    """``forward(x)`` whose backward is ``grad(y, g)`` of the output ``y`` and the incoming
    gradient ``g`` (MXNet's ``*_grad`` kernels that read the output, not the input)."""

    @jax.custom_vjp
    def f(x):
        return forward(x)

    def fwd(x):
        y = forward(x)
        return y, y

    def bwd(y, g):
        return (grad(y, g),)

    f.defvjp(fwd, bwd)
    return f
