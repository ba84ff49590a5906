"""Small contrib operators of MXNet 1.9.1: ``index_array``, ``allclose`` and the
straight-through estimators ``round_ste``/``sign_ste`` (JSON names ``_contrib_<name>``).

* ``index_array``: each element's own index, int64 (int32 unless JAX's x64 is on), shape
  ``data.shape + (k,)``; ``axes`` picks (and orders) the index components and, as in
  MXNet, wraps any value modulo ``data.ndim``. Its gradient is zero.
* ``allclose``: MXNet's test ``a == b or |a - b| <= atol + rtol * |b|`` (not symmetric in
  ``a``/``b``; ``equal_nan`` defaults to True), reduced over every element into a 0-d
  uint8 (1 or 0). It has no gradient: binding one through it fails, as in MXNet.
* ``round_ste``/``sign_ste``: ``round`` (half away from zero) and ``sign`` (0 for 0 and
  NaN) forward; the backward passes the head gradient through unchanged.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ._attrs import Param, optional, p_bool, p_float, p_shape
from ._def import OpDef, fail, register
from .dense import same_shape
from .elemwise import round_half_away


def _int64():
    return jax.dtypes.canonicalize_dtype(np.int64)


# ------------------------------------------------------------------ index_array
def _axes(a, ndim: int) -> list:
    if a.axes is None:
        return list(range(ndim))
    if a.axes and ndim == 0:
        fail(f"axes={a.axes} needs data with at least one dimension, got 0-d data")
    return [ax % ndim for ax in a.axes]


def _index_shape(a, s):
    data = s[0]
    if data is None:
        return s, [None]
    return s, [tuple(data) + (len(_axes(a, len(data))),)]


def _index_lower(a, ins, aux, ctx):
    shape, dt = ins[0].shape, _int64()
    parts = [jax.lax.broadcasted_iota(dt, shape, ax) for ax in _axes(a, len(shape))]
    return [jnp.stack(parts, axis=-1) if parts else jnp.zeros(shape + (0,), dt)]


register(
    OpDef(
        name="_contrib_index_array",
        params={"axes": Param(optional(p_shape), None)},
        infer_shape=_index_shape,
        infer_type=lambda a, t: (t, [np.dtype(_int64())]),
        lower=_index_lower,
    )
)


# --------------------------------------------------------------------- allclose
def _allclose_shape(a, s):
    sa, sb = s
    if sa is not None and sb is not None and tuple(sa) != tuple(sb):
        fail(
            f"a {tuple(sa)} and b {tuple(sb)} must have the same shape (allclose compares "
            f"element by element and does not broadcast); broadcast_to one of them first"
        )
    known = sa if sa is not None else sb
    return [known, known], [()]


def _allclose_type(a, t):
    da, db = t
    if da is not None and db is not None and np.dtype(da) != np.dtype(db):
        fail(f"a ({np.dtype(da).name}) and b ({np.dtype(db).name}) must have the same dtype")
    d = da if da is not None else db
    return [d, d], [np.dtype(np.uint8)]


def _allclose_lower(a, ins, aux, ctx):
    x, y = ins
    _allclose_shape(a, [x.shape, y.shape])  # mx.nd calls skip inference
    _allclose_type(a, [x.dtype, y.dtype])
    # MXNet subtracts in the data's dtype and compares against a float tolerance
    # (double for float64 data).
    ct = jnp.float64 if x.dtype == jnp.float64 else jnp.float32
    diff = jnp.where(x > y, x - y, y - x).astype(ct)
    close = (x == y) | (diff <= a.atol + a.rtol * jnp.abs(y.astype(ct)))
    if jnp.issubdtype(x.dtype, jnp.inexact):
        nan_x, nan_y = jnp.isnan(x), jnp.isnan(y)
        close = jnp.where(nan_x | nan_y, (nan_x == nan_y) & a.equal_nan, close)
    return [jnp.all(close).astype(jnp.uint8)]


register(
    OpDef(
        name="_contrib_allclose",
        params={
            "rtol": Param(p_float, 1e-5),
            "atol": Param(p_float, 1e-8),
            "equal_nan": Param(p_bool, True),
        },
        inputs=("a", "b"),
        infer_shape=_allclose_shape,
        infer_type=_allclose_type,
        lower=_allclose_lower,
    )
)


# ------------------------------------------------------- straight-through estimators
def _sign(x):  # MXNet's sign: 0 for 0 and NaN
    one = jnp.ones_like(x)
    return jnp.where(x > 0, one, jnp.where(x < 0, -one, jnp.zeros_like(x)))


def _straight_through(f):
    @jax.custom_jvp
    def ste(x):
        return f(x)

    ste.defjvp(lambda primals, tangents: (ste(primals[0]), tangents[0]))
    return ste


for _name, _fn in (("round", round_half_away), ("sign", _sign)):
    register(
        OpDef(
            name=f"_contrib_{_name}_ste",
            infer_shape=same_shape,
            lower=(lambda f: lambda a, ins, aux, ctx: [f(ins[0])])(_straight_through(_fn)),
        )
    )
