"""More of ``mx.nd``: MXNet's Python-level helpers and legacy operators, and the fluent
methods of ``NDArray`` that dispatch to an operator of the table.

* ``moveaxis``, ``linspace``, ``split_v2``, ``from_numpy``, ``eye`` as MXNet 1.9.1's.
* Legacy operators kept by MXNet for old scripts: ``choose_element_0index``,
  ``fill_element_0index``, ``onehot_encode``, ``crop`` (= ``slice``), and the samplers
  ``random_<dist>`` (and ``uniform``/``normal``), ``sample_<dist>`` (NDArray parameters)
  and ``sample_multinomial``.
* ``arr.<op>(...)`` for every MXNet fluent operator name is ``mx.nd.<op>(arr, ...)``;
  ``flatten``/``expand_dims``/``squeeze`` take ``inplace=True`` and then return a view
  sharing ``arr``'s memory (MXNet's reshape-in-place).
"""

from __future__ import annotations

import operator
import sys
from typing import Any

import jax.numpy as jnp
import numpy as np

from ..base import MXNetError, named
from ..context import current_context
from . import _index
from . import _random_dists as _dists
from ._random import randint
from ._random_dists import normal, uniform
from ._random_multinomial import multinomial
from ..ops.split import split_v2_attrs
from .ndarray import NDArray
from . import tape
from .op_table import nd_function

__all__ = [
    "moveaxis",
    "linspace",
    "eye",
    "split_v2",
    "from_numpy",
    "choose_element_0index",
    "fill_element_0index",
    "onehot_encode",
    "crop",
    "random_uniform",
    "random_normal",
    "random_randint",
    "random_exponential",
    "random_gamma",
    "random_poisson",
    "random_negative_binomial",
    "random_generalized_negative_binomial",
    "sample_uniform",
    "sample_normal",
    "sample_gamma",
    "sample_exponential",
    "sample_poisson",
    "sample_negative_binomial",
    "sample_generalized_negative_binomial",
    "sample_multinomial",
    "uniform",
    "normal",
    "CachedOp",
    "to_dlpack_for_read",
    "to_dlpack_for_write",
    "from_dlpack",
]

random_uniform = uniform  # uniform/normal: MXNet's legacy names, mx.nd.uniform too
random_normal = normal
random_randint = randint
random_exponential = _dists.random_exponential  # MXNet's operators: attributes in its order
random_gamma = _dists.random_gamma
random_poisson = _dists.random_poisson
random_negative_binomial = _dists.random_negative_binomial
random_generalized_negative_binomial = _dists.random_generalized_negative_binomial
sample_uniform = _dists.sample_uniform  # MXNet's _sample_<dist>: NDArray parameters
sample_normal = _dists.sample_normal
sample_gamma = _dists.sample_gamma
sample_exponential = _dists.sample_exponential
sample_poisson = _dists.sample_poisson
sample_negative_binomial = _dists.sample_negative_binomial
sample_generalized_negative_binomial = _dists.sample_generalized_negative_binomial
sample_multinomial = multinomial


def _nd(name: str):
    """``mx.nd.<name>``, looked up when called (this package is loaded by then)."""
    return getattr(sys.modules[__package__], name)


def _as_axes(axes: Any, ndim: int, what: str) -> list:
    seq = [axes] if isinstance(axes, (int, np.integer)) else list(axes)
    out = []
    for ax in seq:
        ax = operator.index(ax)
        if not -ndim <= ax < ndim:
            raise ValueError(f"moveaxis: {what} axis {ax} is out of bounds for {ndim} dimensions")
        out.append(ax % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"moveaxis: repeated axis in {what} {axes!r}")
    return out


def moveaxis(tensor: NDArray, source: Any, destination: Any) -> NDArray:
    """Move axes ``source`` to positions ``destination`` (as ``numpy.moveaxis``)."""
    src = _as_axes(source, tensor.ndim, "source")
    dst = _as_axes(destination, tensor.ndim, "destination")
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination must have the same number of axes")
    order = [n for n in range(tensor.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _nd("transpose")(tensor, axes=tuple(order))


def linspace(
    start: float,
    stop: float,
    num: int,
    endpoint: bool = True,
    ctx: Any = None,
    dtype: Any = "float32",
) -> NDArray:
    """``num`` evenly spaced values from ``start`` to ``stop`` (computed in float64)."""
    host = np.linspace(start, stop, int(num), endpoint=endpoint, dtype=np.float64)
    return _nd("array")(host.astype(np.dtype(dtype)), ctx=ctx, dtype=dtype)


def eye(N: int, M: int = 0, k: int = 0, ctx: Any = None, dtype: Any = "float32", **kw) -> NDArray:
    """2-D array with ones on diagonal ``k`` (``M=0`` means ``M=N``), as MXNet's ``eye``."""
    if kw.get("out") is not None:
        kw["out"][:] = eye(N, M, k, ctx, dtype)
        return kw["out"]
    host = np.eye(int(N), int(M) or None, int(k), dtype=np.dtype(dtype))
    return _nd("array")(host, ctx=ctx, dtype=dtype)


_split_v2_op = nd_function("_split_v2")


def split_v2(ary: NDArray, indices_or_sections: Any, axis: int = 0, squeeze_axis: bool = False):
    """Split into equal sections (an int) or at the given cut points (a tuple), as MXNet's
    (the ``_split_v2`` operator)."""
    attrs = split_v2_attrs(indices_or_sections)
    size = ary.shape[axis]
    if attrs["sections"] and size % attrs["sections"]:
        raise ValueError(
            f"split_v2: axis {axis} of size {size} does not split into "
            f"{indices_or_sections} equal sections"
        )
    return _split_v2_op(ary, axis=axis, squeeze_axis=squeeze_axis, **attrs)


def from_numpy(ndarray: np.ndarray, zero_copy: bool = True) -> NDArray:
    """NDArray holding ``ndarray``'s values (C-contiguous arrays only, as MXNet).

    MXNet shares the buffer and makes the numpy array read-only; a JAX array cannot
    alias host memory, so the values are copied, and the numpy array is still made
    read-only when ``zero_copy`` is set (writes to it raise ValueError, as in MXNet).
    """
    if not ndarray.flags["C_CONTIGUOUS"]:
        raise ValueError(
            "from_numpy: only C-contiguous arrays are supported (np.ascontiguousarray)"
        )
    out = _nd("array")(ndarray, dtype=ndarray.dtype)
    if zero_copy:
        ndarray.flags.writeable = False
    return out


def choose_element_0index(lhs: NDArray, rhs: NDArray, out: NDArray | None = None) -> NDArray:
    """``lhs[i, rhs[i]]`` for every row ``i`` (legacy form of ``pick(axis=1)``)."""
    res = _nd("pick")(lhs, rhs, axis=1)
    if out is not None:
        out[:] = res
        return out
    return res


def fill_element_0index(
    lhs: NDArray, mhs: NDArray, rhs: NDArray, out: NDArray | None = None
) -> NDArray:
    """Copy of ``lhs`` with ``lhs[i, rhs[i]] = mhs[i]`` for every row ``i``."""
    rows = jnp.arange(lhs.shape[0])
    cols = rhs._data.astype(jnp.int32)
    data = lhs._data.at[rows, cols].set(mhs._data.astype(lhs._data.dtype))
    if out is not None:
        out._set_data(data)
        return out
    return NDArray(data, lhs.context)


def onehot_encode(indices: NDArray, out: NDArray) -> NDArray:
    """Write the one-hot rows of ``indices`` into ``out`` (its width is the depth)."""
    if out.ndim != 2 or indices.shape != (out.shape[0],):
        raise MXNetError(
            f"onehot_encode: out {out.shape} must be 2-D with one row per index ({indices.shape})"
        )
    hot = jnp.arange(out.shape[1]) == indices._data.astype(jnp.int32)[:, None]
    out._set_data(hot.astype(out._data.dtype))
    return out


def crop(data: NDArray, begin: Any, end: Any, step: Any = (), out: NDArray | None = None, **kw):
    """MXNet's old name for ``slice``."""
    return _nd("slice")(data, begin=begin, end=end, step=step, out=out, **kw)


class CachedOp:
    """Run a symbol imperatively: ``CachedOp(sym)(*inputs)`` with the inputs in
    ``sym.list_inputs()`` order (inference mode). ``flags`` are accepted and ignored:
    every bound graph is compiled once per input shape anyway."""

    def __init__(self, sym: Any, flags: Any = ()):
        self._sym = sym
        self._exes: dict = {}

    def __call__(self, *args: Any, out: Any = None, default_ctx: Any = None):
        names = self._sym.list_inputs()
        arrays = [a for a in args if a is not None]
        if len(arrays) != len(names):
            raise ValueError(
                f"CachedOp: the symbol has {len(names)} inputs {names}, got {len(arrays)} arrays"
            )
        ctx = arrays[0].context if arrays else (default_ctx or current_context())
        given = dict(zip(names, arrays))
        aux_names = self._sym.list_auxiliary_states()
        args_d = {n: given[n] for n in self._sym.list_arguments()}
        aux_d = {n: given[n] for n in aux_names}
        outs = self._sym.bind(ctx, args_d, aux_states=aux_d, grad_req="null").forward()
        if out is not None:
            for dst, src in zip(out if isinstance(out, (list, tuple)) else [out], outs):
                dst[:] = src
            return out
        return outs[0] if len(outs) == 1 else outs


def to_dlpack_for_read(data: NDArray):
    """A DLPack capsule of ``data``'s values (CPU arrays; the buffer is shared read-only)."""
    return data._data.__dlpack__()


def to_dlpack_for_write(data: NDArray):
    """A DLPack capsule for a consumer that writes. JAX buffers are immutable, so the
    capsule holds a private copy: the consumer's writes do not reach ``data``."""
    return jnp.array(data._data, copy=True).__dlpack__()


class _Capsule:
    """Gives a bare DLPack capsule the protocol methods ``jax.dlpack.from_dlpack`` asks for."""

    def __init__(self, capsule: Any):
        self._capsule = capsule

    def __dlpack__(self, **_: Any):
        return self._capsule

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU: the capsules mxmod hands out are CPU buffers


def from_dlpack(dlpack: Any) -> NDArray:
    """NDArray from a DLPack capsule or any object with ``__dlpack__`` (torch, numpy...)."""
    import jax

    src = dlpack if hasattr(dlpack, "__dlpack__") else _Capsule(dlpack)
    return NDArray(jax.dlpack.from_dlpack(src))


_FLUENT_OPS = (
    "broadcast_axes repeat pad swapaxes split slice slice_like take sort topk argsort "
    "argmax_channel sign shape_array size_array tile flip depth_to_space space_to_depth "
    "diag nansum nanprod round rint fix floor ceil trunc sin cos tan arcsin arccos arctan "
    "degrees radians sinh cosh tanh arcsinh arccosh arctanh expm1 log10 log2 log1p "
    "log_sigmoid rsqrt cbrt rcbrt reciprocal relu sigmoid softmin mish broadcast_like "
    "reshape_like"
).split()


def _fluent(name: str):
    def method(self, *args: Any, **kwargs: Any):
        return _nd(name)(self, *args, **kwargs)

    return named(method, name, f"Fluent form of ``mx.nd.{name}(self, ...)``.")


def _squeezed_shape(shape: tuple, axis: Any) -> tuple:
    if axis is None:
        keep = [d for d in shape if d != 1]
        return tuple(keep) or (1,)
    axes = {a % len(shape) for a in ([axis] if isinstance(axis, int) else axis)}
    for a in axes:
        if shape[a] != 1:
            raise MXNetError(f"squeeze: axis {a} has size {shape[a]}, not 1")
    return tuple(d for i, d in enumerate(shape) if i not in axes) or (1,)


def _reshaping(name: str, new_shape):
    """Fluent ``flatten``/``expand_dims``/``squeeze`` with MXNet's ``inplace`` flag."""

    def method(self, *args: Any, inplace: bool = False, **kwargs: Any):
        if inplace:
            return self.reshape(new_shape(self.shape, *args, **kwargs))
        return _nd(name)(self, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = (
        f"Fluent ``mx.nd.{name}(self, ...)``; ``inplace=True`` returns a view sharing memory."
    )
    return method


def _expanded_shape(shape: tuple, axis: int) -> tuple:
    axis = axis % (len(shape) + 1)
    return shape[:axis] + (1,) + shape[axis:]


def _slice_is_contiguous(slc: Any, shape: tuple) -> bool:
    """True if basic index ``slc`` selects a contiguous block (then ``arr[slc]`` is a view)."""
    slices, _, _ = _index.normalize_basic_key(tuple(slc), shape)
    return _index.contiguous_flat_range(slices, shape) is not None


def install() -> None:
    """Attach the fluent methods to NDArray (names NDArray already has stay)."""
    for name in _FLUENT_OPS:
        if not hasattr(NDArray, name):
            setattr(NDArray, name, _fluent(name))
    tape.install()
    NDArray._basic_indexing_slice_is_contiguous = staticmethod(_slice_is_contiguous)
    NDArray.split_v2 = lambda self, *a, **k: split_v2(self, *a, **k)
    NDArray.to_dlpack_for_read = to_dlpack_for_read
    NDArray.to_dlpack_for_write = to_dlpack_for_write
    NDArray.flatten = _reshaping("flatten", lambda s: (s[0], int(np.prod(s[1:]))) if s else (1,))
    NDArray.expand_dims = _reshaping("expand_dims", _expanded_shape)
    NDArray.squeeze = _reshaping("squeeze", lambda s, axis=None: _squeezed_shape(s, axis))
