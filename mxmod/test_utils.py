"""Testing helpers, as ``mxnet.test_utils`` (``from mxmod.test_utils import *``).

The comparison helpers use MXNet 1.9.1's default tolerances per dtype (float16
1e-2/1e-1, float32 1e-4/1e-3, float64 1e-5/1e-20; integers exact) and report the
location of the largest violation. The symbolic checks (``check_numeric_gradient``,
``check_symbolic_forward``/``backward``, ``check_consistency``, ``simple_forward``)
and ``compare_optimizer`` live in :mod:`mxmod._test_checks` and are re-exported here.

Differences from MXNet: sparse storage types raise NotImplementedError; ``download``
and the dataset helpers (``get_mnist``, ``get_mnist_ubyte``, ``get_cifar10``,
``get_mnist_iterator``) never download: they use the files when present and otherwise
raise FileNotFoundError saying where to put them.
"""

from __future__ import annotations

import bz2
import errno
import gzip
import json
import logging
import numbers
import os
import platform
import struct
import sys
import time
import traceback
import zipfile
from collections import OrderedDict
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.random as rnd
import numpy.testing as npt

import mxmod as mx

from .context import Context, current_context, num_gpus
from .ndarray import NDArray, array

__all__ = [
    "default_context",
    "set_default_context",
    "default_dtype",
    "default_rtols",
    "default_atols",
    "default_numeric_eps",
    "get_tolerance",
    "get_tols",
    "get_atol",
    "get_rtol",
    "get_etol",
    "random_arrays",
    "random_uniform_arrays",
    "rand_ndarray",
    "rand_sparse_ndarray",
    "rand_shape_2d",
    "rand_shape_3d",
    "rand_shape_nd",
    "same",
    "almost_equal",
    "assert_almost_equal",
    "assert_allclose",
    "assert_almost_equal_ignore_nan",
    "assert_almost_equal_with_err",
    "checkShapes",
    "locationError",
    "create_sparse_array",
    "create_sparse_array_zd",
    "shuffle_csr_column_indices",
    "create_2d_tensor",
    "create_vector",
    "get_identity_mat",
    "get_identity_mat_batch",
    "assign_each",
    "assign_each2",
    "rand_coord_2d",
    "collapse_sum_like",
    "new_orthonormal_matrix_2d",
    "new_sym_matrix_with_real_eigvals_2d",
    "new_sym_matrix_with_real_eigvals_nd",
    "new_matrix_with_real_eigvals_2d",
    "new_matrix_with_real_eigvals_nd",
    "effective_dtype",
    "is_cd_run",
    "is_aarch64_run",
    "has_tvm_ops",
    "check_gluon_hybridize_consistency",
    "check_speed",
    "get_mnist_pkl",
    "get_zip_data",
    "download_model",
    "get_im2rec_path",
    "getenv",
    "setenv",
    "get_cuda_compute_capability",
    "Features",
    "Symbol",
    "assert_exception",
    "retry",
    "same_array",
    "compare_ndarray_tuple",
    "same_symbol_structure",
    "environment",
    "list_gpus",
    "DummyIter",
    "get_mnist",
    "get_mnist_ubyte",
    "get_cifar10",
    "get_bz2_data",
    "get_mnist_iterator",
    "download",
    "simple_forward",
    "numeric_grad",
    "check_numeric_gradient",
    "check_symbolic_forward",
    "check_symbolic_backward",
    "check_consistency",
    "compare_optimizer",
    "np_reduce",
    "random_sample",
    "discard_stderr",
    "use_np",
    "is_op_runnable",
    "gen_buckets_probs_with_ppf",
    "mean_check",
    "var_check",
    "chi_square_check",
    "verify_generator",
    # MXNet's module has no __all__, so its star import also brings these names; tests use them
    "bz2",
    "errno",
    "gzip",
    "json",
    "logging",
    "mx",
    "np",
    "npt",
    "numbers",
    "os",
    "platform",
    "rnd",
    "struct",
    "sys",
    "time",
    "traceback",
    "zipfile",
    "Context",
    "OrderedDict",
    "array",
    "contextmanager",
    "current_context",
]

_INT_TYPES = (np.bool_, np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64)


def default_context() -> Context:
    """The context tests run on: the current default context."""
    return current_context()


def set_default_context(ctx: Context) -> None:
    """Make ``ctx`` the current thread's default context (as MXNet's helper)."""
    Context.default_ctx = ctx


def default_dtype() -> type:
    """``np.float32``, MXNet's test dtype."""
    return np.float32


def default_rtols() -> dict:
    """Relative tolerance per dtype (MXNet's table)."""
    out = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-5}
    out.update({np.dtype(t): 0 for t in _INT_TYPES})
    return out


def default_atols() -> dict:
    """Absolute tolerance per dtype (MXNet's table)."""
    out = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-20}
    out.update({np.dtype(t): 0 for t in _INT_TYPES})
    return out


def default_numeric_eps() -> dict:
    """Finite-difference step per dtype (powers of two, as MXNet)."""
    return {
        np.dtype(np.float16): 1.0 / 2**6,
        np.dtype(np.float32): 1.0 / 2**9,
        np.dtype(np.float64): 1.0 / 2**14,
    }


def get_tolerance(dat: Any, tol: Any, default_tol: dict) -> float:
    """``tol`` if a number, else ``tol[dtype]`` or ``default_tol[dtype]`` for ``dat``'s dtype."""
    if isinstance(tol, numbers.Number):
        return tol
    dtype = np.dtype(dat.dtype)
    return (tol or {}).get(dtype, default_tol[dtype])


def get_tols(x: Any, y: Any, rtol: Any, atol: Any) -> tuple:
    """The (rtol, atol) for comparing ``x`` and ``y``: the looser default of their dtypes."""
    x = np.array(x) if isinstance(x, numbers.Number) else x
    y = np.array(y) if isinstance(y, numbers.Number) else y
    return (
        max(get_tolerance(x, rtol, default_rtols()), get_tolerance(y, rtol, default_rtols())),
        max(get_tolerance(x, atol, default_atols()), get_tolerance(y, atol, default_atols())),
    )


def get_atol(atol: Any = None, dtype: Any = np.dtype(np.float64)) -> float:
    """``atol`` or the default for ``dtype``."""
    return default_atols()[np.dtype(dtype)] if atol is None else atol


def get_rtol(rtol: Any = None, dtype: Any = np.dtype(np.float64)) -> float:
    """``rtol`` or the default for ``dtype``."""
    return default_rtols()[np.dtype(dtype)] if rtol is None else rtol


def get_etol(etol: Any = None) -> float:
    """Error-rate tolerance: ``etol`` or 0."""
    return 0 if etol is None else etol


def random_arrays(*shapes: tuple) -> Any:
    """Standard-normal float32 numpy arrays, one per shape (a single array for one shape)."""
    arrays = [
        np.array(np.random.randn(), dtype=default_dtype())
        if len(s) == 0
        else np.random.randn(*s).astype(default_dtype())
        for s in shapes
    ]
    return arrays[0] if len(arrays) == 1 else arrays


def random_uniform_arrays(
    *shapes: tuple, low: float = 0.0, high: float = 1.0, dtype: Any = None
) -> Any:
    """Uniform numpy arrays in ``[low, high)``, one per shape."""
    dtype = dtype or default_dtype()
    arrays = [np.random.uniform(low, high, size=s).astype(dtype) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def rand_ndarray(
    shape: tuple,
    stype: str = "default",
    density: Any = None,
    dtype: Any = None,
    modifier_func: Any = None,
    shuffle_csr_indices: bool = False,
    distribution: Any = None,
    ctx: Context | None = None,
) -> NDArray:
    """A standard-normal dense NDArray of ``shape``, or (sparse ``stype``) the array of
    :func:`rand_sparse_ndarray`."""
    if stype != "default":
        return rand_sparse_ndarray(
            shape,
            stype,
            density=density,
            dtype=dtype,
            distribution=distribution,
            modifier_func=modifier_func,
            shuffle_csr_indices=shuffle_csr_indices,
            ctx=ctx,
        )[0]
    return array(random_arrays(shape), ctx=ctx or default_context(), dtype=dtype)


def rand_shape_2d(dim0: int = 10, dim1: int = 10, allow_zero_size: bool = False) -> tuple:
    """A random 2-D shape with dims in ``[1, dim]`` (``[0, dim]`` with allow_zero_size)."""
    low = 0 if allow_zero_size else 1
    return np.random.randint(low, dim0 + 1), np.random.randint(low, dim1 + 1)


def rand_shape_3d(
    dim0: int = 10, dim1: int = 10, dim2: int = 10, allow_zero_size: bool = False
) -> tuple:
    """A random 3-D shape with dims in ``[1, dim]``."""
    low = 0 if allow_zero_size else 1
    return (
        np.random.randint(low, dim0 + 1),
        np.random.randint(low, dim1 + 1),
        np.random.randint(low, dim2 + 1),
    )


def rand_shape_nd(num_dim: int, dim: int = 10, allow_zero_size: bool = False) -> tuple:
    """A random ``num_dim``-D shape with dims in ``[1, dim]``."""
    low = 0 if allow_zero_size else 1
    return tuple(np.random.randint(low, dim + 1, size=num_dim))


def _host(x: Any) -> Any:
    return x.asnumpy() if isinstance(x, NDArray) else x


def same(a: Any, b: Any) -> bool:
    """True if ``a`` and ``b`` have equal shape and elements."""
    return np.array_equal(_host(a), _host(b))


def checkShapes(a: Any, b: Any) -> None:  # noqa: N802 (MXNet's name)
    """Raise AssertionError unless ``a`` and ``b`` have the same shape."""
    if a.shape != b.shape:
        raise AssertionError(
            npt.build_err_msg(
                [a, b], err_msg=f"a.shape = {a.shape} and b.shape = {b.shape} are not equal"
            )
        )


def almost_equal(
    a: Any,
    b: Any,
    rtol: Any = None,
    atol: Any = None,
    equal_nan: bool = False,
    use_broadcast: bool = True,
) -> bool:
    """``np.allclose`` with MXNet's default tolerances (float64's when not given)."""
    a, b = _host(a), _host(b)
    if not use_broadcast:
        checkShapes(a, b)
    return bool(np.allclose(a, b, rtol=get_rtol(rtol), atol=get_atol(atol), equal_nan=equal_nan))


def _max_violation(a: np.ndarray, b: np.ndarray, rtol: float, atol: float) -> tuple:
    diff = np.where(np.equal(a, b), 0, np.abs(a - b))
    ratio = diff / (atol + rtol * np.abs(b) + 1e-20)
    idx = tuple(int(i) for i in np.unravel_index(np.argmax(ratio), ratio.shape))
    return idx, float(np.max(ratio))


def locationError(a, b, index, names, maxError=False) -> str:  # noqa: N802,N803 (MXNet's)
    """The message naming a mismatch's location and both values there."""
    return "Location of %serror: %s, %s=%.8f, %s=%.8f" % (
        "maximum " if maxError else "",
        index,
        names[0],
        a[index],
        names[1],
        b[index],
    )


def assert_almost_equal(
    a: Any,
    b: Any,
    rtol: Any = None,
    atol: Any = None,
    names: tuple = ("a", "b"),
    equal_nan: bool = False,
    use_broadcast: bool = True,
    mismatches: tuple = (10, 10),
) -> None:
    """Raise AssertionError unless ``a`` and ``b`` (numpy or NDArray) are close.

    Tolerances default per dtype (the looser of the two). The message gives the
    worst violation's location and the share of mismatching elements, as MXNet's.
    """
    if not use_broadcast:
        checkShapes(a, b)
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = np.asarray(_host(a)), np.asarray(_host(b))
    if a.dtype == np.bool_ and b.dtype == np.bool_:
        npt.assert_equal(a, b)
        return
    if almost_equal(a, b, rtol, atol, equal_nan=equal_nan):
        return
    index, ratio = _max_violation(a, b, rtol, atol)
    if index != ():
        print(f"\n*** Maximum errors for vector of size {a.size}:  rtol={rtol}, atol={atol}\n")
        bad = int(np.sum(~np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))
        for i, (idx, err) in enumerate(_violations(a, b, rtol, atol, mismatches[0])):
            print("%3d: Error %f  %s" % (i + 1, err, locationError(a, b, idx, names)))
        degree = ""
        if 0 < mismatches[1] < bad:
            degree, bad = "at least ", mismatches[1] + 1
        msg = "Error %f exceeds tolerance rtol=%e, atol=%e (mismatch %s%f%%).\n%s" % (
            ratio,
            rtol,
            atol,
            degree,
            100.0 * bad / a.size,
            locationError(a, b, index, names, True),
        )
    else:
        msg = "Error %f exceeds tolerance rtol=%e, atol=%e.\n" % (ratio, rtol, atol)
    with np.printoptions(threshold=4, suppress=True):
        raise AssertionError(npt.build_err_msg([a, b], err_msg=msg))


def assert_almost_equal_with_err(
    a: Any,
    b: Any,
    rtol: Any = None,
    atol: Any = None,
    etol: Any = None,
    names: tuple = ("a", "b"),
    equal_nan: bool = False,
    mismatches: tuple = (10, 10),
) -> None:
    """:func:`assert_almost_equal` that tolerates a share ``etol`` of mismatching elements
    (``etol`` 0, the default: none)."""
    etol = get_etol(etol)
    if etol <= 0:
        assert_almost_equal(a, b, rtol=rtol, atol=atol, names=names, equal_nan=equal_nan)
        return
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = np.asarray(_host(a)), np.asarray(_host(b))
    close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    share = 1 - np.count_nonzero(close) / close.size
    if share <= etol:
        return
    index, ratio = _max_violation(a, b, rtol, atol)
    print(f"\n*** Maximum errors for vector of size {a.size}:  rtol={rtol}, atol={atol}\n")
    for i, (idx, err) in enumerate(_violations(a, b, rtol, atol, mismatches[0])):
        print("%3d: Error %f  %s" % (i + 1, err, locationError(a, b, idx, names)))
    msg = "Error %f exceeds tolerance rtol=%e, atol=%e (mismatch %f%% > etol %f%%).\n%s" % (
        ratio,
        rtol,
        atol,
        100.0 * share,
        100.0 * etol,
        locationError(a, b, index, names, True),
    )
    with np.printoptions(threshold=4, suppress=True):
        raise AssertionError(npt.build_err_msg([a, b], err_msg=msg))


def _violations(a, b, rtol, atol, limit):
    a, b = np.broadcast_arrays(a, b)
    a, b = a.copy(), b.copy()
    for _ in range(max(limit, 0)):
        if np.allclose(a, b, rtol=rtol, atol=atol):
            return
        idx, err = _max_violation(a, b, rtol, atol)
        yield idx, err
        a[idx] = b[idx] = 0


def assert_allclose(
    a: Any, b: Any, rtol: float = 1e-07, atol: float = 0, equal_nan: bool = True
) -> None:
    """:func:`assert_almost_equal` with numpy's ``assert_allclose`` defaults."""
    assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_almost_equal_ignore_nan(
    a: Any, b: Any, rtol: Any = None, atol: Any = None, names: tuple = ("a", "b")
) -> None:
    """:func:`assert_almost_equal` after zeroing positions where either side is NaN."""
    a, b = np.copy(_host(a)), np.copy(_host(b))
    mask = np.logical_or(np.isnan(a), np.isnan(b))
    a[mask] = 0
    b[mask] = 0
    assert_almost_equal(a, b, rtol, atol, names)


def assert_exception(f: Any, exception_type: type, *args: Any, **kwargs: Any) -> None:
    """Raise AssertionError unless ``f(*args, **kwargs)`` raises ``exception_type``."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError(f"{getattr(f, '__name__', f)} did not raise {exception_type.__name__}")


def same_array(array1: NDArray, array2: NDArray) -> bool:
    """True if the two NDArrays share memory (a write to one shows in the other)."""
    array1[:] += 1
    shared = same(array1.asnumpy(), array2.asnumpy())
    array1[:] -= 1
    return shared and same(array1.asnumpy(), array2.asnumpy())


def compare_ndarray_tuple(t1: Any, t2: Any, rtol: Any = None, atol: Any = None) -> None:
    """Assert two (nested tuples of) arrays are close; None on either side passes."""
    if t1 is None or t2 is None:
        return
    if isinstance(t1, tuple):
        for s1, s2 in zip(t1, t2):
            compare_ndarray_tuple(s1, s2, rtol, atol)
    else:
        assert_almost_equal(t1, t2, rtol=rtol, atol=atol)


def same_symbol_structure(sym1: Any, sym2: Any) -> bool:
    """True if the two symbols have the same operator at every node position."""

    nodes1 = json.loads(sym1.tojson())["nodes"]
    nodes2 = json.loads(sym2.tojson())["nodes"]
    return all(n1["op"] == n2["op"] for n1, n2 in zip(nodes1, nodes2))


def list_gpus() -> range:
    """``range(number of GPUs JAX sees)``."""
    return range(num_gpus())


from ._test_data import (  # noqa: E402
    DummyIter,
    download,
    download_model,
    get_bz2_data,
    get_cifar10,
    get_im2rec_path,
    get_mnist,
    get_mnist_iterator,
    get_mnist_pkl,
    get_mnist_ubyte,
    get_zip_data,
)
from ._test_consistency import check_consistency  # noqa: E402
from ._test_checks import (  # noqa: E402
    check_numeric_gradient,
    check_symbolic_backward,
    check_symbolic_forward,
    check_speed,
    compare_optimizer,
    numeric_grad,
    simple_forward,
)
from ._test_random import (  # noqa: E402,F401
    chi_square_check,
    gen_buckets_probs_with_ppf,
    mean_check,
    var_check,
    verify_generator,
)
from ._test_misc import (  # noqa: E402
    check_gluon_hybridize_consistency,
    discard_stderr,
    effective_dtype,
    environment,
    retry,
    has_tvm_ops,
    is_aarch64_run,
    is_cd_run,
    is_op_runnable,
    np_reduce,
    random_sample,
    use_np,
)
from ._test_sparse import (  # noqa: E402
    create_sparse_array,
    create_sparse_array_zd,
    rand_sparse_ndarray,
    shuffle_csr_column_indices,
)
from ._test_matrices import (  # noqa: E402
    assign_each,
    assign_each2,
    collapse_sum_like,
    create_2d_tensor,
    create_vector,
    get_identity_mat,
    get_identity_mat_batch,
    new_matrix_with_real_eigvals_2d,
    new_matrix_with_real_eigvals_nd,
    new_orthonormal_matrix_2d,
    new_sym_matrix_with_real_eigvals_2d,
    new_sym_matrix_with_real_eigvals_nd,
    rand_coord_2d,
)
from .runtime import Features  # noqa: E402
from .symbol import Symbol  # noqa: E402
from .util import get_cuda_compute_capability, getenv, setenv  # noqa: E402
