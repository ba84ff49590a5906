"""``_histogram``: counts of ``data`` in ``bin_cnt`` equal bins over ``range``, or in the
bins whose edges the ``bins`` input gives (``mx.nd.histogram``/``mx.sym.histogram``).

NumPy's rule: bins are half-open except the last, which holds its right edge; values
outside the range are not counted. Outputs: the counts (int64 in MXNet; int32 here, as
every int64 without JAX's 64-bit mode) and the float edges.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ._attrs import Param, optional, p_float_tuple, p_int
from ._def import OpDef, fail, register


def _inputs(a):
    return ["data"] if a.bin_cnt is not None else ["data", "bins"]


def _check(a):
    if a.bin_cnt is None:
        return
    if a.bin_cnt < 1:
        fail(f"bin_cnt={a.bin_cnt} must be at least 1")
    if a.range is None or len(a.range) != 2 or not a.range[0] < a.range[1]:
        fail(f"range={a.range} must be (low, high) with low < high when bin_cnt is given")


def _shape(a, s):
    _check(a)
    n_edges = a.bin_cnt + 1 if a.bin_cnt is not None else (s[1][0] if s[1] else None)
    if n_edges is None:
        return s, [None, None]
    return s, [(n_edges - 1,), (n_edges,)]


def _lower(a, ins, aux, ctx):
    _check(a)  # mx.nd calls skip shape inference: its checks run here
    x = ins[0].reshape(-1).astype(jnp.float32)
    if a.bin_cnt is not None:
        lo, hi = a.range
        n = a.bin_cnt
        edges = jnp.linspace(lo, hi, n + 1, dtype=jnp.float32)
        idx = jnp.floor((x - lo) / (hi - lo) * n).astype(jnp.int32)
    else:
        edges = ins[1].astype(jnp.float32)
        n = edges.shape[0] - 1
        idx = jnp.searchsorted(edges, x, side="right").astype(jnp.int32) - 1
    lo, hi = edges[0], edges[-1]
    idx = jnp.clip(jnp.where(x == hi, n - 1, idx), 0, n - 1)
    inside = ((x >= lo) & (x <= hi)).astype(jnp.int32)
    counts = jnp.zeros((n,), jnp.int32).at[idx].add(inside)
    return [counts, edges]


register(
    OpDef(
        name="_histogram",
        params={
            "bin_cnt": Param(optional(p_int), None),
            "range": Param(optional(p_float_tuple), None),
        },
        inputs=_inputs,
        outputs=("output0", "output1"),
        infer_shape=_shape,
        infer_type=lambda a, t: (t, [np.dtype("int32"), np.dtype("float32")]),
        lower=_lower,
    )
)
