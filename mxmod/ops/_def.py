"""The operator table: one ``OpDef`` per MXNet operator.

An OpDef holds everything about an operator in one place: its typed attributes,
its input/aux/output names (these make ``fc1_weight``, ``bn0_moving_mean``),
shape and type inference, and the JAX lowering. Symbol constructors, the JSON
loader, shape inference and the executor all read this table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import jax.numpy as jnp
import numpy as np

from ..base import MXNetError
from ..registry import Registry
from ._attrs import REQUIRED, AttrError, Attrs, Param

Shape = Optional[tuple]
OPS = Registry("operator")

# Attributes MXNet accepts on every op but that only steer MXNet's own engine.
HINT_ATTRS = {
    "workspace",
    "cudnn_tune",
    "cudnn_off",
    "cudnn_algo_verbose",
    "cudnn_algo_fwd",
    "cudnn_algo_bwd_data",
    "cudnn_algo_bwd_filter",
    "cudnn_tensor_core",
    "cudnn_tensor_core_only",
}


class ShapeError(MXNetError):
    """Shapes that do not fit an operator."""


def _fmt(shape: Shape) -> str:
    return "unknown" if shape is None else str(tuple(shape))


@dataclass
class LowerCtx:
    """What a lowering may need beyond its arrays."""

    is_train: bool
    node_name: str
    rng: Any = None  # a jax PRNG key for this node (only for random ops)
    out_shapes: Any = None  # inferred output shapes, for ops that need them (``_zeros``)
    # mesh axis name(s) the program's batch is split over (inside ``jax.shard_map``); ops that
    # reduce over the whole batch (SyncBatchNorm) ``psum`` over it. None: one device's data.
    axis_name: Any = None
    # ``lower_subgraph(symbol)``: a control-flow operator's loop body as a function
    # ``(args, aux, key, is_train) -> (outputs, new_aux)`` (given by the executor)
    lower_subgraph: Any = None
    # the executor traces this node's lowering once for every node like it in the graph
    # (``executor/shared_lower.py``); lowerings themselves never read it
    shared: bool = False

    def key(self):
        if self.rng is None:
            raise MXNetError(f"operator {self.node_name!r} needs randomness but got no RNG key")
        return self.rng


@dataclass
class OpDef:
    """One MXNet operator.

    Attributes:
      name: canonical MXNet name (what JSON stores in ``op``).
      params: attribute name -> Param (none by default).
      inputs: input names, or a function of the parsed attrs returning them.
      aux: auxiliary state names (appended after inputs; mutated by the op).
      outputs: visible output names, or a function of attrs.
      num_outputs_total: all outputs incl. hidden (BatchNorm's mean/var), function of attrs.
      infer_shape: ``(attrs, in_shapes) -> (in_shapes, out_shapes)`` over inputs+aux; entries
        may be None when unknown. Return None for outputs it cannot decide yet.
      infer_type: ``(attrs, in_dtypes) -> (in_dtypes, out_dtypes)``; default: all equal.
      lower: ``(attrs, ins, aux, ctx) -> outs`` or ``(outs, new_aux)`` when the op has aux.
      variadic: name of the count attribute for ops taking any number of inputs (``num_args``).
      is_loss: a loss head whose backward ignores the head gradient.
      random: needs an RNG key when training.
      needs_out_shapes: the lowering reads ``ctx.out_shapes`` (shapes only inference knows,
        such as ``_zeros(shape=(0, H))`` whose 0 is filled in by its consumers).
      aux_in_forward: the forward itself writes the aux states, in any mode and whether or
        not a backward pass reaches the node (``Custom``; BatchNorm moves them in backward).
      input_attrs: extra attributes set on auto-created/composed input variables.
      check: ``(attrs) -> problem or None``: checks across attributes that MXNet's attribute
        parser makes when a node is created or loaded (e.g. Pooling's kernel).
      hint: prefix for automatic node names (default: lower-cased function name).
      positional: the order MXNet's generated ``mx.nd``/``mx.sym`` functions take the
        attributes in after the inputs, where it differs from ``params``'.
      signature_inputs: for inputs that depend on attributes, every input MXNet's
        generated functions list (``FullyConnected(data, weight, bias, num_hidden...)``).
    """

    name: str
    lower: Callable
    infer_shape: Callable
    params: dict[str, Param] = field(default_factory=dict)
    inputs: Any = ("data",)
    aux: Any = ()
    outputs: Any = ("output",)
    num_outputs_total: Optional[Callable] = None
    infer_type: Optional[Callable] = None
    variadic: Optional[str] = None
    is_loss: bool = False
    random: bool = False
    needs_out_shapes: bool = False
    aux_in_forward: bool = False
    input_attrs: dict = field(default_factory=dict)
    aliases: Sequence[str] = ()
    check: Optional[Callable] = None
    positional: Optional[Sequence[str]] = None
    signature_inputs: Optional[Sequence[str]] = None

    def parse(self, raw: dict, node: str = "") -> Attrs:
        """Parse a raw attribute dict (strings or Python values) into typed values."""
        out = Attrs()
        for key, value in raw.items():
            if key.startswith("__") and key.endswith("__"):
                continue
            if key in HINT_ATTRS and key not in self.params:
                continue
            if self.variadic and key == self.variadic:
                continue
            p = self.params.get(key)
            if p is None and not self.params:
                continue  # MXNet's operators without parameters ignore (and keep) extra attrs
            if p is None:
                known = ", ".join(sorted(self.params)) or "none"
                raise MXNetError(
                    f"{self.name} {node!r}: unknown attribute {key!r}; "
                    f"valid attributes are: {known}"
                )
            try:
                out[key] = p.parse(value)
            except AttrError as e:
                raise MXNetError(
                    f"{self.name} {node!r}: attribute {key}={value!r} is invalid: {e}"
                ) from None
        for key, p in self.params.items():
            if key not in out:
                if p.default is REQUIRED:
                    raise MXNetError(
                        f"{self.name} {node!r}: required attribute {key!r} is missing; "
                        f"pass {key}=... when creating the operator"
                    )
                out[key] = p.default
        if self.variadic:
            n = raw.get(self.variadic)
            out[self.variadic] = None if n is None else int(n)
        problem = self.check(out) if self.check is not None else None
        if problem:
            raise MXNetError(f"{self.name} {node!r}: {problem}")
        return out

    def input_names(self, a: Attrs) -> list[str]:
        v = self.inputs(a) if callable(self.inputs) else self.inputs
        return list(v)

    def aux_names(self, a: Attrs) -> list[str]:
        v = self.aux(a) if callable(self.aux) else self.aux
        return list(v)

    def output_names(self, a: Attrs) -> list[str]:
        v = self.outputs(a) if callable(self.outputs) else self.outputs
        return list(v)

    def loss_head(self, a: Attrs) -> bool:
        """Whether a node with attributes ``a`` ignores its head gradient (``is_loss``; the
        ``Custom`` op answers per node from its Prop)."""
        return self.is_loss

    def total_outputs(self, a: Attrs) -> int:
        if self.num_outputs_total is not None:
            return self.num_outputs_total(a)
        return len(self.output_names(a))

    def run_infer_shape(
        self, a: Attrs, node: str, shapes: list[Shape]
    ) -> tuple[list[Shape], list[Shape]]:
        """Call ``infer_shape`` and check what it derived against shapes already known."""
        try:
            new_in, outs = self.infer_shape(a, list(shapes))
        except MXNetError as e:
            if str(e).startswith(f"{self.name} {node!r}"):
                raise
            raise ShapeError(f"{self.name} {node!r}: {e}") from None
        names = self.input_names(a) + self.aux_names(a)
        for i, (old, new) in enumerate(zip(shapes, new_in)):
            if old is not None and new is not None and tuple(old) != tuple(new):
                what = names[i] if i < len(names) else f"input {i}"
                ref = names[0] if names else "data"
                raise ShapeError(
                    f"{self.name} {node!r}: {what} given {_fmt(old)} but {ref} {_fmt(shapes[0])} "
                    f"needs {_fmt(new)}"
                )
        merged = [
            tuple(n) if n is not None else (tuple(o) if o is not None else None)
            for o, n in zip(shapes, new_in)
        ]
        return merged, [tuple(o) if o is not None else None for o in outs]

    def run_infer_type(self, a: Attrs, dtypes: list) -> tuple[list, list]:
        if self.infer_type is not None:
            return self.infer_type(a, list(dtypes))
        return same_type(len(self.output_names(a)))(a, list(dtypes))


def positional_attrs(
    op: OpDef, where: str, args: list, kwargs: dict, is_input: Callable, tail: tuple = ()
):
    """MXNet's generated signatures are ``(inputs..., aux..., attributes..., *tail)``, so
    a positional value past the inputs is an attribute (``Dropout(x, 0.5)`` is ``p=0.5``,
    ``swapaxes(x, 0, 2)`` is ``dim1=0, dim2=2``), and past the attributes one of ``tail``
    (``mx.sym``'s ``name, attr, out``: ``BlockGrad(x, 'mask')`` names the node). Ops whose
    inputs depend on attributes (``FullyConnected``) take the values after the leading
    inputs. Returns the inputs and the keyword arguments with those values added."""
    if op.variadic:
        return args, kwargs
    static = isinstance(op.inputs, (list, tuple)) and isinstance(op.aux, (list, tuple))
    if static:
        n_slots = len(op.inputs) + len(op.aux)
    else:
        n_slots = len(op.signature_inputs or ())
    # an input given as None by position (SoftmaxOutput(x, None, 2.0)) is left out, as MXNet
    n_in = next(
        (i for i, a in enumerate(args) if not (is_input(a) or (a is None and i < n_slots))),
        len(args),
    )
    extra = args[n_in:]
    inputs = list(args[:n_in])
    while inputs and inputs[-1] is None:  # FullyConnected(x, w, None, 4, no_bias=True)
        inputs.pop()
    if not extra or any(is_input(a) for a in extra):
        return (inputs if not extra else args), kwargs
    names = list(op.positional or op.params)
    if static and n_in < n_slots:  # MXNet would bind the value to an input
        return args, kwargs
    names += [t for t in tail if t not in names]
    if len(extra) > len(names):
        raise TypeError(
            f"{where} takes at most {len(names)} positional arguments after its inputs "
            f"({', '.join(names) or 'none'}), got {len(extra)}"
        )
    kwargs = dict(kwargs)
    for key, value in zip(names, extra):
        if key in kwargs:
            raise TypeError(f"{where} got multiple values for {key!r}")
        kwargs[key] = value
    return inputs, kwargs


def same_type(n_out: int = 1):
    """Default type rule: every input and output shares the first known dtype."""

    def infer(a: Attrs, dtypes: list) -> tuple[list, list]:
        known = next((d for d in dtypes if d is not None), None)
        if known is None:
            return dtypes, [None] * n_out
        return [known if d is None else d for d in dtypes], [known] * n_out

    return infer


def fail(msg: str) -> None:
    raise ShapeError(msg)


def register(op: OpDef) -> OpDef:
    OPS.register(op.name, op, op.aliases)
    return op


def get_op(name: str) -> OpDef:
    op = OPS.find(name)
    if op is None:
        raise MXNetError(
            f"unknown operator {name!r}; mxmod does not implement it "
            f"(known operators: {len(OPS.names())}, see mxmod.ops.list_ops())"
        )
    return op


def known(shape: Shape) -> bool:
    return shape is not None and all(d > 0 for d in shape)


def np_dtype(d: Any) -> np.dtype:
    if isinstance(d, str) and d == "bfloat16":
        return np.dtype(jnp.bfloat16)
    return np.dtype(d)
