"""What every optimizer's pure rule shares (no single MXNet namesake).

* :class:`LeafInfo`: the explicit per-parameter input of ``Optimizer._rule(w, g, s, leaf)``
  (rates, count, name, position, per-step extras, multi-precision dtype);
* hyperparameter validation (:func:`check_hyper`, :func:`check_momentum`), raising
  ``ValueError`` (``TypeError`` for a non-number) naming the argument;
* MXNet's two gradient-clipping rules: the C++ kernels (``sgd_update``, ``adam_update``,
  ``rmsprop_update``, ...) clip only when ``clip_gradient`` is truthy and positive
  (:func:`rescale_clip`, :func:`clip_kernel`); the optimizers MXNet writes in Python (AdaGrad,
  AdaDelta, Adamax, Nadam, DCASGD, SGLD, GroupAdaGrad) call ``nd.clip(g, -c, c)`` whenever
  ``clip_gradient is not None`` (:func:`clip_nd`: 0 zeroes the gradient, a negative value
  swaps the bounds);
* weight decay: MXNet's default multipliers (:func:`default_wd_mults`) and the
  imperative quirk of rewriting the caller's gradient (:func:`rewrite_caller_grads`);
* numerics shared by several rules: ``ema``, ``one_minus_pow``, ``dtype_const``, ``sum_sq``;
* multi-precision: one parameter's state and step through a float32 master copy
  (:func:`init_leaf_mp`, :func:`leaf_step`), shared by the imperative and fused paths.
"""

from __future__ import annotations

import math
import os
import warnings
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from optax import tree_utils as otu

from ._arg_checks import check_number

MP_DTYPES = (np.dtype(np.float16), np.dtype(jnp.bfloat16))  # multi_precision keeps float32
UNIT = (0.0, 1.0)  # 0 <= x < 1
NONNEG = (0.0, None)  # x >= 0


class LeafInfo(NamedTuple):
    """Everything one parameter's rule reads besides ``(w, g, state)``.

    Built by the imperative update, ``fused_update`` and ``to_optax`` alike; values marked
    traced may be tracers, the others are trace-time constants.
    """

    lr: Any  # traced: this parameter's rate (multiplier applied), in the weight's dtype
    wd: Any  # this parameter's weight decay (multiplier applied), in the weight's dtype
    t: Any  # traced int32: this parameter's update count
    name: str | None  # parameter name (None imperatively unless the class sets _uses_names)
    pos: int  # position in MXNet's update order (fused_init order / the call's index list)
    extra: dict  # traced per-step extras (see Optimizer._extra_keys)
    low_dtype: Any = None  # the weight's dtype when the rule runs on a float32 master copy
    lr_mult: float = 1.0  # this parameter's lr multiplier (fused; 1.0 imperatively)
    first: bool = True  # the first parameter MXNet updates in this step (lowest index)


# ----------------------------------------------------------------------------- validation
def check_hyper(owner: str, name: str, value: Any, bounds: tuple = NONNEG) -> None:
    """Raise unless ``lo <= value`` (and ``value < hi`` when ``bounds = (lo, hi)``).

    Raises:
        TypeError: ``value`` is not a number.
        ValueError: out of range (NaN included); the message names ``owner`` and ``name``.
    """
    if isinstance(value, (str, bytes)):  # float('0.9') would pass; MXNet fails later
        check_number(owner, name, value)
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{owner}: {name} must be a number, got {value!r}") from None
    lo, hi = bounds
    if math.isnan(x) or x < lo or (hi is not None and x >= hi):
        rng = f"in [{lo:g}, {hi:g})" if hi is not None else f">= {lo:g}"
        raise ValueError(f"{owner}: {name} must be {rng}, got {name}={value!r}")


def check_momentum(owner: str, momentum: Any) -> None:
    """``momentum`` must be in [0, 1)."""
    check_hyper(owner, "momentum", momentum, UNIT)


def check_int(owner: str, name: str, value: Any, lo: int) -> None:
    """An integer-valued hyperparameter ``>= lo``."""
    check_hyper(owner, name, value, (float(lo), None))
    if float(value) != int(value):
        raise ValueError(f"{owner}: {name} must be an integer, got {value!r}")


# ----------------------------------------------------------------------------- clipping
def clip_kernel(x, clip_gradient):
    """Clip as MXNet's C++ kernels do: only when ``clip_gradient`` is truthy and > 0."""
    if clip_gradient and clip_gradient > 0:
        x = jnp.clip(x, -float(clip_gradient), float(clip_gradient))
    return x


def rescale_clip(opt, g):
    """``clip(rescale_grad * g, clip_gradient)`` with the kernels' truthiness rule."""
    return clip_kernel(g * float(opt.rescale_grad), opt.clip_gradient)


def clip_nd(x, clip_gradient):
    """MXNet's ``nd.clip(x, -c, c)`` whenever ``clip_gradient is not None``: ``x > hi -> hi``,
    then ``x < lo -> lo`` (so a negative ``c`` swaps the bounds, 0 zeroes ``x``)."""
    if clip_gradient is None:
        return x
    lo, hi = -float(clip_gradient), float(clip_gradient)
    return jnp.where(x > hi, hi, jnp.where(x < lo, lo, x)).astype(x.dtype)


def rescale_clip_nd(opt, g):
    """``clip_nd(rescale_grad * g)``: the Python optimizers' preprocessing."""
    return clip_nd(g * float(opt.rescale_grad), opt.clip_gradient)


def aggregation_size(default: int, most: int | None = None) -> int:
    """MXNet's ``aggregate_num`` from ``MXNET_OPTIMIZER_AGGREGATION_SIZE``, clamped to
    ``[1, most]`` by the optimizers whose kernels take at most ``most`` weights."""
    size = int(os.getenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", str(default)))
    return size if most is None else max(1, min(most, size))


# ----------------------------------------------------------------------------- weight decay
def default_wd_mults(names, suffixes: tuple) -> dict:
    """MXNet's rule: parameters whose name ends in none of ``suffixes`` get no weight decay."""
    return {n: 0.0 for n in names if not n.endswith(suffixes)}


def rewrite_caller_grads(weight, grad, multi_precision: bool, opt, fn) -> None:
    """MXNet quirk: some imperative updates overwrite the caller's gradient NDArray
    (``grad *= rs`` in Python, or a kernel writing its rescaled gradient back). Apply ``fn``
    to each gradient whose weight was not updated through a float32 master copy."""
    ws = weight if isinstance(weight, (list, tuple)) else [weight]
    gs = grad if isinstance(grad, (list, tuple)) else [grad]
    for w, g in zip(ws, gs):
        if multi_precision and use_mp(opt, w.dtype):
            continue
        if hasattr(g, "_sdata"):  # sparse: fn keeps zeros (a scale, a clip)
            g._set_parts(g.shape, fn(g._sdata).astype(g._sdata.dtype), list(g._saux))
        else:
            g._set_data(fn(g._data).astype(g._data.dtype))


# ----------------------------------------------------------------------------- numerics
def ema(x, m, decay, order: int = 1):
    """``(1 - decay) * x**order + decay * m`` (optax's moment update)."""
    return otu.tree_update_moment(x, m, decay, order)


def one_minus_pow(beta: float, t) -> Any:
    """``1 - beta**t`` in float32 for a traced count ``t >= 1``, as ``-expm1(t log beta)``
    (``1 - 0.999**t`` loses most digits when computed directly in float32)."""
    t = jnp.asarray(t, jnp.float32)
    beta = float(beta)
    if beta == 0.0:
        return jnp.ones_like(t)
    if beta < 0.0:
        return 1.0 - jnp.power(jnp.float32(beta), t)
    return -jnp.expm1(t * math.log(beta))


def dtype_const(x: float, like) -> Any:
    """``x`` as a scalar of ``like``'s dtype (a C++ kernel's ``DType`` parameter)."""
    return jnp.asarray(x, like.dtype)


def sum_sq(x):
    """MXNet's ``multi_sum_sq``: squares in the array's dtype, summed in float32."""
    return jnp.sum((x * x).astype(jnp.float32))


def low(x, leaf: LeafInfo):
    """On a float32 master copy, the low-precision value MXNet's norms read (the weight)."""
    return x if leaf.low_dtype is None else x.astype(leaf.low_dtype)


# ----------------------------------------------------------------------------- multi-precision
def use_mp(opt, dtype: Any) -> bool:
    """Whether ``opt`` keeps a float32 master copy of a weight of ``dtype``."""
    return bool(opt.multi_precision) and np.dtype(dtype) in MP_DTYPES


def warn_fp16(opt, dtype: Any) -> None:
    if np.dtype(dtype) == np.float16 and not opt.multi_precision:
        warnings.warn(
            "Accumulating with float16 in optimizer can lead to poor accuracy or slow "
            "convergence. Consider using multi_precision=True option of the "
            f"{type(opt).__name__} optimizer",
            stacklevel=4,
        )


def init_leaf_mp(opt, w: jax.Array) -> Any:
    """``opt._init_leaf`` with MXNet's multi-precision layout (``_mp_master_first``)."""
    if use_mp(opt, w.dtype):
        w32 = w.astype(jnp.float32)
        inner = opt._init_leaf(w32)
        return (w32, inner) if opt._mp_master_first else (inner, w32)
    warn_fp16(opt, w.dtype)
    return opt._init_leaf(w)


def leaf_step(opt, w, g, s, leaf: LeafInfo, mp: bool, rule=None):
    """One parameter's ``opt._rule`` (or ``rule``, same signature), unwrapping the float32
    master copy when ``mp``."""
    rule = opt._rule if rule is None else rule
    if mp:
        w32, inner = s if opt._mp_master_first else (s[1], s[0])
        leaf = leaf._replace(
            lr=jnp.asarray(leaf.lr, jnp.float32),
            wd=jnp.asarray(leaf.wd, jnp.float32),
            low_dtype=w.dtype,
        )
        nw32, ninner = rule(w32, g.astype(jnp.float32), inner, leaf)
        ns = (nw32, ninner) if opt._mp_master_first else (ninner, nw32)
        return nw32.astype(w.dtype), _cast_like(ns, s)
    # MXNet computes in the weight's DType
    leaf = leaf._replace(lr=jnp.asarray(leaf.lr, w.dtype), wd=jnp.asarray(leaf.wd, w.dtype))
    nw, ns = rule(w, g.astype(w.dtype), s, leaf)
    return nw.astype(w.dtype), _cast_like(ns, s)


def _cast_like(new: Any, old: Any) -> Any:
    return jax.tree_util.tree_map(lambda n, o: jnp.asarray(n).astype(o.dtype), new, old)
