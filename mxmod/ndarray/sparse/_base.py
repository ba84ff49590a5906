"""CSRNDArray and RowSparseNDArray: MXNet's sparse storage types as parts held in JAX arrays.

A sparse array keeps its parts (``data`` plus the aux arrays ``indptr``/``indices``) as
``jax.Array``s on its context. MXNet's aux arrays are int64; with ``jax_enable_x64`` off they
are int32 inside JAX, while ``_aux_types`` reports int64 and ``mx.nd.save`` writes int64,
exactly as MXNet. Conversions to dense run on the device; conversions from dense find the
non-zeros on the host (their count decides the part sizes). Only MXNet's storage-keeping
scalar ``*`` and ``/`` are defined; every other operation raises NotImplementedError naming
itself (convert with ``tostype('default')`` first).
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ...base import MXNetError
from ...context import Context
from .._device import requested_dtype
from ..ndarray import NDArray

STYPES = ("default", "row_sparse", "csr")
INDEX_DTYPE = np.dtype(jax.dtypes.canonicalize_dtype(np.int64))


def _put(host: Any, ctx: Context, dtype: Any = None) -> jax.Array:
    arr = np.asarray(host) if dtype is None else np.asarray(host).astype(dtype)
    return jax.device_put(arr.astype(jax.dtypes.canonicalize_dtype(arr.dtype)), ctx.jax_device)


class BaseSparseNDArray(NDArray):
    """Common part of CSRNDArray and RowSparseNDArray (MXNet's ``BaseSparseNDArray``)."""

    _stype = ""
    _aux_names: tuple = ()

    @classmethod
    def _from_parts(cls, shape: tuple, data: Any, aux: list, ctx: Context) -> BaseSparseNDArray:
        """A new array of ``shape`` from host or JAX parts (aux in MXNet's order), on ``ctx``."""
        out = cls.__new__(cls)
        out._base, out._offset, out._vshape, out._cache, out._arr = None, 0, (), (None, None), None
        out._ctx = ctx if type(ctx) is Context else Context(ctx)
        out._set_parts(tuple(int(d) for d in shape), data, aux)
        return out

    def _set_parts(self, shape: tuple, data: Any, aux: list) -> None:
        self._sshape = shape
        self._sdata = data if isinstance(data, jax.Array) else _put(data, self._ctx)
        self._saux = tuple(
            a if isinstance(a, jax.Array) else _put(a, self._ctx, INDEX_DTYPE) for a in aux
        )

    # ----------------------------------------------------------- properties
    @property
    def _data(self) -> jax.Array:
        raise NotImplementedError(
            f"this operation needs dense storage and is not supported for a "
            f"{type(self).__name__} in mxmod; convert it with .tostype('default') first"
        )

    @_data.setter
    def _data(self, value: Any) -> None:
        self._set_data(value)

    def _set_data(self, arr: Any) -> None:
        """Take dense values (e.g. from a dense ``copyto``), stored in this storage type."""
        host = np.asarray(arr).astype(self.dtype)
        if host.shape != self.shape:
            raise MXNetError(f"cannot write values of shape {host.shape} into {self.shape}")
        new = type(self)._from_dense(host, self._ctx)
        self._set_parts(new.shape, new._sdata, new._saux)

    @classmethod
    def _from_dense(cls, host: np.ndarray, ctx: Context) -> BaseSparseNDArray:
        raise NotImplementedError

    @property
    def shape(self) -> tuple:
        return self._sshape

    @property
    def dtype(self) -> type:
        return np.dtype(self._sdata.dtype).type

    @property
    def stype(self) -> str:
        return self._stype

    @property
    def size(self) -> int:
        raise NotImplementedError(
            f"size of a {type(self).__name__} is ambiguous (as in MXNet); use "
            f"arr.data.size for the stored values or numpy.prod(arr.shape)"
        )

    @property
    def _num_aux(self) -> int:
        return len(self._aux_names)

    @property
    def _aux_types(self) -> list:
        return [np.int64] * self._num_aux

    def _aux_type(self, i: int) -> type:
        return self._aux_types[i]

    @property
    def data(self) -> NDArray:
        """A copy of the stored values (MXNet returns a deep copy too)."""
        return NDArray(jnp.copy(self._sdata), self._ctx)

    def _aux(self, name: str) -> NDArray:
        return NDArray(jnp.copy(self._saux[self._aux_names.index(name)]), self._ctx)

    @property
    def indices(self) -> NDArray:
        """A copy of the indices (int32 inside JAX unless ``jax_enable_x64`` is on)."""
        return self._aux("indices")

    # ----------------------------------------------------------- host I/O
    def _host_parts(self) -> tuple[np.ndarray, list]:
        return np.asarray(self._sdata), [np.asarray(a).astype(np.int64) for a in self._saux]

    def asnumpy(self) -> np.ndarray:
        """The dense values as a new numpy array."""
        return np.array(self.tostype("default")._data)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.asnumpy()
        return out.astype(dtype, copy=False) if dtype is not None else out

    def wait_to_read(self) -> None:
        jax.block_until_ready((self._sdata, self._saux))

    wait_to_write = wait_to_read

    def __repr__(self) -> str:
        shape_info = "x".join(str(d) for d in self.shape)
        return f"\n<{type(self).__name__} {shape_info} @{self._ctx}>"

    def __reduce__(self):
        data, aux = self._host_parts()
        return _rebuild, (self._stype, self.shape, data, aux, str(self._ctx.device_type))

    # ------------------------------------------------------------- copies
    def copy(self) -> BaseSparseNDArray:
        """A new array of the same storage type, values and context."""
        return self._like(self._sdata, self._saux, self._ctx)

    def _like(self, data: Any, aux: Any, ctx: Context) -> BaseSparseNDArray:
        dev = ctx.jax_device
        return type(self)._from_parts(
            self.shape,
            jax.device_put(jnp.copy(data), dev),
            [jax.device_put(jnp.copy(a), dev) for a in aux],
            ctx,
        )

    def copyto(self, other: Any) -> NDArray:
        """Copy to a Context (new array), a dense NDArray or an array of this storage type.

        Raises:
            TypeError: for a target of another sparse storage type or a non-array target.
            MXNetError: for a target of another shape.
        """
        if isinstance(other, Context):
            return self._like(self._sdata, self._saux, other)
        if not isinstance(other, NDArray):
            raise TypeError(
                f"copyto does not support type {type(other)}: pass an NDArray or a Context"
            )
        if other.stype not in ("default", self._stype):
            raise TypeError(f"copyto does not support destination NDArray stype {other.stype}")
        if other is self:
            warnings.warn("You are attempting to copy an array to itself", RuntimeWarning)
            return other
        if other.shape != self.shape:
            raise MXNetError(
                f"copyto: source shape {self.shape} does not match target shape {other.shape}"
            )
        if other.stype == "default":
            return self.tostype("default").copyto(other)
        src = self.astype(other.dtype) if other.dtype != self.dtype else self
        moved = src._like(src._sdata, src._saux, other._ctx)
        other._set_parts(moved.shape, moved._sdata, moved._saux)
        return other

    def as_in_context(self, context: Context) -> NDArray:
        return self if self._ctx == context else self.copyto(context)

    def astype(self, dtype: Any, copy: bool = True) -> BaseSparseNDArray:
        """Cast the stored values; storage type and indices are kept."""
        dt = requested_dtype(dtype, "astype")
        if not copy and dt == np.dtype(self.dtype):
            return self
        return self._like(self._sdata.astype(dt), self._saux, self._ctx)

    # ------------------------------------------------------------- storage
    def tostype(self, stype: str) -> NDArray:
        """``'default'`` gives a dense NDArray, the own storage type a copy.

        Raises:
            ValueError: between csr and row_sparse (MXNet cannot cast between them).
            MXNetError: for an unknown storage type.
        """
        check_stype(stype)
        if stype == self._stype:
            return self.copy()
        if stype == "default":
            return NDArray(self._densify(), self._ctx)
        raise ValueError(f"cast_storage from {self._stype} to {stype} is not supported")

    def _densify(self) -> jax.Array:
        raise NotImplementedError

    def check_format(self, full_check: bool = True) -> None:
        """Validate the parts as MXNet does; ``full_check`` also scans every index.

        Raises:
            MXNetError: with MXNet's message for the first problem found.
        """
        data, aux = self._host_parts()
        err = self._format_error(data, aux, bool(full_check))
        if err:
            raise MXNetError(f"Check failed: {err}")

    def _format_error(self, data: np.ndarray, aux: list, full: bool) -> str:
        raise NotImplementedError

    # ------------------------------------------------------- unsupported
    def reshape(self, *shape: Any, **kwargs: Any) -> NDArray:
        raise NotImplementedError(
            f"reshape is not supported for a {type(self).__name__} (as in MXNet); convert "
            f"with .tostype('default') first"
        )

    def _scaled(self, scalar: Any, op: str) -> BaseSparseNDArray:
        if not isinstance(scalar, numbers.Number) or isinstance(scalar, bool):
            raise NotImplementedError(
                f"{op} of a {type(self).__name__} with a {type(scalar).__name__}: only a "
                f"Python scalar is supported in mxmod; convert with .tostype('default') first"
            )
        s = np.asarray(scalar).astype(self.dtype)
        data = self._sdata * s if op == "*" else self._sdata / s
        return self._like(data.astype(self._sdata.dtype), self._saux, self._ctx)

    def __mul__(self, other: Any) -> BaseSparseNDArray:
        return self._scaled(other, "*")

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> BaseSparseNDArray:
        return self._scaled(other, "/")

    def __imul__(self, other: Any) -> BaseSparseNDArray:
        out = self._scaled(other, "*")
        self._set_parts(out.shape, out._sdata, out._saux)
        return self

    def __itruediv__(self, other: Any) -> BaseSparseNDArray:
        out = self._scaled(other, "/")
        self._set_parts(out.shape, out._sdata, out._saux)
        return self

    def __setitem__(self, key: Any, value: Any) -> None:
        """Only ``arr[:] = value`` (an NDArray or numpy array), as MXNet."""
        if not isinstance(key, slice) or key != slice(None):
            raise ValueError(f"{type(self).__name__} only supports [:] for assignment, got {key!r}")
        if isinstance(value, NDArray):
            if value is not self:
                value.copyto(self)
            return
        if isinstance(value, (np.ndarray, np.generic)):
            NDArray(np.asarray(value, dtype=self.dtype), self._ctx).copyto(self)
            return
        raise NotImplementedError(
            f"assigning a {type(value).__name__} to a {type(self).__name__}; assign an "
            f"NDArray or numpy array"
        )


def _unsupported(op: str):
    def method(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"{op} is not supported for a {type(self).__name__} in mxmod (only scalar * and / "
            f"keep sparse storage); convert with .tostype('default') first"
        )

    method.__name__ = op
    return method


for _op in (
    "__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__", "__rtruediv__",
    "__neg__", "__pow__", "__rpow__", "__mod__", "__rmod__", "__eq__", "__ne__", "__lt__",
    "__le__", "__gt__", "__ge__", "__abs__", "__matmul__",
):  # fmt: skip
    setattr(BaseSparseNDArray, _op, _unsupported(_op))
BaseSparseNDArray.__hash__ = object.__hash__


def check_stype(stype: Any) -> None:
    if stype not in STYPES:
        raise MXNetError(
            f"Invalid Input: {stype!r}, valid values are: {{'csr', 'default', 'row_sparse'}} "
            f"(storage type)"
        )


def _rebuild(stype: str, shape: tuple, data: Any, aux: list, dev_type: str) -> BaseSparseNDArray:
    cls = CSRNDArray if stype == "csr" else RowSparseNDArray
    return cls._from_parts(shape, data, aux, Context(dev_type, 0))


# ---------------------------------------------------------------------- csr
_CSR_SHAPE = "err != kCSRShapeErr (1 vs. 1) : Shape mismatch of this csr NDArray"
_CSR_INDPTR = (
    "err != kCSRIndPtrErr (2 vs. 2) : IndPtr of csr NDArray should be non-negative, in "
    "non-decreasing order, start with 0, and end with value equal with size of indices."
)
_CSR_IDX = (
    "err != kCSRIdxErr (3 vs. 3) : Indices of csr NDArray should be non-negative, in "
    "ascending order per row  and less than the number of columns."
)


class CSRNDArray(BaseSparseNDArray):
    """A 2-D array in compressed sparse row format (MXNet's ``CSRNDArray``).

    Row ``i``'s column indices are ``indices[indptr[i]:indptr[i+1]]`` (ascending, no
    duplicates) and its values ``data[indptr[i]:indptr[i+1]]``.
    """

    _stype = "csr"
    _aux_names = ("indptr", "indices")

    @property
    def indptr(self) -> NDArray:
        """A copy of the row pointers (length ``shape[0] + 1``)."""
        return self._aux("indptr")

    @classmethod
    def _from_dense(cls, host: np.ndarray, ctx: Context) -> CSRNDArray:
        if host.ndim != 2:
            raise ValueError(
                f"To convert to a CSR, the NDArray should be 2 Dimensional. Current shape "
                f"is {host.shape}"
            )
        rows, cols = np.nonzero(host)
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=host.shape[0]))])
        return cls._from_parts(host.shape, host[rows, cols], [indptr, cols], ctx)

    def _densify(self) -> jax.Array:
        indptr, indices = self._saux
        nnz = int(indices.shape[0])
        rows = jnp.repeat(
            jnp.arange(indptr.shape[0] - 1), jnp.diff(indptr), total_repeat_length=nnz
        )
        dense = jnp.zeros(self.shape, self._sdata.dtype, device=self._ctx.jax_device)
        return dense.at[rows, indices].set(self._sdata)

    def _format_error(self, data: np.ndarray, aux: list, full: bool) -> str:
        indptr, indices = aux
        if indptr.shape[0] != self.shape[0] + 1 or indices.shape[0] != data.shape[0]:
            return _CSR_SHAPE
        if not full:
            return ""
        if (
            indptr[0] != 0
            or indptr[-1] != indices.shape[0]
            or (indptr < 0).any()
            or (np.diff(indptr) < 0).any()
        ):
            return _CSR_INDPTR
        if ((indices < 0) | (indices >= self.shape[1])).any():
            return _CSR_IDX
        for row in range(self.shape[0]):
            if (np.diff(indices[indptr[row] : indptr[row + 1]]) <= 0).any():
                return _CSR_IDX
        return ""

    def __getitem__(self, key: Any) -> CSRNDArray:
        """Rows: ``a[i]`` (as a 1-row CSRNDArray), ``a[i:j]``, ``a[:]``; as MXNet."""
        if isinstance(key, tuple):
            raise ValueError("Multi-dimension indexing is not supported")
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            n = self.shape[0]
            if not -n <= key < n:
                raise IndexError(f"row index {key} is out of bounds for a CSRNDArray of {n} rows")
            begin = int(key) % n
            return self._rows(begin, begin + 1)
        if isinstance(key, slice):
            if key.step is not None:
                raise ValueError("CSRNDArray only supports continuous slicing on axis 0")
            if key.start is None and key.stop is None:
                return self
            # MXNet reads a stop of 0 (or None) as "to the end"
            begin, end, _ = slice(key.start or 0, key.stop or self.shape[0]).indices(self.shape[0])
            return self._rows(begin, max(begin, end))
        raise ValueError(f"Undefined behaviour for {key!r}: index rows with an int or a slice")

    def _rows(self, begin: int, end: int) -> CSRNDArray:
        indptr, indices = self._saux
        lo, hi = int(indptr[begin]), int(indptr[end])
        part = indptr[begin : end + 1] - lo
        return CSRNDArray._from_parts(
            (end - begin, self.shape[1]), self._sdata[lo:hi], [part, indices[lo:hi]], self._ctx
        )

    def asscipy(self) -> Any:
        """A ``scipy.sparse.csr_matrix`` copy.

        Raises:
            ImportError: scipy is not installed (mxmod does not depend on it).
        """
        try:
            import scipy.sparse as spsp  # optional dependency, as in MXNet
        except ImportError:
            raise ImportError(
                "asscipy needs scipy, which is not installed; pip install scipy, or use "
                "arr.data/arr.indices/arr.indptr (.asnumpy())"
            ) from None
        data, (indptr, indices) = self._host_parts()
        return spsp.csr_matrix((data, indices, indptr), shape=self.shape, dtype=data.dtype)


# --------------------------------------------------------------- row_sparse
_RSP_SHAPE = "err != kRSPShapeErr (4 vs. 4) : Shape mismatch of this row_sparse NDArray"
_RSP_IDX = (
    "err != kRSPIdxErr (5 vs. 5) : Indices of row_sparse NDArray should be non-negative, "
    "less than the size of first dimension and in ascending order"
)


class RowSparseNDArray(BaseSparseNDArray):
    """Rows ``indices`` of an array are ``data``; all other rows are zero (MXNet's
    ``RowSparseNDArray``)."""

    _stype = "row_sparse"
    _aux_names = ("indices",)

    @classmethod
    def _from_dense(cls, host: np.ndarray, ctx: Context) -> RowSparseNDArray:
        if host.ndim == 0:
            raise ValueError("a row_sparse array needs at least 1 dimension; got a 0-d NDArray")
        rows = host.reshape(host.shape[0], int(np.prod(host.shape[1:])))
        keep = np.flatnonzero(rows.any(axis=1))
        return cls._from_parts(host.shape, host[keep], [keep], ctx)

    def _densify(self) -> jax.Array:
        dense = jnp.zeros(self.shape, self._sdata.dtype, device=self._ctx.jax_device)
        return dense.at[self._saux[0]].set(self._sdata)

    def _format_error(self, data: np.ndarray, aux: list, full: bool) -> str:
        (indices,) = aux
        if indices.shape[0] != data.shape[0]:
            return _RSP_SHAPE
        if full and (
            ((indices < 0) | (indices >= self.shape[0])).any() or (np.diff(indices) <= 0).any()
        ):
            return _RSP_IDX
        return ""

    def __getitem__(self, key: Any) -> RowSparseNDArray:
        """Only ``a[:]`` (the array itself), as MXNet."""
        if isinstance(key, slice) and key == slice(None):
            return self
        if isinstance(key, tuple):
            raise ValueError("Multi-dimension indexing is not supported")
        raise ValueError(
            f"RowSparseNDArray only supports [:] for __getitem__, got {key!r}; use "
            f".retain(rows) or .tostype('default')[...]"
        )

    def retain(self, indices: Any) -> RowSparseNDArray:
        """The rows ``indices`` of this array (see :func:`mxmod.ndarray.sparse.retain`)."""
        return retain(self, indices)


def retain(data: Any, indices: Any) -> RowSparseNDArray:
    """MXNet's ``sparse.retain``: a RowSparseNDArray holding the rows ``indices`` of ``data``.

    The result stores one row per requested index (in the order given, as MXNet): the
    stored row where ``data`` has it, zeros otherwise; nothing if ``data`` stores nothing.

    Raises:
        TypeError: ``data`` is not a RowSparseNDArray.
        ValueError: ``indices`` is not 1-D or names a row outside ``data``.
    """
    if not isinstance(data, RowSparseNDArray):
        raise TypeError(
            f"retain needs a RowSparseNDArray, got a {type(data).__name__} (stype "
            f"{getattr(data, 'stype', None)!r}); convert with .tostype('row_sparse')"
        )
    want = np.asarray(indices.asnumpy() if isinstance(indices, NDArray) else indices)
    if want.ndim != 1:
        raise ValueError(f"retain: indices must be 1-D, got shape {want.shape}")
    want = want.astype(np.int64)
    if want.size and (want.min() < 0 or want.max() >= data.shape[0]):
        raise ValueError(f"retain: indices {want.tolist()} must lie in [0, {data.shape[0]})")
    have = np.asarray(data._saux[0]).astype(np.int64)
    if not len(have):  # nothing stored: MXNet's result stores nothing either
        return data.copy()
    pos = np.minimum(np.searchsorted(have, want), len(have) - 1)
    mask = jnp.asarray(have[pos] == want).reshape((-1,) + (1,) * (len(data.shape) - 1))
    values = jnp.where(mask, data._sdata[jnp.asarray(pos)], 0).astype(data._sdata.dtype)
    return RowSparseNDArray._from_parts(data.shape, values, [want], data._ctx)
