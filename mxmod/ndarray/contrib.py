"""``mx.nd.contrib`` (and ``mx.contrib.ndarray``): MXNet's contrib operators, imperative.

Every operator (or alias) of the table named ``_contrib_<Name>`` is
``mx.nd.contrib.<Name>``, exactly as MXNet strips the prefix; each call runs the
operator's lowering like any other ``mx.nd.<Op>`` (see :mod:`mxmod.ndarray.op_table`).
"""

from __future__ import annotations

import jax.numpy as jnp

from ..base import named
from ..ops import OPS
from ..ops.transformer import boolean_mask as _boolean_mask
from ..ops.transformer import check_boolean_mask_axis
from ..registry import prefixed_module
from .control_flow import cond, foreach, while_loop  # noqa: F401
from .zipfian import rand_zipfian  # noqa: F401
from .contrib_lamb import multi_lamb_update, multi_mp_lamb_update  # noqa: F401
from .calibrate import calibrate_entropy  # noqa: F401
from .dgl_graph import dgl_adjacency, dgl_subgraph, edge_id  # noqa: F401
from .nnz import getnnz  # noqa: F401
from .update_ops import group_adagrad_update  # noqa: F401
from .contrib_adamw import (  # noqa: F401
    adamw_update,
    mp_adamw_update,
    multi_adamw_update,
    multi_mp_adamw_update,
)
from .ndarray import NDArray
from .op_table import nd_function

PREFIX = "_contrib_"


def boolean_mask(
    data: NDArray,
    index: NDArray,
    axis: int = 0,
    out: NDArray | None = None,
    name: str | None = None,
) -> NDArray:
    """MXNet's ``mx.nd.contrib.boolean_mask``: the rows of ``data`` (axis 0) whose ``index``
    entry is non-zero. Runs eagerly (its output shape depends on the mask's values, so it
    is the one contrib operator that is not jit-compiled; bound symbols cannot use it)."""
    for what, x in (("data", data), ("index", index)):
        if not isinstance(x, NDArray):
            raise TypeError(
                f"mx.nd.contrib.boolean_mask: {what} must be an NDArray, got {type(x).__name__}"
            )
    check_boolean_mask_axis(int(axis))
    if index.ndim != 1 or index.shape[0] != data.shape[0]:
        raise ValueError(
            f"mx.nd.contrib.boolean_mask: index {index.shape} must be 1-D with "
            f"data.shape[0] = {data.shape[0]} entries"
        )
    res = NDArray(_boolean_mask(data._data, index._data, int(axis)))
    if out is not None:
        out._set_data(res._data)
        return out
    return res


def _elementwise_test(name: str, fn):
    def test(data: NDArray, out: NDArray | None = None, name: str | None = None) -> NDArray:
        if not isinstance(data, NDArray):
            raise TypeError(f"mx.nd.contrib.{test.__name__}: data must be an NDArray")
        res = fn(data._data).astype(data._data.dtype)
        if out is not None:
            out._set_data(res)
            return out
        return NDArray(res, data.context)

    return named(
        test, name, f"1 where ``jnp.{name}`` holds, else 0, in ``data``'s dtype (MXNet's)."
    )


isinf = _elementwise_test("isinf", jnp.isinf)
isnan = _elementwise_test("isnan", jnp.isnan)
isfinite = _elementwise_test("isfinite", jnp.isfinite)


contrib_names, __getattr__, __dir__ = prefixed_module(
    __name__, OPS, PREFIX, lambda name: nd_function(PREFIX + name)
)
