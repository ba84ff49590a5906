"""MXNet's sparse operators in graphs, and the lowerings that take sparse values.

Operators: ``cast_storage``, ``_square_sum``, ``_sparse_retain`` (``mx.sym.sparse.retain``)
and ``_contrib_SparseEmbedding``. Their dense lowerings compute the values MXNet computes
(storage types are an executor matter: ``symbol/stype.py``).

Inside a compiled program a csr argument is a ``CsrParts`` and a weight differentiated as
row_sparse is a ``RowParts`` holding only the rows the batch reads (``executor/rows.py``).
:func:`lower_sparse` runs the operators that read such values without densifying them
(``dot(csr, W)``, ``dot(csr.T, W)``, zero-keeping unary ops on csr, ``Embedding`` and
``_square_sum`` on gathered rows); every other operator gets ``.dense()`` inputs, as MXNet's
storage fallback does.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..ndarray.sparse.parts import CsrParts, RowParts
from ._attrs import Param, choice, p_bool
from ._def import OpDef, get_op, register
from .nn import _emb_lower, _emb_shape
from .reduce import _REDUCE_PARAMS, reduce_axes, reduce_shape
from .elemwise import _UNARY
from .shape import _unary

STYPES = ("default", "row_sparse", "csr")


def is_sparse(value) -> bool:
    return isinstance(value, (CsrParts, RowParts))


def dense(value):
    """A value as a dense array (MXNet's storage fallback)."""
    return value.dense() if is_sparse(value) else value


# ------------------------------------------------------------------ operators
register(
    OpDef(
        name="cast_storage",
        params={"stype": Param(choice(*STYPES))},
        infer_shape=_unary(lambda a, s: tuple(s)),
        lower=lambda a, ins, aux, ctx: [ins[0]],
    )
)


def _square_sum_lower(a, ins, aux, ctx):
    x = ins[0]
    out = jnp.sum(jnp.square(x), reduce_axes(a, x.ndim), keepdims=a.keepdims)
    return [out.astype(x.dtype).reshape(reduce_shape(a, x.shape))]


register(
    OpDef(
        name="_square_sum",
        params=dict(_REDUCE_PARAMS),
        infer_shape=_unary(reduce_shape),
        lower=_square_sum_lower,
    )
)


def _retain_shape(a, s):
    data = s[0]
    return [data, s[1]], [None if data is None else tuple(data)]


def _retain_lower(a, ins, aux, ctx):
    data, idx = ins
    n = data.shape[0]
    keep = jnp.zeros((n,), bool).at[idx.astype(jnp.int32)].set(True, mode="drop")
    return [jnp.where(keep.reshape((n,) + (1,) * (data.ndim - 1)), data, 0).astype(data.dtype)]


register(
    OpDef(
        name="_sparse_retain",
        inputs=("data", "indices"),
        infer_shape=_retain_shape,
        infer_type=lambda a, t: ([t[0], t[1]], [t[0]]),
        lower=_retain_lower,
    )
)

register(
    OpDef(
        name="_contrib_SparseEmbedding",
        # MXNet: EmbeddingParam, plus deterministic (its backward sums each row's
        # gradients in a fixed order; XLA's sums already repeat from run to run)
        params={**get_op("Embedding").params, "deterministic": Param(p_bool, False)},
        inputs=("data", "weight"),
        infer_shape=_emb_shape,
        lower=_emb_lower,
        infer_type=lambda a, t: ([t[0], t[1] or a.dtype], [a.dtype]),
    )
)


# ------------------------------------------------------------------ sparse lowerings
def row_positions(view: RowParts, index):
    """Where each row ``index`` sits in ``view.rows`` (ascending; rows not held: past it)."""
    return jnp.searchsorted(view.rows, index.astype(view.rows.dtype))


def gather_rows(view: RowParts, index):
    """``dense(view)[index]`` read from the held rows (``index`` must be held or padding)."""
    return jnp.take(view.values, row_positions(view, index), axis=0, mode="fill", fill_value=0)


def _csr_matmul(csr: CsrParts, rhs):
    """``csr @ rhs`` for a dense or gathered-rows 2-D ``rhs``."""
    picked = gather_rows(rhs, csr.cols) if isinstance(rhs, RowParts) else None
    if picked is None:
        picked = jnp.take(rhs, csr.cols, axis=0, mode="fill", fill_value=0)
    return jax.ops.segment_sum(picked * csr.data[:, None], csr.rows, num_segments=csr.shape[0])


def _csr_t_matmul(csr: CsrParts, rhs):
    """``csr.T @ rhs`` for a dense 2-D ``rhs``: each entry adds its row of rhs to its column."""
    picked = jnp.take(rhs, csr.rows, axis=0, mode="fill", fill_value=0)
    return jax.ops.segment_sum(picked * csr.data[:, None], csr.cols, num_segments=csr.shape[1])


def _dot(a, ins, ctx):
    lhs, rhs = ins
    if not isinstance(lhs, CsrParts) or a.transpose_b or isinstance(rhs, CsrParts):
        return None
    if getattr(rhs, "ndim", 2) != 2 and not isinstance(rhs, RowParts):
        return None
    if a.transpose_a:
        if isinstance(rhs, RowParts):
            return None
        return [_csr_t_matmul(lhs, rhs).astype(rhs.dtype)]
    dtype = rhs.values.dtype if isinstance(rhs, RowParts) else rhs.dtype
    return [_csr_matmul(lhs, rhs).astype(dtype)]


def _embedding(a, ins, ctx):
    data, weight = ins
    if not isinstance(weight, RowParts) or is_sparse(data):
        return None
    idx = jnp.clip(data.astype(jnp.int32), 0, a.input_dim - 1)
    return [gather_rows(weight, idx)]


def _square_sum(a, ins, ctx):
    (x,) = ins
    if not isinstance(x, RowParts) or len(x.shape) != 2:
        return None
    if 0 in reduce_axes(a, 2):
        return None
    out = jnp.sum(jnp.square(x.values), axis=1, keepdims=True)
    shape = reduce_shape(a, x.shape)
    return [RowParts(x.rows, out.reshape((out.shape[0],) + shape[1:]), shape)]


def _zero_keeping(fn):
    """Unary ops with f(0) == 0 act on the stored values only (MXNet keeps the storage)."""

    def lower(a, ins, ctx):
        (x,) = ins
        if isinstance(x, CsrParts):
            return [CsrParts(fn(x.data), x.rows, x.cols, x.shape)]
        if isinstance(x, RowParts):
            return [RowParts(x.rows, fn(x.values), x.shape)]
        return None

    return lower


def _cast_storage(a, ins, ctx):
    (x,) = ins
    if isinstance(x, CsrParts) and a.stype == "csr":
        return [x]
    return [dense(x)]


ZERO_KEEPING = ("square", "sqrt", "abs", "sign", "negative", "relu", "sin", "tan", "arcsin",
                "arctan", "sinh", "tanh", "arcsinh", "arctanh", "floor", "ceil", "rint",
                "round", "trunc", "fix", "expm1", "log1p", "degrees", "radians",
                "cbrt")  # fmt: skip

SPARSE_LOWER = {
    "dot": _dot,
    "Embedding": _embedding,
    "_contrib_SparseEmbedding": _embedding,
    "_square_sum": _square_sum,
    "cast_storage": _cast_storage,
    **{n: _zero_keeping(_UNARY.get(n, getattr(jnp, n, None))) for n in ZERO_KEEPING},
}
SPARSE_LOWER["negative"] = _zero_keeping(jnp.negative)
SPARSE_LOWER["trunc"] = SPARSE_LOWER["fix"] = _zero_keeping(jnp.trunc)


def lower_sparse(op, a, ins, aux, ctx):
    """The op's result for inputs of which some are sparse values: its sparse lowering
    where it has one for these inputs, else its dense lowering on densified inputs."""
    rule = SPARSE_LOWER.get(op.name)
    out = rule(a, ins, ctx) if rule is not None and not aux else None
    if out is not None:
        return out
    return op.lower(a, [dense(v) for v in ins], aux, ctx)
