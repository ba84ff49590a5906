"""Shape and type inference over a symbol graph (bidirectional, to a fixed point)."""

from __future__ import annotations

import math
import warnings
from typing import Any, Optional

import numpy as np

from ..base import FLAG_DTYPES, MXNetError
from ..ops._attrs import AttrError, p_shape
from ..ops.shape import norm_axis
from .graph import Node, aux_var_ids, topo_order

Entry = tuple[int, int]


def _var_shape(node: Node) -> Optional[tuple]:
    """A variable's declared ``__shape__``; its 0 dims are unknown (MXNet's legacy shapes)."""
    text = node.attrs.get("__shape__")
    if text is None:
        return None
    try:
        shape = p_shape(text)
    except AttrError:
        return None
    return tuple(shape) if shape and any(d > 0 for d in shape) else None


def complete(shape: Optional[tuple]) -> bool:
    """Whether ``shape`` is known in every dim (a 0 dim is unknown, as in MXNet 1.x)."""
    return shape is not None and all(d > 0 for d in shape)


# Ops whose data input shares its batch (first) dim with output 0: a known output completes
# a data entry declared with an unknown (0) batch dim, such as mx.rnn's begin states
# (``zeros(shape=(0, H))``), as MXNet's shape inference does.
_BATCH_FROM_OUTPUT = ("FullyConnected", "Convolution")


def _partial_shape(node: Node) -> Optional[tuple]:
    """The declared shape of a Variable or ``_zeros``/``_ones``/``_full`` node whose only
    unknown (0) dim is the first; else None."""
    if node.is_var:
        try:
            shape = p_shape(node.attrs.get("__shape__", "()"))
        except AttrError:
            return None
    elif node.op.name in ("_zeros", "_ones", "_full"):
        shape = tuple(node.parsed().shape)
    else:
        return None
    return shape if shape and shape[0] == 0 and all(d > 0 for d in shape[1:]) else None


def _batch_from_output(node: Node, shapes: dict) -> bool:
    """Fill a data input of unknown batch size from the node's known output; True if filled."""
    out = shapes.get((id(node), 0))
    if not complete(out) or node.op.name not in _BATCH_FROM_OUTPUT or not node.inputs:
        return False
    child, k = node.inputs[0]
    part = _partial_shape(child) if k == 0 else None
    if part is None or complete(shapes.get((id(child), 0))):
        return False
    shapes[(id(child), 0)] = (out[0],) + part[1:]
    return True


# Casts whose output i has the shape of input i: a known output gives the input its shape
# (a parameter read only through an AMP cast), as MXNet's elementwise shape rule does.
_SHAPE_FROM_OUTPUT = ("amp_cast", "amp_multicast", "Cast", "_identity_with_attr_like_rhs")


def _shape_from_output(node: Node, shapes: dict) -> bool:
    if node.op.name not in _SHAPE_FROM_OUTPUT:
        return False
    filled = False
    for i, (child, k) in enumerate(node.inputs):
        out, old = shapes.get((id(node), i)), shapes.get((id(child), k))
        new = out if old is None else _merge(old, out) if out is not None else None
        if new is not None and new != old:
            shapes[(id(child), k)] = new
            filled = True
    return filled


# Joins whose known output decides one input of unknown size, as MXNet's shape rules run
# backwards: a Gluon RNN exports its weights as Variables of shape (4H, 0) reshaped to 1-D
# and joined by ``_rnn_param_concat``; the RNN operator knows the joined size.
_JOINS = ("Concat", "_rnn_param_concat")


def _inputs_from_output(node: Node, shapes: dict) -> bool:
    """Fill the one undecided input of a Concat (or the unknown dim of a Reshape's input)
    from the node's known output; True if filled."""
    out = shapes.get((id(node), 0))
    if not complete(out) or not node.inputs:
        return False
    ins = [shapes.get((id(c), k)) for c, k in node.inputs]
    if node.op.name == "Reshape":
        old = ins[0]
        if old is None or complete(old) or sum(d <= 0 for d in old) != 1:
            return False
        known = math.prod(d for d in old if d > 0)
        if known == 0 or math.prod(out) % known:
            return False
        new = tuple(d if d > 0 else math.prod(out) // known for d in old)
        child, k = node.inputs[0]
        shapes[(id(child), k)] = new
        return True
    if node.op.name not in _JOINS:
        return False
    # one input open (Concat); several for _rnn_param_concat, which splits what is left
    # equally (a bidirectional layer's two input weights), as MXNet's rule does
    open_ = [i for i, s in enumerate(ins) if not complete(s)]
    many = node.op.name == "_rnn_param_concat"
    if not open_ or (len(open_) > 1 and not many):
        return False
    if any(s is not None and len(s) != len(out) for s in ins):
        return False
    ax = norm_axis(node.parsed().dim, len(out), "dim")
    left = out[ax] - sum(s[ax] for i, s in enumerate(ins) if i not in open_)
    if left <= 0 or left % len(open_):
        return False
    new = out[:ax] + (left // len(open_),) + out[ax + 1 :]
    if any(ins[i] is not None and _merge(ins[i], new) != new for i in open_):
        return False
    for i in open_:
        child, k = node.inputs[i]
        shapes[(id(child), k)] = new
    return True


# ------------------------------------------------------------------ partial shapes
#: Two unrelated sizes stand for a partial shape's unknown dims (``_probe``).
_PROBES = (10007, 20011)


def _merge(old: tuple, new: tuple) -> Optional[tuple]:
    """``old`` with its unknown dims taken from ``new`` (None if the ranks differ)."""
    if len(old) != len(new):
        return None
    return tuple(o if o > 0 else n for o, n in zip(old, new))


def _probe(node: Node, shapes: list) -> tuple[list, list]:
    """An operator's inference over partial input shapes (MXNet's 0 = unknown dims).

    The unknown dims are given two unrelated sizes in turn and the operator's own
    inference runs on each: a dim both runs agree on is decided, the others stay 0 (a
    Convolution over data (1, 0, 0, 0) gets weight (64, 0, 7, 7)). Sizes that do not fit
    the operator tell nothing, so three ways of choosing them are tried: one size per
    unknown dim; one size per axis position (a Convolution's data and weight channels
    must agree); the inputs of one rank filling each other's unknown dims first (the
    elementwise rule: (0, 3) + (5, 0) is (5, 3))."""
    a = node.parsed()
    for way in ("each", "axis", "across"):
        filled = _fill_across(shapes) if way == "across" else shapes
        runs = []
        for base in _PROBES:
            sizes = iter(range(base, base + 10000, 2))
            probe = [
                None
                if s is None
                else tuple(
                    d if d > 0 else next(sizes) if way == "each" else base + 2 * j
                    for j, d in enumerate(s)
                )
                for s in filled
            ]
            try:
                runs.append(node.op.run_infer_shape(a, node.name, probe))
            except Exception:  # sizes that do not fit the operator tell nothing
                break
        if len(runs) == 2:
            (in1, out1), (in2, out2) = runs
            new_in = [_agree(x, y) for x, y in zip(in1, in2)]
            return new_in, [_agree(x, y) for x, y in zip(out1, out2)]
    # no sizes fit: what the operator infers with the partial inputs unknown
    return node.op.run_infer_shape(a, node.name, [s if complete(s) else None for s in shapes])


def _fill_across(shapes: list) -> list:
    by_rank: dict = {}
    for s in shapes:
        if s is not None:
            by_rank[len(s)] = _merge(by_rank.get(len(s), s), s)
    return [None if s is None else _merge(s, by_rank[len(s)]) for s in shapes]


def _agree(x: Optional[tuple], y: Optional[tuple]) -> Optional[tuple]:
    if x is None or y is None or len(x) != len(y):
        return None
    return tuple(int(p) if p == q else 0 for p, q in zip(x, y))


def _fill_shapes(node: Node, new_in: list, outs: list, shapes: dict) -> bool:
    """Record what an operator inferred, refining partial shapes; True if any changed."""
    changed = False
    entries = [((id(c), i), v, False) for (c, i), v in zip(node.inputs, new_in)]
    entries += [((id(node), i), v, True) for i, v in enumerate(outs)]
    for key, v, is_out in entries:
        old = shapes.get(key)
        if v is None or old == v:
            continue
        if old is None:
            shapes[key] = v
            changed = True
        elif complete(old):
            if is_out and complete(v):
                _check_output_shape(node, key[1], v, old)
        else:
            new = _merge(old, v)
            if new is not None and new != old:
                shapes[key] = new
                changed = True
    return changed


def _named_inputs(sym, args: tuple, kwargs: dict, what: str) -> dict:
    arg_names = sym.list_arguments()
    given: dict[str, Any] = {}
    if args:
        if len(args) > len(arg_names):
            raise MXNetError(
                f"{what} got {len(args)} positional values for {len(arg_names)} "
                f"arguments {arg_names}"
            )
        for name, v in zip(arg_names, args):
            if v is not None:
                given[name] = v
    inputs = set(sym.list_inputs())
    for name, v in kwargs.items():
        if name not in inputs:
            raise MXNetError(
                f"{what}: {name!r} is not an input of the symbol; its arguments are {arg_names}"
            )
        if v is not None:
            given[name] = v
    return given


def _values_in(node: Node, values: dict) -> list:
    return [values.get((id(c), i)) for c, i in node.inputs]


def _fill(node: Node, new_in: list, outs: list, values: dict, check) -> bool:
    """Record the inputs' and outputs' values an operator inferred; True if any is new.
    ``check(node, i, new, old)`` judges an output known already (None: keep the old)."""
    changed = False
    for (c, i), v in zip(node.inputs, new_in):
        if v is not None and (id(c), i) not in values:
            values[(id(c), i)] = v
            changed = True
    for i, v in enumerate(outs):
        old = values.get((id(node), i))
        if v is not None and old is None:
            values[(id(node), i)] = v
            changed = True
        elif v is not None and check is not None:
            check(node, i, v, old)
    return changed


def _check_output_shape(node: Node, i: int, new: tuple, old: tuple) -> None:
    if old != new:
        raise MXNetError(
            f"{node.op.name} {node.name!r}: output {i} inferred as {new} but the graph needs {old}"
        )


def _propagate(sym, variable, infer) -> tuple[list[Node], dict]:
    """The graph order and every entry's value it can find: variables' from
    ``variable(node)`` (None: unknown), then ``infer(node, values) -> changed`` on every
    operator forwards then backwards until nothing changes."""
    order = topo_order(sym._outputs)
    values: dict[Entry, Any] = {}
    for node in order:
        v = variable(node) if node.is_var else None
        if v is not None:
            values[(id(node), 0)] = v
    ops = [n for n in order if not n.is_var]
    for _ in range(len(ops) + 2):
        changed = False
        for node in ops + ops[::-1]:
            changed = infer(node, values) or changed
        if not changed:
            break
    return order, values


def propagate_shapes(sym, given: dict[str, tuple]) -> tuple[list[Node], dict[Entry, tuple]]:
    """Infer every entry's shape it can; raises ShapeError for shapes that cannot fit.
    Only complete shapes are returned (``partial_shapes`` keeps the partial ones)."""
    order, shapes = partial_shapes(sym, given)
    return order, {k: v for k, v in shapes.items() if complete(v)}


def partial_shapes(sym, given: dict[str, tuple]) -> tuple[list[Node], dict[Entry, tuple]]:
    """Every entry's shape inference finds, partial ones (0 = unknown dim) included."""

    def variable(node: Node) -> Optional[tuple]:
        s = given.get(node.name)
        if s is None:
            return _var_shape(node)
        s = tuple(int(d) for d in s)
        return s if any(d > 0 for d in s) else None

    def infer(node: Node, shapes: dict) -> bool:
        ins = _values_in(node, shapes)
        if all(s is None or complete(s) for s in ins):
            new_in, outs = node.op.run_infer_shape(node.parsed(), node.name, ins)
        else:
            new_in, outs = _probe(node, ins)
        changed = _fill_shapes(node, new_in, outs, shapes)
        changed = _batch_from_output(node, shapes) or changed
        changed = _inputs_from_output(node, shapes) or changed
        return _shape_from_output(node, shapes) or changed

    return _propagate(sym, variable, infer)


def infer_shape(sym, args: tuple, kwargs: dict, partial: bool):
    """``Symbol.infer_shape``: (arg_shapes, out_shapes, aux_shapes) in list order."""
    given = _named_inputs(sym, args, kwargs, "infer_shape")
    order, shapes = partial_shapes(sym, given)
    aux = aux_var_ids(order)
    arg_nodes = [n for n in order if n.is_var and id(n) not in aux]
    aux_nodes = [n for n in order if n.is_var and id(n) in aux]
    arg_shapes = [shapes.get((id(n), 0)) for n in arg_nodes]
    aux_shapes = [shapes.get((id(n), 0)) for n in aux_nodes]
    out_shapes = [shapes.get((id(n), i)) for n, i in sym._outputs]
    if partial:
        fill = lambda lst: [s if s is not None else () for s in lst]  # noqa: E731
        return fill(arg_shapes), fill(out_shapes), fill(aux_shapes)
    unknown = [
        n.name for n, s in zip(arg_nodes + aux_nodes, arg_shapes + aux_shapes) if not complete(s)
    ]
    if unknown or not all(complete(s) for s in out_shapes):
        warnings.warn(
            f"infer_shape: cannot decide the shapes of {unknown or 'some outputs'}; "
            "give their shapes (or more input shapes) to infer_shape",
            stacklevel=3,
        )
        return None, None, None
    return arg_shapes, out_shapes, aux_shapes


def unknown_shape_error(sym, given: dict) -> MXNetError:
    order, shapes = propagate_shapes(sym, given)
    unknown = [n.name for n in order if n.is_var and (id(n), 0) not in shapes]
    return MXNetError(
        f"cannot infer the shapes of {unknown}; pass their shapes, e.g. "
        f"simple_bind(ctx, {unknown[0] if unknown else 'data'}=(...))"
    )


def propagate_types(sym, given: dict[str, Any]) -> tuple[list[Node], dict[Entry, str]]:
    """Infer every entry's dtype name it can (``given``, then variables' ``__dtype__``)."""

    def variable(node: Node) -> Optional[str]:
        d = given.get(node.name)
        if d is None and "__dtype__" in node.attrs:
            d = FLAG_DTYPES.get(int(node.attrs["__dtype__"]))
        return None if d is None else d if d == "bfloat16" else np.dtype(d).name

    def infer(node: Node, types: dict) -> bool:
        new_in, outs = node.op.run_infer_type(node.parsed(), _values_in(node, types))
        return _fill(node, new_in, outs, types, None)

    return _propagate(sym, variable, infer)


def infer_type(sym, args: tuple, kwargs: dict, partial: bool = False):
    """``Symbol.infer_type``: (arg_types, out_types, aux_types) as numpy dtype types.

    Unknown types make the result ``(None, None, None)``, or with ``partial`` are None
    entries (``infer_type_partial``)."""
    given = _named_inputs(sym, args, kwargs, "infer_type")
    order, types = propagate_types(sym, given)
    aux = aux_var_ids(order)
    arg_nodes = [n for n in order if n.is_var and id(n) not in aux]
    aux_nodes = [n for n in order if n.is_var and id(n) in aux]
    conv = lambda d: None if d is None else _np_type(d)  # noqa: E731
    arg_t = [conv(types.get((id(n), 0))) for n in arg_nodes]
    aux_t = [conv(types.get((id(n), 0))) for n in aux_nodes]
    out_t = [conv(types.get((id(n), i))) for n, i in sym._outputs]
    if not partial and any(t is None for t in arg_t + aux_t + out_t):
        return None, None, None
    return arg_t, out_t, aux_t


def _np_type(d: str):
    if d == "bfloat16":
        import jax.numpy as jnp

        return jnp.bfloat16
    return np.dtype(d).type
