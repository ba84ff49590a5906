"""The common part of CSRNDArray and RowSparseNDArray: MXNet's sparse storage types as
parts held in JAX arrays.

A sparse array keeps its parts (``data`` plus the aux arrays ``indptr``/``indices``) as
``jax.Array``s on its context. MXNet's aux arrays are int64; with ``jax_enable_x64`` off they
are int32 inside JAX, while ``_aux_types`` reports int64 and ``mx.nd.save`` writes int64,
exactly as MXNet. Conversions to dense run on the device; conversions from dense find the
non-zeros on the host (their count decides the part sizes). Scalar ``*`` and ``/`` are
defined here; ``sparse/__init__.py`` installs ``+ - * /``, ``-x`` and ``abs`` from ``_ops``;
every other operation raises NotImplementedError naming itself (convert with
``tostype('default')`` first).
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
    arr = np.asarray(host)
    if dtype is not None:
        if arr.size and np.dtype(dtype) == np.int32 and np.abs(arr).max() > 2**31 - 1:
            raise ValueError(
                f"sparse indices up to {np.abs(arr).max()} do not fit the int32 that JAX keeps "
                f"while x64 mode is off; call jax.config.update('jax_enable_x64', True) first"
            )
        arr = arr.astype(dtype)
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
        """Dense values: MXNet's storage fallback for operators without a sparse kernel
        (they compute on a temporary dense copy and return dense storage)."""
        return self._densify()

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
        return type(self)._from_parts, (self.shape, data, aux, self._ctx)

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

    def _fill(self, value: Any) -> None:
        raise ValueError(
            f"Assigning numeric types to {type(self).__name__} is not implemented yet (as in "
            f"MXNet); assign an NDArray or numpy array"
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
        """Only ``arr[:] = value``: an NDArray or numpy array, or (row_sparse only, as MXNet)
        a scalar, which stores every row."""
        if not isinstance(key, slice) or key != slice(None):
            raise ValueError(f"{type(self).__name__} only supports [:] for assignment, got {key!r}")
        if isinstance(value, NDArray):
            if value is not self:
                value.copyto(self)
            return
        if isinstance(value, (np.ndarray, np.generic)):
            NDArray(np.asarray(value, dtype=self.dtype), self._ctx).copyto(self)
            return
        if isinstance(value, numbers.Number) and not isinstance(value, bool):
            self._fill(value)
            return
        raise NotImplementedError(
            f"assigning a {type(value).__name__} to a {type(self).__name__}; assign an "
            f"NDArray or numpy array"
        )


def _unsupported(op: str):
    def method(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"{op} is not supported for a {type(self).__name__} in mxmod (+ - * / and the "
            f"mx.nd.sparse operators are); convert with .tostype('default') first"
        )

    method.__name__ = op
    return method


for _op in (  # + - * / -x abs(x): see sparse/_ops.py
    "__rsub__", "__rtruediv__", "__pow__", "__rpow__", "__mod__", "__rmod__", "__eq__",
    "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__matmul__",
):  # fmt: skip
    setattr(BaseSparseNDArray, _op, _unsupported(_op))
BaseSparseNDArray.__hash__ = object.__hash__


def check_stype(stype: Any) -> None:
    if stype not in STYPES:
        raise MXNetError(
            f"Invalid Input: {stype!r}, valid values are: {{'csr', 'default', 'row_sparse'}} "
            f"(storage type)"
        )
