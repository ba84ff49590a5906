"""Channel-last lowering of 2-D convolution networks, invisible to users.

MXNet symbols are NCHW. XLA's CPU convolutions (and cuDNN's fast ones) want NHWC, and
XLA:CPU's own layout assignment turns every NCHW convolution into transposes around an
NHWC one. This pass keeps the values of a convolution region channel-last instead: a
2-D Convolution/Deconvolution takes its data in NHWC (its weight transposed inside the
traced program, which XLA folds), and BatchNorm (axis 1), Pooling, elementwise ops,
same-shape binary ops and Concat (dim 1) stay in NHWC while their inputs are. A value is
transposed back to NCHW once, where it leaves the region: an op outside these rules, a
graph output. Shapes, parameters, outputs and gradients are MXNet's (NCHW) as before.

``MXMOD_CONV_LAYOUT`` (read when a symbol is first compiled): ``auto`` (default) or
``NHWC`` runs the pass, ``NCHW`` turns it off. See README.md (measurements).
"""

from __future__ import annotations

import os

import jax

from ..base import MXNetError
from ..ops._attrs import Attrs
from ..ops.elemwise import _ELEMWISE, _SCALAR, _UNARY
from .shared_lower import lower_op

ENV_VAR = "MXMOD_CONV_LAYOUT"
_TO_LAST = (0, 2, 3, 1)
_TO_FIRST = (0, 3, 1, 2)

# ops applied value by value: a channel-last input gives a channel-last output
_POINTWISE = (
    set(_UNARY)
    | set(_SCALAR)
    | {"Activation", "clip", "Cast", "amp_cast", "hard_sigmoid", "smooth_l1", "BlockGrad"}
)
_LRELU_POINTWISE = ("leaky", "elu", "selu", "gelu")  # prelu broadcasts gamma, rrelu is random
# same-shape binary / n-ary ops (broadcast_* only when the shapes are equal)
_NARY = set(_ELEMWISE) | {"add_n"} | {"broadcast_" + k for k in ("add", "sub", "mul", "div")}


def channel_last_enabled() -> bool:
    """Whether new graphs lower 2-D convolution regions channel-last (``MXMOD_CONV_LAYOUT``)."""
    value = os.environ.get(ENV_VAR, "auto").strip().upper()
    if value in ("AUTO", "NHWC", ""):
        return True
    if value == "NCHW":
        return False
    raise MXNetError(
        f"{ENV_VAR}={os.environ[ENV_VAR]!r} is not a layout; use 'auto' or 'NHWC' "
        "(channel-last convolution regions) or 'NCHW' (lower every op as MXNet lays it out)"
    )


class Values:
    """The graph's values by (node position, output), each stored channel-first (MXNet's
    layout) or channel-last; ``first``/``last`` give either view, transposing at most once."""

    def __init__(self):
        self._vals: dict = {}
        self._last: set = set()  # refs stored channel-last
        self._other: dict = {}  # ref -> its value in the other layout (cached transposes)

    def set(self, ref, value, last: bool = False) -> None:
        self._vals[ref] = value
        if last:
            self._last.add(ref)

    def __contains__(self, ref) -> bool:
        return ref in self._vals

    def is_last(self, ref) -> bool:
        return ref in self._last

    def first(self, ref):
        if ref not in self._last:
            return self._vals[ref]
        if ref not in self._other:
            self._other[ref] = self._vals[ref].transpose(_TO_FIRST)
        return self._other[ref]

    def last(self, ref):
        """The value channel-last (a 4-D one, which callers check)."""
        if ref in self._last:
            return self._vals[ref]
        if ref not in self._other:
            self._other[ref] = self._vals[ref].transpose(_TO_LAST)
        return self._other[ref]

    def ndim(self, ref) -> int:
        return self._vals[ref].ndim

    def shape(self, ref) -> tuple:
        """MXNet's (channel-first) shape of a value."""
        s = tuple(self._vals[ref].shape)
        return tuple(s[i] for i in _TO_FIRST) if ref in self._last else s


def _with(a, **changes) -> Attrs:
    return Attrs({**a, **changes})


def _conv(node, a, refs, vals, aux, ctx):
    if len(a.kernel) != 2 or a.layout not in (None, "NCHW") or vals.ndim(refs[0]) != 4:
        return None
    # MXNet's weight (O, I, kh, kw) [Deconvolution: (C, F/g, kh, kw)] -> channel-last's
    w = vals.first(refs[1]).transpose(_TO_LAST)
    ins = [vals.last(refs[0]), w] + [vals.first(r) for r in refs[2:]]
    return lower_op(node.op, _with(a, layout="NHWC"), ins, aux, ctx), [True]


def _batchnorm(node, a, refs, vals, aux, ctx):
    if not vals.is_last(refs[0]) or vals.ndim(refs[0]) != 4 or a.axis % 4 != 1:
        return None
    ins = [vals.last(refs[0])] + [vals.first(r) for r in refs[1:]]
    outs, new_aux = lower_op(node.op, _with(a, axis=3), ins, aux, ctx)
    return (outs, new_aux), [True] + [False] * (len(outs) - 1)


def _pooling(node, a, refs, vals, aux, ctx):
    two_d = len(a.kernel) == 2 or (a.global_pool and vals.ndim(refs[0]) == 4)
    if not vals.is_last(refs[0]) or not two_d or a.layout not in (None, "NCHW"):
        return None
    outs = lower_op(node.op, _with(a, layout="NHWC"), [vals.last(refs[0])], aux, ctx)
    # channel-first max pooling has MXNet's hidden workspace output; channel-last has none
    outs = list(outs) + [jax.lax.stop_gradient(outs[0])] * (node.num_outputs() - len(outs))
    return outs, [True] * len(outs)


def _pointwise(node, a, refs, vals, aux, ctx):
    if not vals.is_last(refs[0]):
        return None
    if node.op.name == "LeakyReLU" and a.act_type not in _LRELU_POINTWISE:
        return None
    outs = lower_op(node.op, a, [vals.last(refs[0])], aux, ctx)
    return outs, [True] * len(outs)


def _nary(node, a, refs, vals, aux, ctx):
    if not any(vals.is_last(r) for r in refs):
        return None
    shapes = {vals.shape(r) for r in refs}
    if len(shapes) != 1 or len(next(iter(shapes))) != 4:
        return None
    return lower_op(node.op, a, [vals.last(r) for r in refs], aux, ctx), [True]


def _concat(node, a, refs, vals, aux, ctx):
    if not any(vals.is_last(r) for r in refs) or any(vals.ndim(r) != 4 for r in refs):
        return None
    if a.dim % 4 != 1:
        return None
    return lower_op(node.op, _with(a, dim=3), [vals.last(r) for r in refs], aux, ctx), [True]


_RULES = {"Convolution": _conv, "Deconvolution": _conv, "BatchNorm": _batchnorm}
_RULES.update({"Pooling": _pooling, "LeakyReLU": _pointwise, "Concat": _concat})
_RULES.update({name: _pointwise for name in _POINTWISE})
_RULES.update({name: _nary for name in _NARY})


def lower_channel_last(node, a, refs, vals: Values, aux, ctx):
    """``(op result, channel-last flag per output)`` for a node the pass runs channel-last,
    else None (the caller lowers it channel-first). ``refs``: the node's data inputs."""
    rule = _RULES.get(node.op.name)
    return None if rule is None else rule(node, a, refs, vals, aux, ctx)
