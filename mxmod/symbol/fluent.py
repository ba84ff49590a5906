"""MXNet's fluent methods of ``Symbol``: ``sym.<op>(...)`` is ``mx.sym.<op>(sym, ...)``.

Also ``astype`` (= ``cast``), ``eval`` (bind and run once), ``split_v2`` and the
NDArray-style positional shape of ``reshape`` (``sym.reshape((2, -1))``).
"""

from __future__ import annotations

from typing import Any

from ..base import named
from ..context import current_context
from ..ops.split import split_v2_attrs
from .creation import op_function
from .symbol import Symbol

FLUENT_OPS = (
    "reshape_like zeros_like ones_like broadcast_axes repeat pad swapaxes split slice "
    "slice_axis slice_like take one_hot pick sort topk argsort argmax argmax_channel argmin "
    "clip abs sign flatten shape_array size_array expand_dims broadcast_to broadcast_like "
    "tile transpose flip depth_to_space space_to_depth diag sum nansum prod nanprod mean max "
    "min norm round rint fix floor ceil trunc sin cos tan arcsin arccos arctan degrees "
    "radians sinh cosh tanh arcsinh arccosh arctanh exp expm1 log log10 log2 log1p "
    "log_sigmoid sqrt rsqrt cbrt rcbrt square reciprocal relu sigmoid softmax log_softmax "
    "softmin mish squeeze"
).split()


def _fluent(name: str):
    def method(self, *args: Any, **kwargs: Any) -> Symbol:
        return op_function(name)(self, *args, **kwargs)

    return named(method, name, f"Fluent form of ``mx.sym.{name}(self, ...)``.")


def reshape(self, *args: Any, **kwargs: Any) -> Symbol:
    """``mx.sym.reshape(self, shape=...)``; the shape may also be given positionally."""
    if args and "shape" not in kwargs:
        shape = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args
        kwargs["shape"] = tuple(shape)
        args = ()
    return op_function("reshape")(self, *args, **kwargs)


def astype(self, dtype: Any, **kwargs: Any) -> Symbol:
    """``mx.sym.cast(self, dtype=dtype)``."""
    return op_function("cast")(self, dtype=dtype, **kwargs)


def eval_(self, ctx: Any = None, **kwargs: Any) -> list:
    """Bind ``kwargs`` (name -> NDArray) as the arguments and run one forward pass."""
    exe = self.bind(ctx or current_context(), kwargs)
    return exe.forward()


def split_v2(self, indices_or_sections: Any, axis: int = 0, squeeze_axis: bool = False, **kw):
    """Split into equal sections (an int) or at the given cut points (a tuple), as MXNet's
    ``split_v2`` (the ``_split_v2`` operator)."""
    attrs = split_v2_attrs(indices_or_sections)
    return op_function("_split_v2")(self, axis=axis, squeeze_axis=squeeze_axis, **attrs, **kw)


def gen_atomic_symbol(self) -> Symbol:
    """The operator of this (single-node) symbol with its attributes, on fresh inputs."""
    node = self._outputs[0][0]
    if node.is_var:
        raise ValueError(f"_gen_atomic_symbol: {node.name!r} is a variable, not an operator")
    params = {k: v for k, v in node.attrs.items() if not k.startswith("__")}
    return op_function(node.op.name)(name=node.name, **params)


def install() -> None:
    for name in FLUENT_OPS:
        if not hasattr(Symbol, name):
            setattr(Symbol, name, _fluent(name))
    Symbol.reshape = reshape
    Symbol.astype = astype
    Symbol.eval = eval_
    Symbol.split_v2 = split_v2
    Symbol._gen_atomic_symbol = gen_atomic_symbol
