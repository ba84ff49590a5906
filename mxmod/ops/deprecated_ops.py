"""MXNet's deprecated ``Convolution_v1``, ``Pooling_v1`` and ``BatchNorm_v1``, which the
symbol files of old checkpoints name. Each runs its successor's lowering; what differs:

- ``Convolution_v1``: ``Convolution``'s attributes and results (MXNet's CPU build refuses
  3-D kernels; mxmod runs them).
- ``Pooling_v1``: max (its padding reads as zeros), avg (pad cells counted) or sum; one
  output (no hidden workspace).
- ``BatchNorm_v1``: channel axis 1; its third output is the batch variance itself (where
  ``BatchNorm``'s is the inverse standard deviation).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._attrs import Attrs, Param, choice, p_bool, p_shape, p_shape_nonzero
from ._def import OpDef, register
from .conv import CONV_ORDER, conv_inputs, conv_lower, conv_params, conv_shape
from .norm import BN_PARAMS, BN_SLOTS, bn_parts, bn_shape
from .pool import pool_check, pool_lower, pool_shape

_sg = jax.lax.stop_gradient

register(
    OpDef(
        name="Convolution_v1",
        params=conv_params(False, {}),
        positional=CONV_ORDER[:4] + CONV_ORDER[6:],
        inputs=conv_inputs,
        signature_inputs=("data", "weight", "bias"),
        infer_shape=conv_shape,
        lower=conv_lower,
    )
)


def _as_pooling(a) -> Attrs:
    """``Pooling``'s attributes for a ``Pooling_v1`` node."""
    extra = {"p_value": None, "count_include_pad": True, "layout": None, "cudnn_off": False}
    return Attrs({**a, **extra})


def _pool_v1_lower(a, ins, aux, ctx):
    a = _as_pooling(a)
    x = ins[0]
    if a.pool_type == "max" and any(a.pad) and not a.global_pool:
        # MXNet's v1 max pooling reads its padding as zeros (not as -inf)
        sp = [(p, p) for p in a.pad]
        x = jnp.pad(x, [(0, 0)] * (x.ndim - len(sp)) + sp)
        a = Attrs({**a, "pad": (0,) * len(sp)})
    return pool_lower(a, [x], aux, ctx)[:1]


register(
    OpDef(
        name="Pooling_v1",
        params={
            "kernel": Param(p_shape_nonzero, ()),
            "pool_type": Param(choice("avg", "max", "sum"), "max"),
            "global_pool": Param(p_bool, False),
            "pooling_convention": Param(choice("full", "valid"), "valid"),
            "stride": Param(p_shape_nonzero, ()),
            "pad": Param(p_shape, ()),
        },
        infer_shape=lambda a, s: (lambda ins, outs: (ins, outs[:1]))(
            *pool_shape(_as_pooling(a), s)
        ),
        lower=_pool_v1_lower,
        check=pool_check,
    )
)


def _bn_v1_lower(a, ins, aux, ctx):
    y, mean, var, new_aux = bn_parts(Attrs({**a, "axis": 1}), ins, aux, ctx)
    pdt = aux[0].dtype
    return [y, _sg(mean).astype(pdt), _sg(var).astype(pdt)], new_aux


register(
    OpDef(
        name="BatchNorm_v1",
        params=dict(BN_PARAMS),
        infer_shape=lambda a, s: bn_shape(Attrs({**a, "axis": 1}), s),
        lower=_bn_v1_lower,
        **BN_SLOTS,
    )
)
