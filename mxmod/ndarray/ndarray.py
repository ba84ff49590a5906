"""NDArray: MXNet's mutable n-d array as a thin handle on an immutable ``jax.Array``.

Relation to ``mxnet.nd.NDArray``:

* The data is a ``jax.Array`` in ``arr._data``; every "in-place" operation
  (``arr[:] = v``, ``arr += 1``, ``copyto(arr)``) computes a new array and
  swaps it in with :meth:`NDArray._set_data`. Handles held elsewhere (executor
  ``arg_dict``, ``get_params()``) therefore see the change, as in MXNet.
* Views: like MXNet 1.9.1, basic indexing that selects a contiguous block
  (``x[1]``, ``x[1:3]``, ``x[2, 1:]``...) and :meth:`reshape` return views
  sharing the parent's memory: writing to the view (``x[1:3][:] = 0``) changes
  the parent and the view reads the parent's current values. Non-contiguous
  indexing (``x[::2]``, ``x[:, 1]``, integer arrays) returns a copy, as in MXNet.
* Operations run eagerly through ``jax.numpy`` on the array's device (XLA is
  asynchronous, so ``wait_to_read``/``asnumpy`` are the sync points, like
  MXNet's engine). Binary operators keep MXNet's type rules: both NDArrays must
  have the same dtype, a Python scalar is cast to the array's dtype, and
  comparisons return 0/1 in the array's dtype.
* 64-bit dtypes need ``jax_enable_x64``; otherwise JAX stores them as 32-bit.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .host_array import host_array
from ..base import MXNetError
from ..context import Context, current_context
from . import _index
from .records import record_from_bytes
from ._device import _fresh, _put, _read_flat, _write_flat, ctx_of, jax_dtype, requested_dtype

__all__ = ["NDArray", "from_jax", "jax_dtype"]

py_slice = slice  # MXNet's name for the builtin (its tests import it from here)


def slice_box(begin: Any, end: Any, step: Any = ()) -> tuple:
    """The index of MXNet's ``begin``/``end``/``step`` box (``None``: the whole axis)."""
    step = tuple(step) or (None,) * len(begin)
    return tuple(slice(b, e, s) for b, e, s in zip(begin, end, step))


class NDArray:
    """A mutable n-d array on a device: the ``mx.nd.NDArray`` namesake.

    Args:
        data: a ``jax.Array`` (taken as is) or anything ``numpy`` can convert
            (placed on ``ctx``).
        ctx: the :class:`Context` to report; defaults to the array's device
            (or the current context for host data).

    Examples:
        >>> a = mx.nd.array([[1, 2]])
        >>> a[:] = 5
        >>> a
        <BLANKLINE>
        [[5. 5.]]
        <NDArray 1x2 @cpu(0)>
    """

    __array_ufunc__ = None  # numpy defers to our reflected operators
    # imperative autograd (tape.py): the recorded entry, the gradient buffer and its req
    _tape = None
    _grad = None
    _grad_req = "null"
    _fresh_grad = False  # MXNet's flag: True once a backward wrote ``.grad``

    def __init__(self, data: Any, ctx: Context | None = None):
        self._base: NDArray | None = None
        self._offset = 0
        self._vshape: tuple = ()
        self._cache: tuple = (None, None)
        if isinstance(data, jax.core.Tracer):  # an operator traced by autograd (tape.py)
            self._arr, self._ctx = data, Context(ctx) if ctx is not None else current_context()
            return
        if not isinstance(data, jax.Array):
            ctx = Context(ctx) if ctx is not None else current_context()
            host = np.asarray(data)
            host = host.astype(jax.dtypes.canonicalize_dtype(host.dtype), copy=False)
            data = jax.device_put(host, ctx.jax_device)
        elif ctx is not None and not _committed(data):
            data = jax.device_put(data, Context(ctx).jax_device)
        self._arr = data
        if ctx is None:
            ctx = ctx_of(data)
        self._ctx = ctx if type(ctx) is Context else Context(ctx)

    @classmethod
    def _view(cls, base: "NDArray", offset: int, shape: tuple) -> "NDArray":
        """A view on ``shape`` elements of ``base`` starting at flat ``offset`` (MXNet Slice)."""
        if base._base is not None:
            offset += base._offset
            base = base._base
        out = cls.__new__(cls)
        out._base, out._offset, out._vshape = base, int(offset), tuple(shape)
        out._cache, out._arr, out._ctx = (None, None), None, base._ctx
        return out

    # ----------------------------------------------------------------- data
    @property
    def _data(self) -> jax.Array:
        """The current ``jax.Array`` (for a view: the parent's current values)."""
        if self._base is None:
            return self._arr
        src = self._base._arr
        if self._cache[0] is not src:
            self._cache = (src, _read_flat(src, self._offset, self._vshape))
        return self._cache[1]

    @_data.setter
    def _data(self, value: jax.Array) -> None:
        self._set_data(value)

    def _set_data(self, arr: Any) -> None:
        """Replace the array in place (what ``arr[:] = v`` does); a view writes into its parent.

        A root handle takes a committed ``arr`` as is (no copy, no checks, so a
        sharded array stays sharded); host data and uncommitted arrays (e.g. from
        ``jnp.asarray``) are placed on this array's device. A view needs the same
        number of elements and casts to the parent's dtype.
        """
        if self._base is None:
            if isinstance(arr, jax.core.Tracer):  # an operator traced by autograd (tape.py)
                self._arr = arr
                return
            if not isinstance(arr, jax.Array):
                arr = jax.device_put(np.asarray(arr, dtype=self.dtype), self._ctx.jax_device)
            elif not _committed(arr):
                arr = jax.device_put(arr, self._ctx.jax_device)
            self._arr = arr
            return
        base = self._base
        arr = jnp.asarray(arr, dtype=base._arr.dtype)
        if arr.size != math.prod(self._vshape):
            raise MXNetError(
                f"cannot write an array of shape {arr.shape} into a view of shape {self.shape}"
            )
        if self._offset == 0 and arr.size == base._arr.size:
            base._set_data(arr.reshape(base._arr.shape))
        else:
            base._set_data(_write_flat(base._arr, self._offset, arr))

    # ----------------------------------------------------------- properties
    @property
    def shape(self) -> tuple:
        """Tuple of dimensions."""
        return self._vshape if self._base is not None else tuple(self._arr.shape)

    @property
    def dtype(self) -> type:
        """The numpy scalar type, e.g. ``numpy.float32`` (MXNet returns the type, not a dtype)."""
        arr = self._base._arr if self._base is not None else self._arr
        return np.dtype(arr.dtype).type

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def context(self) -> Context:
        """The :class:`Context` this array lives on."""
        return self._ctx

    ctx = context

    @property
    def stype(self) -> str:
        """Storage type: ``'default'`` (dense); see ``mx.nd.sparse`` for csr / row_sparse."""
        return "default"

    @property
    def T(self) -> "NDArray":
        """Reversed-axes transpose (returns ``self`` for fewer than 2 dims, as MXNet)."""
        if self.ndim < 2:
            return self
        return NDArray(jnp.transpose(self._data), self._ctx)

    @property
    def handle(self) -> "NDArray":
        """MXNet exposes a C handle here; mxmod returns the array itself (identity checks only)."""
        return self if self._base is None else self._base

    # ------------------------------------------------------------- host I/O
    def asnumpy(self) -> np.ndarray:
        """Copy to a new (writable) ``numpy.ndarray``; waits for pending work. A
        one-element result converts with ``float()``/``int()`` as under NumPy 1
        (``host_array.py``)."""
        return host_array(self._data)

    def asscalar(self) -> Any:
        """Return the single element as a numpy scalar.

        Raises:
            ValueError: if the array does not hold exactly one element.
        """
        if self.size != 1:
            raise ValueError(
                f"The current array is not a scalar: shape {self.shape} has {self.size} "
                f"elements; index one element first (e.g. arr[0].asscalar())"
            )
        return self.asnumpy().reshape(-1)[0]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = np.asarray(self._data)
        return out.astype(dtype, copy=False) if dtype is not None else out

    def wait_to_read(self) -> None:
        """Block until the array's value is computed (MXNet's engine sync point)."""
        self._data.block_until_ready()

    wait_to_write = wait_to_read

    def __repr__(self) -> str:
        shape_info = "x".join(str(d) for d in self.shape)
        return f"\n{self.asnumpy()}\n<{type(self).__name__} {shape_info} @{self._ctx}>"

    def __getstate__(self) -> dict:
        return {"data": self.asnumpy(), "ctx": (self._ctx.device_type, self._ctx.device_id)}

    def __setstate__(self, state: dict) -> None:
        if "handle" in state:  # MXNet's pickle: one raw NDArray record, loaded on the CPU
            NDArray.__init__(self, record_from_bytes(bytes(state["handle"])), current_context())
            return
        ctx = Context(*state["ctx"])
        try:
            ctx.jax_device
        except MXNetError:
            ctx = current_context()
        NDArray.__init__(self, state["data"], ctx)

    # --------------------------------------------------------------- copies
    #: MXNet's flag for arrays that may be written (all of mxmod's)
    writable = True

    def slice_assign(self, rhs: Any, begin: Any, end: Any, step: Any) -> "NDArray":
        """Write ``rhs`` into the ``begin``/``end``/``step`` box of this array, in place."""
        self[slice_box(begin, end, step)] = rhs
        return self

    def slice_assign_scalar(self, value: float, begin: Any, end: Any, step: Any) -> "NDArray":
        """Fill the ``begin``/``end``/``step`` box of this array with ``value``, in place."""
        self[slice_box(begin, end, step)] = value
        return self

    def copyto(self, other: "NDArray | Context") -> "NDArray":
        """Copy into ``other``: an NDArray (written in place, cast to its dtype) or a Context.

        Raises:
            MXNetError: if the target NDArray's shape differs.
            TypeError: for any other target type.
        """
        if isinstance(other, NDArray):
            if (
                other.handle is self.handle
                and other._offset == self._offset
                and other.shape == self.shape
            ):
                warnings.warn("You are attempting to copy an array to itself", stacklevel=2)
                return other
            if other.shape != self.shape:
                raise MXNetError(
                    f"copyto: source shape {self.shape} does not match target shape "
                    f"{other.shape}; reshape the source or copy into an array of shape "
                    f"{self.shape}"
                )
            src = self._data
            data = src.astype(other.dtype) if src.dtype != np.dtype(other.dtype) else src
            other._set_data(_fresh(_put(data, self._ctx, other._ctx), src))
            return other
        if isinstance(other, Context):
            src = self._data
            return NDArray(_fresh(_put(src, self._ctx, other), src), other)
        raise TypeError(
            f"copyto does not support type {type(other)}: pass an NDArray or a Context "
            f"such as mx.cpu(0)"
        )

    def copy(self) -> "NDArray":
        """Return a new array with the same values and context (never a view)."""
        return NDArray(jnp.copy(self._data), self._ctx)

    def as_in_context(self, context: Context) -> "NDArray":
        """Return ``self`` if already on ``context``, else a copy there."""
        if self._ctx == context:
            return self
        return self.copyto(context)

    def astype(self, dtype: Any, copy: bool = True) -> "NDArray":
        """Cast to ``dtype``; with ``copy=False`` and an unchanged dtype returns ``self``."""
        dt = requested_dtype(dtype, "astype")
        if not copy and dt == np.dtype(self.dtype):
            return self
        return NDArray(_fresh(self._data.astype(dt), self._data), self._ctx)

    def all(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
        """Whether every element is non-zero, as numpy computes it (``np.all(x)`` calls this);
        MXNet 1.x NDArrays reached numpy's reduction through the sequence protocol instead."""
        return np.all(self.asnumpy(), axis=axis, out=out, keepdims=keepdims)

    def any(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
        """Whether some element is non-zero, as numpy computes it (``np.any(x)`` calls this)."""
        return np.any(self.asnumpy(), axis=axis, out=out, keepdims=keepdims)

    def tostype(self, stype: str) -> "NDArray":
        """Storage-type cast. ``mxmod.ndarray.sparse`` replaces this method with one that also
        casts to ``'csr'``/``'row_sparse'`` (it sits above this module, as ``_arith`` does).

        Raises:
            NotImplementedError: for ``'csr'``/``'row_sparse'`` before that module is imported.
        """
        if stype != "default":
            raise NotImplementedError(
                f"tostype({stype!r}): sparse storage is not supported by mxmod; use 'default'"
            )
        return self.copy()

    def reshape(self, *shape: Any, **kwargs: Any) -> "NDArray":
        """Return a view with a new shape; supports MXNet's 0/-1/-2/-3/-4 codes and ``reverse``.

        Raises:
            TypeError: for keywords other than ``shape``/``reverse``.
            MXNetError: for codes that cannot apply; ValueError for a size change.
        """
        unknown = [k for k in kwargs if k not in ("shape", "reverse")]
        if unknown:
            raise TypeError(
                f"Got unknown keywords in reshape: {', '.join(unknown)}. Accepted keyword "
                f"arguments are 'shape' and 'reverse'."
            )
        if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
            shape = tuple(shape[0])
        elif not shape:
            if kwargs.get("shape") is None:
                raise TypeError("reshape needs a shape: arr.reshape((2, 3)) or reshape(shape=...)")
            shape = tuple(kwargs["shape"])
        new = _index.infer_reshape(self.shape, shape, bool(kwargs.get("reverse", False)))
        return NDArray._view(self, 0, new)

    # ------------------------------------------------------------- indexing
    # ``__getitem__``/``__setitem__`` are set by ``_setget``, operators by ``_arith``
    # (the package imports both).

    # ------------------------------------------------------------- protocol
    def __len__(self) -> int:
        if self.ndim == 0:
            raise IndexError("len() of a 0-d NDArray: it has no axis 0")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d NDArray")
        for i in range(self.shape[0]):
            yield self[i]

    def __bool__(self) -> bool:
        if self.size == 0:
            return False
        if self.size == 1:
            return bool(self.asscalar())
        raise ValueError(
            f"The truth value of an NDArray with multiple elements is ambiguous "
            f"(shape {self.shape}): use (arr != 0).sum().asscalar() or index one element"
        )

    def __float__(self) -> float:
        return float(self.asscalar())

    def __int__(self) -> int:
        return int(self.asscalar())

    __hash__ = object.__hash__


def _committed(arr: jax.Array) -> bool:
    """``arr.committed``; True for a tracer (inside jit there is no placement to fix), so
    NDArrays can wrap traced values (e.g. an MXNet-style optimizer's update traced by jit)."""
    try:
        return arr.committed
    except (AttributeError, jax.errors.ConcretizationTypeError):
        return True


def from_jax(arr: jax.Array, ctx: Context | None = None) -> NDArray:
    """Wrap a ``jax.Array`` in an NDArray without copying (mxmod addition)."""
    if not isinstance(arr, jax.Array):
        raise TypeError(f"from_jax expects a jax.Array, got {type(arr)}; use mx.nd.array(...)")
    return NDArray(arr, ctx)
