"""``mxnet.test_utils`` helpers that build test arrays: large-tensor stand-ins, matrices
with known eigenvalues, elementwise maps and the reduction that undoes a broadcast."""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from .ndarray import NDArray, arange, array, broadcast_to


def create_2d_tensor(rows: int, columns: int, dtype: Any = np.int64) -> NDArray:
    """``(rows, columns)`` whose row ``i`` holds ``i`` (MXNet's large-tensor tests)."""
    column = arange(0, rows, dtype=dtype).reshape(rows, 1)
    return broadcast_to(column, shape=(rows, columns))


def create_vector(size: int, dtype: Any = np.int64) -> NDArray:
    """``0, 1, ..., size - 1``."""
    return arange(0, size, dtype=dtype)


def get_identity_mat(size: int) -> NDArray:
    """The ``size x size`` identity (float32)."""
    return array(np.eye(size, dtype=np.float32))


def get_identity_mat_batch(size: int) -> NDArray:
    """Two stacked ``size x size`` identities: ``(2, size, size)``."""
    eye = np.eye(size, dtype=np.float32)
    return array(np.stack([eye, eye]))


def assign_each(the_input: Any, function: Optional[Callable]) -> np.ndarray:
    """``function`` applied to every element of ``the_input`` (float64 result; a copy of
    the input when ``function`` is None)."""
    values = np.asarray(the_input)
    if function is None:
        return np.array(values)
    out = np.zeros(values.shape)
    for index, v in np.ndenumerate(values):
        out[index] = function(v)
    return out


def assign_each2(input1: Any, input2: Any, function: Optional[Callable]) -> np.ndarray:
    """``function(a, b)`` for every pair of elements of two same-shape arrays."""
    first, second = np.asarray(input1), np.asarray(input2)
    if function is None:
        return np.array(first)
    if first.shape != second.shape:
        raise ValueError(f"assign_each2: shapes {first.shape} and {second.shape} differ")
    out = np.zeros(first.shape)
    for index, v in np.ndenumerate(first):
        out[index] = function(v, second[index])
    return out


def rand_coord_2d(x_low: int, x_high: int, y_low: int, y_high: int) -> tuple:
    """A random integer point with ``x`` in ``[x_low, x_high)``, ``y`` in ``[y_low, y_high)``."""
    x = np.random.randint(x_low, x_high, dtype=np.int64)
    y = np.random.randint(y_low, y_high, dtype=np.int64)
    return x, y


def collapse_sum_like(a: np.ndarray, shape: tuple) -> np.ndarray:
    """Sum ``a`` over the axes a broadcast from ``shape`` to ``a.shape`` added or stretched
    (the gradient of that broadcast)."""
    shape = tuple(shape)
    if len(a.shape) < len(shape):
        raise ValueError(f"collapse_sum_like: {shape} has more axes than {a.shape}")
    if int(np.prod(shape)) == 0 or a.size == 0:
        return np.zeros(shape, dtype=a.dtype)
    lead = len(a.shape) - len(shape)
    axes = list(range(lead))
    for i, s in enumerate(shape):
        if s != a.shape[lead + i]:
            if s != 1:
                raise ValueError(f"collapse_sum_like: {shape} does not broadcast to {a.shape}")
            axes.append(lead + i)
    return np.sum(a, axis=tuple(axes)).reshape(shape)


def new_orthonormal_matrix_2d(n: int) -> np.ndarray:
    """A random ``n x n`` orthonormal matrix (Q of a random symmetric matrix's QR)."""
    x = np.random.randn(n, n)
    return np.linalg.qr(x.T @ x)[0]


def new_sym_matrix_with_real_eigvals_2d(n: int) -> np.ndarray:
    """A random symmetric ``n x n`` matrix with eigenvalues in ``[-10, 10)``."""
    q = new_orthonormal_matrix_2d(n)
    return q.T @ np.diag(np.random.uniform(-10.0, 10.0, n)) @ q


def new_sym_matrix_with_real_eigvals_nd(shape: tuple) -> np.ndarray:
    """A batch (``shape[:-2]``) of :func:`new_sym_matrix_with_real_eigvals_2d`."""
    count = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    mats = [new_sym_matrix_with_real_eigvals_2d(shape[-1]) for _ in range(count)]
    return np.array(mats).reshape(shape)


def new_matrix_with_real_eigvals_2d(n: int) -> np.ndarray:
    """A random ``n x n`` matrix with real eigenvalues in ``[-10, 10)``: ``Q^-1 D Q`` with
    ``Q`` a Householder reflection times a diagonal, redrawn until its 2-norm condition
    number is below 3."""
    eye = np.eye(n)
    while True:
        v = np.random.uniform(-1.0, 1.0, (n, 1))
        v = v / np.linalg.norm(v)
        q = (eye - 2 * v @ v.T) @ np.diag(np.random.uniform(-1.0, 1.0, n))
        if np.linalg.cond(q, 2) < 3:
            break
    return np.linalg.inv(q) @ np.diag(np.random.uniform(-10.0, 10.0, n)) @ q


def new_matrix_with_real_eigvals_nd(shape: tuple) -> np.ndarray:
    """A batch (``shape[:-2]``) of :func:`new_matrix_with_real_eigvals_2d`."""
    count = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_matrix_with_real_eigvals_2d(shape[-1]) for _ in range(count)]).reshape(
        shape
    )
