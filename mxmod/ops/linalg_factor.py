"""MXNet 1.9.1's linear-algebra operators, part 2: factorisations and inverses.

``_linalg_potrf`` (Cholesky), ``potri`` (inverse from a Cholesky factor), ``gelqf`` (LQ:
outputs Q, L), ``syevd`` (symmetric eigendecomposition: outputs U with the eigenvectors as
rows, and the ascending eigenvalues), ``inverse``, ``det`` and ``slogdet`` (outputs sign,
logabsdet). Batch mode over the leading axes, as in ``linalg.py``.

Gradients are MXNet's. potrf and syevd read one triangle of a symmetric input but return
MXNet's symmetric gradient (not the derivative with respect to the triangle read), so they
have custom VJPs, as do gelqf (MXNet's formula) and det/slogdet (zero for a matrix whose
determinant is 0, as MXNet; the sign of slogdet gets no gradient). potri and inverse are
autodiff of their lowerings, which equals MXNet's formulas.

det and slogdet have MXNet's two hidden outputs (the LU factors and the 1-based LAPACK
pivots, int32), so a node has MXNet's output count in symbol JSON. A matrix that is not
positive definite gives NaN from potrf (MXNet raises in LAPACK); a singular one gives inf
or NaN from inverse.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ._attrs import Param, p_bool
from ._def import fail, register
from .linalg import float_type, linalg_op, matrices, swap, triangle, unary


def _symmetric(x, lower: bool):
    """The symmetric matrix whose ``lower`` (or upper) triangle is that of ``x``."""
    t = triangle(x, lower)
    strict = jnp.tril(x, -1) if lower else jnp.triu(x, 1)
    return t + swap(strict)


def _solve(T, B, lower: bool, transpose: bool = False, left: bool = True):
    """``op(T)^-1 B`` (``left``) or ``B op(T)^-1`` for triangular ``T`` (BLAS trsm)."""
    return lax.linalg.triangular_solve(T, B, left_side=left, lower=lower, transpose_a=transpose)


def _same_shape(op: str):
    return unary(lambda a, s: (matrices(op, "A", s, square=True), [s])[1])


# ------------------------------------------------------------------------------ potrf
@jax.custom_vjp
def _cholesky_lower(x):
    return jnp.linalg.cholesky(_symmetric(x, True), symmetrize_input=False)


def _cholesky_fwd(x):
    L = _cholesky_lower(x)
    return L, L


def _cholesky_bwd(L, g):
    # MXNet: dA = 0.5 L^-T copyLTU(L^T dL) L^-1, copyLTU mirroring the lower triangle
    M = jnp.matmul(swap(L), g)
    M = jnp.tril(M) + swap(jnp.tril(M, -1))
    X = _solve(L, M, lower=True, transpose=True)
    return (0.5 * _solve(L, X, lower=True, left=False),)


_cholesky_lower.defvjp(_cholesky_fwd, _cholesky_bwd)


def _potrf_lower(a, ins, aux, ctx):
    # upper: A = U^T U with U = L^T, L the lower factor of the mirrored upper triangle
    x = ins[0] if a.lower else swap(ins[0])
    L = _cholesky_lower(x)
    return [L if a.lower else swap(L)]


def _potri_lower(a, ins, aux, ctx):
    T = triangle(ins[0], a.lower)
    eye = jnp.broadcast_to(jnp.eye(T.shape[-1], dtype=T.dtype), T.shape)
    Tinv = _solve(T, eye, lower=a.lower)
    # lower: (T T^T)^-1 = T^-T T^-1; upper: (T^T T)^-1 = T^-1 T^-T
    return [jnp.matmul(swap(Tinv), Tinv) if a.lower else jnp.matmul(Tinv, swap(Tinv))]


for _name, _lower in (("potrf", _potrf_lower), ("potri", _potri_lower)):
    register(
        linalg_op(
            name=f"_linalg_{_name}",
            aliases=(f"linalg_{_name}",),
            inputs=("A",),
            params={"lower": Param(p_bool, True)},
            infer_shape=_same_shape(f"linalg.{_name}"),
            infer_type=float_type(f"linalg.{_name}"),
            lower=_lower,
        )
    )


# ------------------------------------------------------------------------------ gelqf
@jax.custom_vjp
def _lq(A):
    # LQ of A is the transposed QR of A^T (the same Householder reflections as LAPACK gelqf)
    q, r = jnp.linalg.qr(swap(A), mode="reduced")
    return swap(q), swap(r)


def _lq_fwd(A):
    Q, L = _lq(A)
    return (Q, L), (Q, L)


def _lq_bwd(res, grads):
    # MXNet: dA = L^-T (dQ + copyLTU(M) Q), M = L^T dL - dQ Q^T
    Q, L = res
    dQ, dL = grads
    M = jnp.matmul(swap(L), dL) - jnp.matmul(dQ, swap(Q))
    M = jnp.tril(M) + swap(jnp.tril(M, -1))
    return (_solve(L, dQ + jnp.matmul(M, Q), lower=True, transpose=True),)


_lq.defvjp(_lq_fwd, _lq_bwd)


def _gelqf_shape(a, s):
    matrices("linalg.gelqf", "A", s)
    if s[-2] > s[-1]:
        fail(f"linalg.gelqf: A {s} must have no more rows than columns (LQ of a wide matrix)")
    return [s, tuple(s[:-1]) + (s[-2],)]


register(
    linalg_op(
        name="_linalg_gelqf",
        aliases=("linalg_gelqf",),
        inputs=("A",),
        outputs=("output0", "output1"),
        infer_shape=unary(_gelqf_shape),
        infer_type=float_type("linalg.gelqf", 2),
        lower=lambda a, ins, aux, ctx: list(_lq(ins[0])),
    )
)


# ------------------------------------------------------------------------------ syevd
def _eig_rows(A):
    """(U, lam): eigenvectors as rows of U, each with its largest-|.| entry (the first
    on a tie) positive, and eigenvalues ascending: MXNet's deterministic signs."""
    lam, V = jnp.linalg.eigh(_symmetric(A, True), symmetrize_input=False)
    U = swap(V)
    k = jnp.argmax(jnp.abs(U), axis=-1)
    lead = jnp.take_along_axis(U, k[..., None], axis=-1)
    return jnp.where(lead < 0, -U, U), lam


@jax.custom_vjp
def _syevd(A):
    return _eig_rows(A)


def _syevd_fwd(A):
    U, lam = _eig_rows(A)
    return (U, lam), (U, lam)


def _syevd_bwd(res, grads):
    # MXNet: dA = U^T Y U; X = dU U^T, Y_ij = Y_ji = (X_ij - X_ji) / (2 max(l_i - l_j, eps))
    # for i > j (eps 1e-30, 1e-100 in float64), diag(Y) = dlam
    U, lam = res
    dU, dlam = grads
    X = jnp.matmul(dU, swap(U))
    eps = 1e-100 if lam.dtype == jnp.float64 else 1e-30
    gap = jnp.maximum(lam[..., :, None] - lam[..., None, :], jnp.asarray(eps, lam.dtype))
    Y = jnp.tril((X - swap(X)) / (2 * gap), -1)
    n = lam.shape[-1]
    Y = Y + swap(Y) + jnp.eye(n, dtype=lam.dtype) * dlam[..., None, :]
    return (jnp.matmul(jnp.matmul(swap(U), Y), U),)


_syevd.defvjp(_syevd_fwd, _syevd_bwd)


def _syevd_shape(a, s):
    matrices("linalg.syevd", "A", s, square=True)
    return [s, tuple(s[:-1])]


register(
    linalg_op(
        name="_linalg_syevd",
        inputs=("A",),
        outputs=("output0", "output1"),
        infer_shape=unary(_syevd_shape),
        infer_type=float_type("linalg.syevd", 2),
        lower=lambda a, ins, aux, ctx: list(_syevd(ins[0])),
    )
)


# --------------------------------------------------------------------------- inverse
register(
    linalg_op(
        name="_linalg_inverse",
        aliases=("linalg_inverse",),
        inputs=("A",),
        infer_shape=_same_shape("linalg.inverse"),
        infer_type=float_type("linalg.inverse"),
        lower=lambda a, ins, aux, ctx: [jnp.linalg.inv(ins[0])],
    )
)


# ----------------------------------------------------------------------- det, slogdet
def _lu_parts(A):
    """MXNet's LU route: (sign, log|det|, LU, 1-based pivots) of every matrix of ``A``.
    Like MXNet (column-major LAPACK on row-major data) it factors A^T, so the same inputs
    give an exactly zero pivot (determinant 0, zero gradient) where MXNet's does."""
    lu, piv, _ = lax.linalg.lu(swap(A))
    diag = jnp.diagonal(lu, axis1=-2, axis2=-1)
    swaps = jnp.sum(piv != jnp.arange(piv.shape[-1], dtype=piv.dtype), axis=-1)
    sign = jnp.where(swaps % 2 == 1, -1.0, 1.0).astype(A.dtype) * jnp.prod(jnp.sign(diag), -1)
    return sign, jnp.sum(jnp.log(jnp.abs(diag)), -1), lu, piv + 1


def _inv_t(A, keep):
    """inverse(A)^T where ``keep`` (per matrix), zero elsewhere (MXNet's singular case)."""
    return jnp.where(keep[..., None, None], swap(jnp.linalg.inv(A)), 0)


@jax.custom_vjp
def _det(A):
    sign, logabs, _, _ = _lu_parts(A)
    return sign * jnp.exp(logabs)


def _det_fwd(A):
    d = _det(A)
    return d, (A, d)


def _det_bwd(res, g):
    A, d = res
    return ((g * d)[..., None, None] * _inv_t(A, d != 0),)


_det.defvjp(_det_fwd, _det_bwd)


@jax.custom_vjp
def _slogdet(A):
    sign, logabs, _, _ = _lu_parts(A)
    return sign, logabs


def _slogdet_fwd(A):
    sign, logabs = _slogdet(A)
    return (sign, logabs), (A, logabs)


def _slogdet_bwd(res, grads):
    A, logabs = res
    return (grads[1][..., None, None] * _inv_t(A, logabs != -jnp.inf),)


_slogdet.defvjp(_slogdet_fwd, _slogdet_bwd)


def _det_shape(n_values: int):
    def infer(a, s):
        matrices(f"linalg.{'det' if n_values == 1 else 'slogdet'}", "A", s, square=True)
        value = tuple(s[:-2]) or (1,)
        return [value] * n_values + [s, tuple(s[:-1])]

    return infer


def _det_lower(a, ins, aux, ctx):
    A = ins[0]
    _, _, lu, piv = _lu_parts(lax.stop_gradient(A))
    shape = A.shape[:-2] or (1,)
    return [_det(A).reshape(shape), lu, piv]


def _slogdet_lower(a, ins, aux, ctx):
    A = ins[0]
    _, _, lu, piv = _lu_parts(lax.stop_gradient(A))
    shape = A.shape[:-2] or (1,)
    sign, logabs = _slogdet(A)
    return [sign.reshape(shape), logabs.reshape(shape), lu, piv]


for _name, _n, _lower in (("det", 1, _det_lower), ("slogdet", 2, _slogdet_lower)):
    register(
        linalg_op(
            name=f"_linalg_{_name}",
            aliases=(f"linalg_{_name}",),
            inputs=("A",),
            outputs=tuple(f"output{i}" for i in range(_n)),
            num_outputs_total=lambda a, n=_n: n + 2,
            infer_shape=unary(_det_shape(_n)),
            infer_type=float_type(f"linalg.{_name}", _n + 1, extra=(np.dtype(np.int32),)),
            lower=_lower,
        )
    )
