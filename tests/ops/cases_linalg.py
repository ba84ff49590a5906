"""Operator cases for issue #23's linear-algebra operators (``mx.sym.linalg.*`` and the flat
``linalg_*`` names). Loaded by ``cases.py`` (see ``_sibling`` there); stdlib only.

Matrices that must be well conditioned (triangular solves, Cholesky, inverses,
determinants, eigenproblems with separated eigenvalues) are explicit `values` built from a
deterministic sine pattern; the rest are the generator's standard-normal inputs. Inputs of
potrf and syevd are not symmetric, so the goldens also record which triangle MXNet reads.
"""

from __future__ import annotations

import math
from typing import Any, Callable

# case id -> why finite differences cannot check its (golden-checked) gradient
_SYMMETRIC_GRAD = (
    "MXNet's gradient is the symmetric one of a symmetric input, while the forward reads "
    'one triangle (the derivative puts it all in that triangle)'
)
FD_SKIP = {
    k: _SYMMETRIC_GRAD
    for k in (
        'linalg_potrf',
        'linalg_potrf_upper_batch',
        'linalg_potrf_flat',
        'linalg_syevd',
        'linalg_syevd_batch',
    )
}


def _pattern(n: int, seed: int, scale: float = 0.5, diag: float = 0.0) -> list:
    """An n x n matrix of deterministic values in [-scale, scale], plus `diag` on the diagonal."""
    wave = [[math.sin(1.7 * seed + 2.3 * i + 1.1 * j + 0.37 * i * j) for j in range(n)]
            for i in range(n)]  # fmt: skip
    return [[scale * wave[i][j] + (diag if i == j else 0) for j in range(n)] for i in range(n)]


def _spd(n: int, seed: int, skew: float = 0.0, lower: bool = True) -> list:
    """M M^T + n I (symmetric positive definite), with `skew` added to the triangle that
    `lower` says is ignored (so a reader of the wrong triangle gets a different answer)."""
    m = _pattern(n, seed, scale=1.0)
    out = [[sum(m[i][k] * m[j][k] for k in range(n)) + (n if i == j else 0) for j in range(n)]
           for i in range(n)]  # fmt: skip
    for i in range(n):
        for j in range(n):
            if (j > i) if lower else (j < i):
                out[i][j] += skew
    return out


def _triangular(n: int, seed: int, lower: bool = True) -> list:
    """A well-conditioned matrix (dominant diagonal in [1.5, 2.5]); the triangle opposite to
    `lower` holds large values the operators must ignore."""
    m = _pattern(n, seed, diag=2.0)
    return [[m[i][j] if (j <= i) == lower or i == j else 7.0 + i - j for j in range(n)]
            for i in range(n)]  # fmt: skip


def _separated(n: int, seed: int, skew: float = 0.0) -> list:
    """A symmetric matrix with eigenvalues near 1, 2.5, 4, ... (well separated), plus
    `skew` in the upper triangle."""
    m = _pattern(n, seed, scale=0.3)
    return [
        [(m[i][j] + m[j][i]) / 2 + (1 + 1.5 * i if i == j else 0) + (skew if j > i else 0)
         for j in range(n)]
        for i in range(n)
    ]  # fmt: skip


def _general(n: int, seed: int, negate_row: bool = False) -> list:
    m = _pattern(n, seed, diag=2.0)
    if negate_row:
        m[0] = [-x for x in m[0]]
    return m


def cases(C: Callable[..., Any]) -> list:
    A, B = 'A', 'B'
    return [
        # gemm / gemm2 (rows on `axis`, default -2)
        C('linalg_gemm', 'linalg.gemm', {A: (2, 3), B: (3, 4), 'C': (2, 4)},
          {'alpha': 2.0, 'beta': 0.5}),
        C('linalg_gemm_batch_transpose', 'linalg.gemm',
          {A: (2, 3, 2), B: (2, 4, 3), 'C': (2, 2, 4)}, {'transpose_a': True, 'transpose_b': True}),
        C('linalg_gemm_axis0', 'linalg.gemm', {A: (3, 2, 4), B: (4, 2, 5), 'C': (3, 2, 5)},
          {'axis': 0, 'beta': -1.5}),
        C('linalg_gemm_flat', 'linalg_gemm', {A: (2, 3), B: (2, 4), 'C': (3, 4)},
          {'transpose_a': True}),
        C('linalg_gemm2', 'linalg.gemm2', {A: (2, 3, 4), B: (2, 4, 5)}, {'alpha': 0.5}),
        C('linalg_gemm2_axis1', 'linalg.gemm2', {A: (2, 3, 2, 4), B: (2, 5, 2, 3)},
          {'axis': 1, 'transpose_a': True, 'transpose_b': True}),
        C('linalg_gemm2_flat', 'linalg_gemm2', {A: (3, 2), B: (4, 2)}, {'transpose_b': True}),
        # syrk, trmm, trsm
        C('linalg_syrk', 'linalg.syrk', {A: (3, 4)}),
        C('linalg_syrk_transpose_batch', 'linalg.syrk', {A: (2, 3, 4)},
          {'transpose': True, 'alpha': 0.7}),
        C('linalg_trmm', 'linalg.trmm', {A: (3, 3), B: (3, 4)}),
        C('linalg_trmm_right_upper_batch', 'linalg.trmm', {A: (2, 3, 3), B: (2, 4, 3)},
          {'rightside': True, 'transpose': True, 'lower': False, 'alpha': -2.0}),
        C('linalg_trsm', 'linalg.trsm', {A: (3, 3), B: (3, 4)}, values={A: _triangular(3, 1)}),
        C('linalg_trsm_right_upper_batch', 'linalg.trsm', {A: (2, 3, 3), B: (2, 4, 3)},
          {'rightside': True, 'transpose': True, 'lower': False, 'alpha': 2.0},
          values={A: [_triangular(3, 2, lower=False), _triangular(3, 3, lower=False)]}),
        C('linalg_trsm_flat_transpose', 'linalg_trsm', {A: (3, 3), B: (3, 2)},
          {'transpose': True}, values={A: _triangular(3, 4)}),
        # sumlogdiag, diagonals, triangles
        C('linalg_sumlogdiag', 'linalg.sumlogdiag', {A: (3, 3)}, positive={A}),
        C('linalg_sumlogdiag_batch', 'linalg.sumlogdiag', {A: (2, 3, 3)}, positive={A}),
        C('linalg_extractdiag', 'linalg.extractdiag', {A: (3, 3)}),
        C('linalg_extractdiag_offset_batch', 'linalg.extractdiag', {A: (2, 4, 4)}, {'offset': 1}),
        C('linalg_extractdiag_flat_below', 'linalg_extractdiag', {A: (4, 4)}, {'offset': -2}),
        C('linalg_makediag', 'linalg.makediag', {A: (3,)}),
        C('linalg_makediag_offset_batch', 'linalg.makediag', {A: (2, 3)}, {'offset': -1}),
        C('linalg_extracttrian', 'linalg.extracttrian', {A: (3, 3)}),
        C('linalg_extracttrian_upper_batch', 'linalg.extracttrian', {A: (2, 3, 3)},
          {'lower': False}),
        C('linalg_extracttrian_above', 'linalg.extracttrian', {A: (4, 4)}, {'offset': 1}),
        C('linalg_extracttrian_flat_below', 'linalg_extracttrian', {A: (4, 4)},
          {'offset': -2, 'lower': False}),
        C('linalg_maketrian', 'linalg.maketrian', {A: (6,)}),
        C('linalg_maketrian_upper_batch', 'linalg.maketrian', {A: (2, 6)}, {'lower': False}),
        C('linalg_maketrian_above', 'linalg.maketrian', {A: (3,)}, {'offset': 1}),
        C('linalg_maketrian_flat_below', 'linalg_maketrian', {A: (2, 3)}, {'offset': -2}),
        # Cholesky: potrf, potri
        C('linalg_potrf', 'linalg.potrf', {A: (3, 3)}, values={A: _spd(3, 1, skew=0.4)}),
        C('linalg_potrf_upper_batch', 'linalg.potrf', {A: (2, 3, 3)}, {'lower': False},
          values={A: [_spd(3, 2, 0.4, lower=False), _spd(3, 3, -0.3, lower=False)]}),
        C('linalg_potrf_flat', 'linalg_potrf', {A: (4, 4)}, values={A: _spd(4, 4)}),
        C('linalg_potri', 'linalg.potri', {A: (3, 3)}, values={A: _triangular(3, 5)}),
        C('linalg_potri_upper_batch', 'linalg.potri', {A: (2, 3, 3)}, {'lower': False},
          values={A: [_triangular(3, 6, lower=False), _triangular(3, 7, lower=False)]}),
        # LQ, symmetric eigendecomposition
        C('linalg_gelqf', 'linalg.gelqf', {A: (2, 3)}),
        C('linalg_gelqf_batch', 'linalg.gelqf', {A: (2, 3, 4)}),
        C('linalg_gelqf_flat_square', 'linalg_gelqf', {A: (3, 3)}, values={A: _general(3, 8)}),
        C('linalg_syevd', 'linalg.syevd', {A: (3, 3)}, values={A: _separated(3, 1, skew=0.5)}),
        C('linalg_syevd_batch', 'linalg.syevd', {A: (2, 4, 4)},
          values={A: [_separated(4, 2), _separated(4, 3, skew=-0.2)]}),
        # inverse, det, slogdet
        C('linalg_inverse', 'linalg.inverse', {A: (3, 3)}, values={A: _general(3, 9)}),
        C('linalg_inverse_flat_batch', 'linalg_inverse', {A: (2, 3, 3)},
          values={A: [_general(3, 10), _general(3, 11, negate_row=True)]}),
        C('linalg_det', 'linalg.det', {A: (3, 3)}, values={A: _general(3, 12)}),
        C('linalg_det_batch', 'linalg.det', {A: (2, 2, 3, 3)},
          values={A: [[_general(3, 13 + 2 * i + j, negate_row=j == 1) for j in range(2)]
                      for i in range(2)]}),
        C('linalg_det_flat', 'linalg_det', {A: (2, 2)}, values={A: _general(2, 17)}),
        C('linalg_slogdet', 'linalg.slogdet', {A: (3, 3)},
          values={A: _general(3, 18, negate_row=True)}),
        C('linalg_slogdet_flat_batch', 'linalg_slogdet', {A: (2, 3, 3)},
          values={A: [_general(3, 19), _general(3, 20, negate_row=True)]}),
    ]  # fmt: skip
