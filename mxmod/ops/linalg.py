"""MXNet 1.9.1's linear-algebra operators, part 1: matrix products and matrix layout.

``_linalg_gemm``/``gemm2`` (general products, optional row ``axis``), ``syrk``, ``trmm`` and
``trsm`` (triangular multiply and solve), ``sumlogdiag``, ``extractdiag``/``makediag`` and
``extracttrian``/``maketrian``. The factorisations (potrf, potri, gelqf, syevd, inverse,
det, slogdet) are in ``linalg_factor.py``. Each is ``mx.sym.linalg.<name>`` (``_linalg_``
stripped, as MXNet does) and, except syevd, also the flat ``linalg_<name>``.

Every operator works on the trailing two axes and runs once per matrix of the leading
(batch) axes. As BLAS does, triangular operands are read only in the triangle ``lower``
names; the other triangle is ignored (its gradient is zero). MXNet supports float32 and
float64 only. Gradients are autodiff of these lowerings, which equal MXNet's formulas.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
from jax import lax

from ..base import MXNetError
from ._attrs import Param, p_bool, p_float, p_int
from ._def import OpDef, fail, register

FLOAT_TYPES = (np.dtype(np.float32), np.dtype(np.float64))


def float_type(op: str, n_out: int = 1, extra=()):
    """Type rule of MXNet's linalg ops: one float32/float64 type for the inputs and the
    first ``n_out`` outputs, then the fixed types ``extra`` (det's int32 pivot)."""

    def infer(a, dtypes):
        known = next((np.dtype(d) for d in dtypes if d is not None), None)
        if known is None:
            return dtypes, [None] * n_out + list(extra)
        if known not in FLOAT_TYPES:
            raise MXNetError(
                f"{op}: input type {known.name} is not supported; MXNet's linalg operators "
                "take float32 or float64 (cast the input with astype('float32'))"
            )
        return [known] * len(dtypes), [known] * n_out + list(extra)

    return infer


def matrices(op: str, what: str, s: tuple, square: bool = False) -> None:
    """Fails unless ``s`` is a tensor of matrices (ndim >= 2), square ones if ``square``."""
    if len(s) < 2:
        fail(f"{op}: {what} {s} must have at least 2 dimensions (a tensor of matrices)")
    if square and s[-1] != s[-2]:
        fail(f"{op}: {what} {s} must be a tensor of square matrices (last two dims equal)")


def swap(x):
    """The transposes of a tensor of matrices."""
    return jnp.swapaxes(x, -1, -2)


def triangle(x, lower: bool):
    """The triangle BLAS/LAPACK read (``lower`` or upper, with the diagonal); rest zero."""
    return jnp.tril(x) if lower else jnp.triu(x)


def linalg_op(**fields) -> OpDef:
    """An OpDef whose lowering first runs its shape and type rules on the static inputs,
    so that ``mx.nd`` calls (which skip graph inference) fail with the same messages."""
    infer_shape, infer_type, lower = fields["infer_shape"], fields["infer_type"], fields["lower"]

    def checked_lower(a, ins, aux, ctx):
        infer_shape(a, [tuple(x.shape) for x in ins])
        infer_type(a, [x.dtype for x in ins])
        return lower(a, ins, aux, ctx)

    return OpDef(**{**fields, "lower": checked_lower})


def unary(fn):
    """``infer_shape`` of a one-input op: ``fn(a, shape) -> [output shapes]``."""
    return lambda a, s: (s, [None] if s[0] is None else fn(a, tuple(s[0])))


# ----------------------------------------------------------------------- gemm, gemm2
def _row_axis(op: str, a, shape: tuple) -> int:
    nd = len(shape)
    axis = a.axis + nd if a.axis < 0 else a.axis
    if not 0 <= axis < nd - 1:
        fail(f"{op}: invalid row axis {a.axis} for A {shape} (the last axis holds the columns)")
    return axis


def _gemm_out(op: str, a, sa: tuple, sb: tuple) -> tuple:
    if len(sa) < 2 or len(sa) != len(sb):
        fail(f"{op}: A {sa} and B {sb} need the same number of dimensions, at least 2")
    nd = len(sa)
    axis = _row_axis(op, a, sa)
    for i in range(nd - 1):
        if i != axis and sa[i] != sb[i]:
            fail(f"{op}: A {sa} and B {sb} must have the same shape except on the row/column axes")
    ka = sa[axis] if a.transpose_a else sa[-1]
    kb = sb[-1] if a.transpose_b else sb[axis]
    if ka != kb:
        fail(f"{op}: A {sa} and B {sb} have incompatible matrix dimensions ({ka} vs {kb})")
    out = list(sa)
    out[axis] = sa[-1] if a.transpose_a else sa[axis]
    out[-1] = sb[axis] if a.transpose_b else sb[-1]
    return tuple(out)


def _gemm2_shape(a, s):
    if s[0] is None or s[1] is None:
        return s, [None]
    return s, [_gemm_out("linalg.gemm2", a, tuple(s[0]), tuple(s[1]))]


def _gemm_shape(a, s):
    if s[0] is None or s[1] is None:
        return s, [s[2]]
    out = _gemm_out("linalg.gemm", a, tuple(s[0]), tuple(s[1]))
    if s[2] is not None and tuple(s[2]) != out:
        fail(f"linalg.gemm: C {tuple(s[2])} must have the shape of op(A) * op(B), {out}")
    return [s[0], s[1], out], [out]


def _product(a, A, B):
    """``alpha * op(A) * op(B)`` with the rows on ``a.axis`` (swapped to -2 and back)."""
    axis = _row_axis("linalg.gemm", a, A.shape)
    if axis != A.ndim - 2:
        A, B = jnp.swapaxes(A, axis, -2), jnp.swapaxes(B, axis, -2)
    out = jnp.matmul(swap(A) if a.transpose_a else A, swap(B) if a.transpose_b else B)
    out = out * jnp.asarray(a.alpha, out.dtype)
    return out if axis == A.ndim - 2 else jnp.swapaxes(out, axis, -2)


def _gemm_lower(a, ins, aux, ctx):
    A, B, C = ins
    return [_product(a, A, B) + jnp.asarray(a.beta, C.dtype) * C]


_GEMM_PARAMS = {
    "transpose_a": Param(p_bool, False),
    "transpose_b": Param(p_bool, False),
    "alpha": Param(p_float, 1.0),
    "axis": Param(p_int, -2),
}

register(
    linalg_op(
        name="_linalg_gemm",
        aliases=("linalg_gemm",),
        inputs=("A", "B", "C"),
        params={**_GEMM_PARAMS, "beta": Param(p_float, 1.0)},
        positional=("transpose_a", "transpose_b", "alpha", "beta", "axis"),
        infer_shape=_gemm_shape,
        infer_type=float_type("linalg.gemm"),
        lower=_gemm_lower,
    )
)
register(
    linalg_op(
        name="_linalg_gemm2",
        aliases=("linalg_gemm2",),
        inputs=("A", "B"),
        params=dict(_GEMM_PARAMS),
        infer_shape=_gemm2_shape,
        infer_type=float_type("linalg.gemm2"),
        lower=lambda a, ins, aux, ctx: [_product(a, ins[0], ins[1])],
    )
)


# ------------------------------------------------------------------ syrk, trmm, trsm
def _syrk_shape(a, s):
    matrices("linalg.syrk", "A", s)
    n = s[-1] if a.transpose else s[-2]
    return [tuple(s[:-2]) + (n, n)]


def _syrk_lower(a, ins, aux, ctx):
    A = ins[0]
    out = jnp.matmul(swap(A), A) if a.transpose else jnp.matmul(A, swap(A))
    return [out * jnp.asarray(a.alpha, out.dtype)]


register(
    linalg_op(
        name="_linalg_syrk",
        aliases=("linalg_syrk",),
        inputs=("A",),
        params={"transpose": Param(p_bool, False), "alpha": Param(p_float, 1.0)},
        infer_shape=unary(_syrk_shape),
        infer_type=float_type("linalg.syrk"),
        lower=_syrk_lower,
    )
)


def _tri_shape(op: str):
    def infer(a, s):
        if s[0] is None or s[1] is None:
            return s, [None]
        sa, sb = tuple(s[0]), tuple(s[1])
        matrices(op, "A", sa, square=True)
        if len(sb) != len(sa) or sb[:-2] != sa[:-2]:
            fail(f"{op}: A {sa} and B {sb} need the same number of dimensions and batch dims")
        k = sb[-1] if a.rightside else sb[-2]
        if k != sa[-1]:
            side = "columns" if a.rightside else "rows"
            fail(
                f"{op}: B {sb} must have {sa[-1]} {side} to match A {sa} (rightside={a.rightside})"
            )
        return s, [sb]

    return infer


_TRI_PARAMS = {
    "transpose": Param(p_bool, False),
    "rightside": Param(p_bool, False),
    "lower": Param(p_bool, True),
    "alpha": Param(p_float, 1.0),
}


def _trmm_lower(a, ins, aux, ctx):
    T = triangle(ins[0], a.lower)
    opT = swap(T) if a.transpose else T
    out = jnp.matmul(ins[1], opT) if a.rightside else jnp.matmul(opT, ins[1])
    return [out * jnp.asarray(a.alpha, out.dtype)]


def _trsm_lower(a, ins, aux, ctx):
    T, B = triangle(ins[0], a.lower), ins[1]
    rhs = B * jnp.asarray(a.alpha, B.dtype)
    return [
        lax.linalg.triangular_solve(
            T, rhs, left_side=not a.rightside, lower=a.lower, transpose_a=a.transpose
        )
    ]


for _name, _lower in (("trmm", _trmm_lower), ("trsm", _trsm_lower)):
    register(
        linalg_op(
            name=f"_linalg_{_name}",
            aliases=(f"linalg_{_name}",),
            inputs=("A", "B"),
            params=dict(_TRI_PARAMS),
            infer_shape=_tri_shape(f"linalg.{_name}"),
            infer_type=float_type(f"linalg.{_name}"),
            lower=_lower,
        )
    )


# ------------------------------------------------------------------------ sumlogdiag
def _sumlogdiag_shape(a, s):
    matrices("linalg.sumlogdiag", "A", s, square=True)
    return [tuple(s[:-2]) or (1,)]


def _sumlogdiag_lower(a, ins, aux, ctx):
    A = ins[0]
    out = jnp.sum(jnp.log(jnp.diagonal(A, axis1=-2, axis2=-1)), axis=-1)
    return [out.reshape(A.shape[:-2] or (1,))]


register(
    linalg_op(
        name="_linalg_sumlogdiag",
        aliases=("linalg_sumlogdiag",),
        inputs=("A",),
        infer_shape=unary(_sumlogdiag_shape),
        infer_type=float_type("linalg.sumlogdiag"),
        lower=_sumlogdiag_lower,
    )
)


# ------------------------------------------------------- diagonals and triangles
def _diag_index(n: int, offset: int) -> tuple:
    """(rows, cols) of diagonal ``offset`` of an n x n matrix (>0 above the main one)."""
    i = np.arange(n - abs(offset))
    return i + max(-offset, 0), i + max(offset, 0)


def _trian_index(n: int, offset: int, lower: bool) -> tuple:
    """(rows, cols) of the triangle MXNet's extracttrian packs, in its order: a lower
    triangle (offset < 0, or 0 with ``lower``) row by row, an upper one column by column."""
    k = abs(offset)
    upper = offset > 0 or (offset == 0 and not lower)
    rows, cols = [], []
    for r in range(n - k):
        for c in range(r + 1):
            rows.append(c if upper else r + k)
            cols.append(r + k if upper else c)
    return np.asarray(rows, np.int32), np.asarray(cols, np.int32)


def _extract_shape(op: str, diag: bool):
    def infer(a, s):
        matrices(op, "A", s, square=True)
        n = s[-1] - abs(a.offset)
        if n <= 0:
            fail(
                f"{op}: offset {a.offset} leaves no entries of the {s[-1]}x{s[-1]} matrices "
                f"of A {s}"
            )
        return [tuple(s[:-2]) + ((n if diag else n * (n + 1) // 2),)]

    return infer


def _maketrian_size(s: tuple) -> int:
    n = s[-1]
    m = int(math.floor(0.5 + (math.sqrt(8 * n + 1) - 1.0) * 0.5))
    if m * (m + 1) // 2 != n:
        fail(
            f"linalg.maketrian: the last axis of A {s} has {n} entries, not a triangular "
            "number m*(m+1)/2"
        )
    return m


def _make_shape(op: str, diag: bool):
    def infer(a, s):
        if len(s) < 1:
            fail(f"{op}: A {s} must have at least 1 dimension")
        m = s[-1] if diag else _maketrian_size(s)
        n = m + abs(a.offset)
        return [tuple(s[:-1]) + (n, n)]

    return infer


def _extractdiag_lower(a, ins, aux, ctx):
    A = ins[0]
    rows, cols = _diag_index(A.shape[-1], a.offset)
    return [A[..., rows, cols]]


def _makediag_lower(a, ins, aux, ctx):
    A = ins[0]
    n = A.shape[-1] + abs(a.offset)
    rows, cols = _diag_index(n, a.offset)
    return [jnp.zeros(A.shape[:-1] + (n, n), A.dtype).at[..., rows, cols].set(A)]


def _extracttrian_lower(a, ins, aux, ctx):
    A = ins[0]
    rows, cols = _trian_index(A.shape[-1], a.offset, a.lower)
    return [A[..., rows, cols]]


def _maketrian_lower(a, ins, aux, ctx):
    A = ins[0]
    n = _maketrian_size(A.shape) + abs(a.offset)
    rows, cols = _trian_index(n, a.offset, a.lower)
    return [jnp.zeros(A.shape[:-1] + (n, n), A.dtype).at[..., rows, cols].set(A)]


_DIAG = {"offset": Param(p_int, 0)}
_TRIAN = {"offset": Param(p_int, 0), "lower": Param(p_bool, True)}

for _name, _params, _shape, _lower in (
    ("extractdiag", _DIAG, _extract_shape("linalg.extractdiag", True), _extractdiag_lower),
    ("makediag", _DIAG, _make_shape("linalg.makediag", True), _makediag_lower),
    ("extracttrian", _TRIAN, _extract_shape("linalg.extracttrian", False), _extracttrian_lower),
    ("maketrian", _TRIAN, _make_shape("linalg.maketrian", False), _maketrian_lower),
):
    register(
        linalg_op(
            name=f"_linalg_{_name}",
            aliases=(f"linalg_{_name}",),
            inputs=("A",),
            params=dict(_params),
            infer_shape=unary(_shape),
            infer_type=float_type(f"linalg.{_name}"),
            lower=_lower,
        )
    )
