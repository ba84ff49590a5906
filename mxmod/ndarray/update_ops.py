"""MXNet's optimizer update operators, imperative (``mx.nd.sgd_update`` ...).

Each takes the weight, the gradient and the optimizer states, writes the new weight
into ``out`` (usually the weight itself) and updates the state arrays in place, with
MXNet 1.9.1's kernel formulas. The gradient is first multiplied by ``rescale_grad`` and,
when ``clip_gradient`` (``clip_grad`` for FTML) is positive, clipped to that bound.
Each formula is one jitted kernel (hyperparameters are traced, so a new learning rate
does not recompile; a new shape compiles one fused program, not one per primitive).
Each operator below is written as its kernel: ``(w, g, *states, *hyperparameters) ->
(new_w, *new_states)`` in MXNet's argument order, with MXNet's defaults given to
:func:`_update_op`.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import jax
import jax.numpy as jnp

from ..base import named
from .ndarray import NDArray
from .sparse._updates import any_sparse, rows_kernel, sparse_update

__all__ = [
    "sgd_update",
    "sgd_mom_update",
    "nag_mom_update",
    "signsgd_update",
    "signum_update",
    "adam_update",
    "rmsprop_update",
    "rmspropalex_update",
    "ftrl_update",
    "ftml_update",
]


def _clip(x, bound):
    """``x`` clipped to ``[-bound, bound]`` when ``bound > 0`` (traced), else ``x``."""
    b = jnp.abs(bound)
    return jnp.where(bound > 0, jnp.clip(x, -b, b), x)


def _grad(g, rescale_grad, clip, plus: Any = 0.0):
    return _clip(g * rescale_grad + plus, clip)


def _check(name: str, *arrays: Any) -> None:
    for a in arrays:
        if not isinstance(a, NDArray):
            raise TypeError(f"mx.nd.{name}: inputs must be NDArrays, got {type(a).__name__}")


def _update_op(
    states: tuple,
    computed: dict | None = None,
    lazy_flag: bool = False,
    name: str | None = None,
    **defaults: Any,
) -> Callable:
    """Make ``mx.nd.<kernel name>(weight, grad, *states, <hyperparameters>, out=None)`` from
    a kernel ``(w, g, *states, *hyperparameters)``.

    The hyperparameters are the kernel's parameters after its arrays; ``defaults`` are
    MXNet's (the others are required; ``None`` means -1); ``computed`` gives kernel
    arguments derived from the call (name -> function of the bound arguments). The new
    weight goes to ``out`` (default: the weight), the new states into the state arrays.
    ``lazy_flag``: the operator takes MXNet's ``lazy_update`` (default True). Sparse inputs
    take MXNet's sparse kernels or storage fallback (:mod:`.sparse._updates`); ``name``
    overrides the kernel function's name (MXNet's operator name).
    """
    computed = computed or {}
    sparse_only = name in ("_sparse_adagrad_update", "group_adagrad_update")
    arrays = ("weight", "grad", *states)
    P = inspect.Parameter

    def make(kernel: Callable) -> Callable:
        op_name = name or kernel.__name__
        jitted = jax.jit(kernel)
        lazy_kernel = rows_kernel(kernel)
        hyper = list(inspect.signature(kernel).parameters)[len(arrays) :]
        hyper = [h for h in hyper if h not in computed]
        flags = [P("lazy_update", P.POSITIONAL_OR_KEYWORD, default=True)] if lazy_flag else []
        sig = inspect.Signature(
            [P(n, P.POSITIONAL_OR_KEYWORD, default=defaults.get(n, P.empty)) for n in arrays]
            + [P(n, P.POSITIONAL_OR_KEYWORD, default=defaults.get(n, P.empty)) for n in hyper]
            + flags
            + [P("out", P.POSITIONAL_OR_KEYWORD, default=None), P("_", P.VAR_KEYWORD)]
        )

        def update(*args: Any, **kwargs: Any) -> NDArray:
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            a = bound.arguments
            values = [a[n] for n in arrays]
            _check(kernel.__name__, *values)
            kw = {h: -1.0 if a[h] is None else a[h] for h in hyper}
            kw.update({k: f(a) for k, f in computed.items()})
            target = a["out"]  # None: a new array (the weight is not written, as MXNet)
            if sparse_only or any_sparse((*values, target)):
                lazy = bool(a["lazy_update"]) if lazy_flag else True
                return sparse_update(op_name, jitted, lazy_kernel, values, target, kw, lazy)
            res = jitted(*(v._data for v in values), **kw)
            new_w, *new_states = res if states else (res,)
            for arr, value in zip(values[2:], new_states):
                arr._set_data(value.astype(arr._data.dtype))
            weight = a["weight"]
            if target is None:
                return NDArray(new_w.astype(weight._data.dtype), weight.context)
            target._set_data(new_w.astype(target._data.dtype))
            return target

        update.__signature__ = sig
        return named(update, op_name, kernel.__doc__)

    return make


_COMMON = dict(wd=0.0, rescale_grad=1.0, clip_gradient=-1.0)  # MXNet's defaults


def _out_is_weight(a: dict) -> bool:
    return a["out"] is a["weight"]


@_update_op((), lazy_flag=True, **_COMMON)
def sgd_update(w, g, lr, wd, rescale_grad, clip_gradient):
    """``weight = (1 - lr*wd) * weight - lr * g``."""
    return (1 - lr * wd) * w - lr * _grad(g, rescale_grad, clip_gradient)


@_update_op(("mom",), lazy_flag=True, momentum=0.0, **_COMMON)
def sgd_mom_update(w, g, mom, lr, momentum, wd, rescale_grad, clip_gradient):
    """``mom = momentum*mom - lr*wd*weight - lr*g``; ``weight += mom``."""
    m = momentum * mom - lr * wd * w - lr * _grad(g, rescale_grad, clip_gradient)
    return w + m, m


@_update_op(
    ("mom",),
    computed={"aliased": _out_is_weight},
    momentum=0.0,
    **_COMMON,
)
def nag_mom_update(w, g, mom, lr, momentum, wd, rescale_grad, clip_gradient, aliased):
    """Nesterov, as MXNet's kernel: ``step = lr*(wd*weight + g)``,
    ``weight += momentum*(momentum*mom - step) - step``; the stored momentum is
    ``momentum*mom - lr*(wd*w + g)`` with ``w`` the weight the kernel leaves in place (the
    new one when ``out`` is the weight itself, as MXNet's in-place kernel reads it)."""
    g = _grad(g, rescale_grad, clip_gradient)
    step = lr * (wd * w + g)
    new_w = w + momentum * (momentum * mom - step) - step
    seen = jnp.where(aliased, new_w, w)
    return new_w, momentum * mom - lr * (wd * seen + g)


@_update_op((), **_COMMON)
def signsgd_update(w, g, lr, wd, rescale_grad, clip_gradient):
    """``weight = (1 - lr*wd) * weight - lr * sign(g)``."""
    return (1 - lr * wd) * w - lr * jnp.sign(_grad(g, rescale_grad, clip_gradient))


@_update_op(("mom",), momentum=0.0, **_COMMON, wd_lh=0.0)
def signum_update(w, g, mom, lr, momentum, wd, rescale_grad, clip_gradient, wd_lh):
    """``mom = momentum*mom - (1-momentum)*(wd*weight + g)``;
    ``weight = (1 - lr*wd_lh)*weight + lr*sign(mom)``."""
    g = _grad(g, rescale_grad, clip_gradient)
    m = momentum * mom - (1 - momentum) * wd * w - (1 - momentum) * g
    return (1 - lr * wd_lh) * w + lr * jnp.sign(m), m


@_update_op(
    ("mean", "var"),
    beta1=0.9,
    beta2=0.999,
    epsilon=1e-8,
    lazy_flag=True,
    **_COMMON,
)
def adam_update(w, g, mean, var, lr, beta1, beta2, epsilon, wd, rescale_grad, clip_gradient):
    """``g = clip(rescale*grad + wd*weight)``; moving ``mean``/``var``;
    ``weight -= lr * mean / (sqrt(var) + epsilon)`` (no bias correction, as the kernel)."""
    g = _grad(g, rescale_grad, clip_gradient, wd * w)
    m = beta1 * mean + (1 - beta1) * g
    v = beta2 * var + (1 - beta2) * g * g
    return w - lr * m / (jnp.sqrt(v) + epsilon), m, v


@_update_op(
    ("n",),
    gamma1=0.95,
    epsilon=1e-8,
    **_COMMON,
    clip_weights=-1.0,
)
def rmsprop_update(w, g, n, lr, gamma1, epsilon, wd, rescale_grad, clip_gradient, clip_weights):
    """``n = (1-gamma1)*g^2 + gamma1*n``; ``weight -= lr * g / sqrt(n + epsilon)``."""
    g = _grad(g, rescale_grad, clip_gradient, wd * w)
    nn = (1 - gamma1) * g * g + gamma1 * n
    return _clip(w - lr * g / jnp.sqrt(nn + epsilon), clip_weights), nn


@_update_op(
    ("n", "g", "delta"),
    gamma1=0.95,
    gamma2=0.9,
    epsilon=1e-8,
    **_COMMON,
    clip_weights=-1.0,
)
def rmspropalex_update(
    w, g, n, gs, delta, lr, gamma1, gamma2, epsilon, wd, rescale_grad, clip_gradient, clip_weights
):
    """Graves' RMSProp: running ``n`` and ``g``; ``delta = gamma2*delta -
    lr * grad / sqrt(n - g^2 + epsilon)``; ``weight += delta``."""
    gr = _grad(g, rescale_grad, clip_gradient, wd * w)
    nn = (1 - gamma1) * gr * gr + gamma1 * n
    gg = (1 - gamma1) * gr + gamma1 * gs
    d = gamma2 * delta - lr * gr / jnp.sqrt(nn - gg * gg + epsilon)
    return _clip(w + d, clip_weights), nn, gg, d


@_update_op(("z", "n"), lamda1=0.01, beta=1.0, **_COMMON)
def ftrl_update(w, g, z, n, lr, lamda1, beta, wd, rescale_grad, clip_gradient):
    """FTRL-proximal: ``z += g - (sqrt(n+g^2) - sqrt(n)) * weight / lr``; ``n += g^2``;
    ``weight = (sign(z)*lamda1 - z) / ((beta + sqrt(n))/lr + wd)`` where ``|z| > lamda1``."""
    g = _grad(g, rescale_grad, clip_gradient)
    nz = z + g - (jnp.sqrt(n + g * g) - jnp.sqrt(n)) * w / lr
    nn = n + g * g
    new_w = (jnp.sign(nz) * lamda1 - nz) / ((beta + jnp.sqrt(nn)) / lr + wd)
    return jnp.where(jnp.abs(nz) > lamda1, new_w, 0.0), nz, nn


@_update_op(
    ("d", "v", "z"), beta1=0.6, beta2=0.999, epsilon=1e-8, wd=0.0, rescale_grad=1.0, clip_grad=-1.0
)
def ftml_update(w, g, d, v, z, lr, t, beta1, beta2, epsilon, wd, rescale_grad, clip_grad):
    """FTML (step ``t`` from 1): ``v`` second moment; ``d_t = (1-beta1^t)/lr *
    (sqrt(v/(1-beta2^t)) + epsilon)``; ``z = beta1*z + (1-beta1)*g - (d_t - beta1*d)*weight``;
    ``weight = -z / d_t``."""
    g = _grad(g, rescale_grad, clip_grad, wd * w)
    nv = beta2 * v + (1 - beta2) * g * g
    d_t = (1 - beta1**t) / lr * (jnp.sqrt(nv / (1 - beta2**t)) + epsilon)
    nz = beta1 * z + (1 - beta1) * g - (d_t - beta1 * d) * w
    return -nz / d_t, d_t, nv, nz


@_update_op(("history",), name="_sparse_adagrad_update", epsilon=1e-7, **_COMMON)
def sparse_adagrad_update(w, g, history, lr, epsilon, wd, rescale_grad, clip_gradient):
    """``mx.nd.sparse.adagrad_update`` (row_sparse grad only, ``wd`` must be 0), lazy:
    ``history += g^2``; ``weight -= lr * g / sqrt(history + epsilon)``."""
    g = _grad(g, rescale_grad, clip_gradient)
    h = history + g * g
    return w - lr * g / jnp.sqrt(h + epsilon), h


@_update_op(
    ("history",), name="group_adagrad_update", rescale_grad=1.0, clip_gradient=-1.0, epsilon=1e-5
)
def group_adagrad_update(w, g, history, lr, rescale_grad, clip_gradient, epsilon):
    """``mx.nd.contrib.group_adagrad_update`` (row_sparse grad only), lazy, one history value
    per row: ``history += mean(g^2, axis=1)``; ``weight -= lr * g / sqrt(history + epsilon)``."""
    g = _grad(g, rescale_grad, clip_gradient)
    h = history + jnp.mean(g * g, axis=1, keepdims=True)
    return w - lr * g / jnp.sqrt(h + epsilon), h
