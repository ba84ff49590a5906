"""NDArray operators (``+ - * / ** %``, comparisons, in-place forms) and fluent methods.

MXNet 1.9.1 rules kept here:

* NDArray (op) NDArray needs equal dtypes (else :class:`MXNetError`) and
  broadcastable shapes; the result lives on the left operand's context (the
  right one is moved there, as MXNet does for CPU contexts).
* NDArray (op) scalar casts the scalar to the array's dtype first
  (``int32_arr * 1.5`` multiplies by 1); integer ``/`` truncates toward zero;
  ``%`` takes the divisor's sign (like Python).
* Comparisons return 0/1 in the array's dtype.
* numpy arrays and lists are not arithmetic operands (TypeError, as MXNet).
  mxmod addition: comparisons with a numpy array are elementwise (the array is
  cast to this array's dtype) and return an NDArray; MXNet raises TypeError.
* numpy's functions call the fluent methods with numpy's keywords:
  ``np.argmax(nd, axis=1)``, ``np.sum(nd)``, ``np.max``/``min``/``prod``/
  ``mean``/``clip`` return NDArrays (as MXNet 1.9.1 does for all but ``mean``,
  which MXNet rejects); ``out=`` other than None raises TypeError.
* ``a += b`` writes into ``a``'s handle (and through a view into its parent).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..base import MXNetError, named
from . import ops, shape_ops
from ._programs import program
from .ops import binary, elementwise, scalar
from .ndarray import NDArray
from .tape import check_inplace, recorded


def _int_div(a, b):
    if jnp.issubdtype(a.dtype, jnp.integer):  # C-style truncation, as MXNet
        a, b = jnp.broadcast_arrays(a, b.astype(a.dtype))
        return jax.lax.div(a, b)
    return jnp.true_divide(a, b)


def _is_scalar(x: Any) -> bool:
    if isinstance(x, jax.Array):
        return x.ndim == 0
    return isinstance(x, (int, float, bool, np.generic)) and np.ndim(x) == 0


def _apply_plain(self: NDArray, other: Any, fn, op: str, reverse: bool = False) -> NDArray:
    if isinstance(other, NDArray):
        return binary(other, self, fn, op) if reverse else binary(self, other, fn, op)
    if not _is_scalar(other):
        return NotImplemented
    dtype = self._data.dtype
    a, b = (scalar(other, dtype), self._data) if reverse else (self._data, scalar(other, dtype))
    return NDArray(elementwise(fn, a, b, dtype), self._ctx)


_apply = recorded(_apply_plain, "NDArray arithmetic")  # on autograd's tape in record()


def _make(fn, op: str):
    def forward(self, other):
        res = _apply(self, other, fn, op)
        if res is NotImplemented:
            raise TypeError(
                f"type {type(other)} not supported by NDArray {op}: "
                f"convert it with mx.nd.array(...)"
            )
        return res

    def reflected(self, other):
        res = _apply(self, other, fn, op, reverse=True)
        if res is NotImplemented:
            raise TypeError(
                f"type {type(other)} not supported by NDArray {op}: "
                f"convert it with mx.nd.array(...)"
            )
        return res

    def inplace(self, other):
        check_inplace(self, other)
        res = forward(self, other)
        if res.shape != self.shape:
            raise MXNetError(
                f"in-place {op}= would change shape {self.shape} to {res.shape}; "
                f"use the out-of-place form"
            )
        self._set_data(res._data)
        return self

    return forward, reflected, inplace


_OPS = {
    "add": (jnp.add, "+"),
    "sub": (jnp.subtract, "-"),
    "mul": (jnp.multiply, "*"),
    "truediv": (_int_div, "/"),
    "mod": (jnp.remainder, "%"),
    "pow": (jnp.power, "**"),
}

for _name, (_fn, _sym) in _OPS.items():
    _f, _r, _i = _make(_fn, _sym)
    setattr(NDArray, f"__{_name}__", _f)
    setattr(NDArray, f"__r{_name}__", _r)
    setattr(NDArray, f"__i{_name}__", _i)
NDArray.__div__, NDArray.__rdiv__, NDArray.__idiv__ = (
    NDArray.__truediv__,
    NDArray.__rtruediv__,
    NDArray.__itruediv__,
)


def _cmp(fn, op: str):
    def method(self, other):
        if isinstance(other, np.ndarray):
            other = NDArray(np.asarray(other).astype(np.dtype(self.dtype)), self._ctx)
        res = _apply(self, other, fn, op)
        if res is NotImplemented:
            if op in ("==", "!="):
                return op == "!="
            raise TypeError(f"type {type(other)} not supported by NDArray {op}")
        return res

    return method


NDArray.__eq__ = _cmp(jnp.equal, "==")
NDArray.__ne__ = _cmp(jnp.not_equal, "!=")
NDArray.__lt__ = _cmp(jnp.less, "<")
NDArray.__le__ = _cmp(jnp.less_equal, "<=")
NDArray.__gt__ = _cmp(jnp.greater, ">")
NDArray.__ge__ = _cmp(jnp.greater_equal, ">=")
NDArray.__hash__ = object.__hash__
NDArray.__neg__ = recorded(
    lambda self: NDArray(program(jnp.negative, ())(self._data), self._ctx), "NDArray.__neg__"
)
NDArray.__pos__ = lambda self: self
NDArray.__abs__ = lambda self: ops.abs(self)


def _fluent(fn):
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)

    return named(method, fn.__name__, f"Fluent form of ``mx.nd.{fn.__name__}(self, ...)``.")


def _numpy_fluent(fn, takes_dtype: bool):
    """Fluent method that also accepts the keywords numpy's functions pass (``np.sum(nd)``)."""

    def method(self, *args, out=None, **kwargs):
        if out is not None:
            raise TypeError(
                f"NDArray.{fn.__name__}: out= is not supported; use the returned NDArray"
            )
        for key in ("initial", "where", "ddof"):
            if key in kwargs:
                raise NotImplementedError(
                    f"NDArray.{fn.__name__}: numpy's {key}= argument is "
                    f"not supported; call .asnumpy() first"
                )
        dtype = kwargs.pop("dtype", None) if takes_dtype else None
        data = self if dtype is None else self.astype(dtype)
        return fn(data, *args, **kwargs)

    method.__name__ = fn.__name__
    method.__doc__ = (
        f"Fluent form of ``mx.nd.{fn.__name__}(self, ...)``; numpy's "
        f"``np.{fn.__name__}(arr, ...)`` lands here and returns an NDArray."
    )
    return method


for _fn in (
    ops.norm,
    ops.pick,
    ops.one_hot,
    ops.softmax,
    ops.log_softmax,
    ops.log,
    ops.exp,
    ops.sqrt,
    ops.square,
    ops.abs,
    ops.zeros_like,
    ops.ones_like,
    shape_ops.slice_axis,
    shape_ops.transpose,
    shape_ops.flatten,
    shape_ops.expand_dims,
):
    setattr(NDArray, _fn.__name__, _fluent(_fn))


def _broadcast_to_method(self: NDArray, shape: Any) -> NDArray:
    """``NDArray.broadcast_to``: unlike ``mx.nd.broadcast_to``, the method (as MXNet's)
    first prepends axes of 1 (numpy's rule): a ``(1,)`` array broadcasts to ``(4, 6)``."""
    shape = tuple(shape)
    if len(shape) < self.ndim:
        raise MXNetError(f"operands could not be broadcast together with {self.shape} to {shape}")
    cur = (1,) * (len(shape) - self.ndim) + tuple(self.shape)
    if any(c not in (1, t) for c, t in zip(cur, shape)):
        raise MXNetError(f"operands could not be broadcast together with {self.shape} to {shape}")
    data = self if cur == tuple(self.shape) else self.reshape(cur)
    return shape_ops.broadcast_to(data, shape=shape)


NDArray.broadcast_to = _broadcast_to_method
for _fn in (ops.sum, ops.mean, ops.prod):
    setattr(NDArray, _fn.__name__, _numpy_fluent(_fn, takes_dtype=True))
for _fn in (ops.max, ops.min, ops.argmax, ops.argmin, ops.clip):
    setattr(NDArray, _fn.__name__, _numpy_fluent(_fn, takes_dtype=False))
