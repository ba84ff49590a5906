"""``Custom``: MXNet's operator for Python code registered with ``mx.operator.register``.

The node's attributes are ``op_type`` plus the user's keyword arguments as strings (as
MXNet writes them to JSON); they select a ``CustomOpProp`` instance that gives the
argument/output/aux names, shape and type inference and the backward dependencies.

The lowering runs the user's ``forward``/``backward`` as host callbacks
(``jax.pure_callback``) under a ``jax.custom_vjp``: forward returns the outputs and the
aux states the user's code may have written (the op's new aux values, like BatchNorm's
moving statistics), backward returns the input gradients. Aux states get no gradient.

Two tables connect this operator to the layers above it, which fill them at their import:
``PROPS`` maps a name to the ``CustomOpProp`` class given to ``mx.operator.register``, and
``HOST_CALLS`` holds ``'forward'``/``'backward'``, the functions that run the user's
``CustomOp`` on NDArrays (set by ``mxmod.ndarray.custom``).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from ..base import DTYPE_FLAGS, MXNetError
from ..context import cpu
from ._attrs import Attrs
from ._def import OpDef, register

#: Registered ``CustomOpProp`` classes by name (filled by ``mx.operator.register``).
PROPS: dict[str, type] = {}
_INSTANCES: dict[tuple, Any] = {}
#: ``'forward'``/``'backward'``: run the user's ``CustomOp`` on host arrays (signatures of
#: ``mxmod.ndarray.custom.run_forward``/``run_backward``, which sets them at its import).
HOST_CALLS: dict[str, Callable] = {}


def register_prop(reg_name: str, prop_cls: type) -> None:
    """Record ``prop_cls`` under ``reg_name``; replacing a name logs a warning, as MXNet."""
    if reg_name in PROPS and PROPS[reg_name] is not prop_cls:
        logging.warning("New registration is overriding existing custom operator %s", reg_name)
    PROPS[reg_name] = prop_cls


def get_prop(op_type: str, kwargs: tuple) -> Any:
    """The ``CustomOpProp`` instance for ``op_type`` and its string kwargs (cached).

    Raises:
      MXNetError: if ``op_type`` is not registered or the constructor rejects the kwargs.
    """
    cls = PROPS.get(op_type)
    if cls is None:
        known = ", ".join(sorted(PROPS)) or "none yet"
        raise MXNetError(
            f"Cannot find custom operator {op_type!r}: register its CustomOpProp with "
            f"@mx.operator.register({op_type!r}) first (registered: {known})"
        )
    key = (op_type, cls, kwargs)
    prop = _INSTANCES.get(key)
    if prop is None:
        try:
            prop = cls(**dict(kwargs))
        except TypeError as e:
            given = ", ".join(f"{k}={v!r}" for k, v in kwargs)
            raise MXNetError(
                f"custom operator {op_type!r}: {cls.__name__}({given}) failed: "
                f"{e}; the extra keyword arguments of Custom go to the CustomOpProp "
                "constructor as strings"
            ) from None
        _INSTANCES[key] = prop
    return prop


def attr_value(key: str, value: Any) -> str:
    """A keyword argument of ``Custom`` as the string its Prop receives (dtypes by name)."""
    if key == "dtype" and not isinstance(value, str):
        return np.dtype(value).name
    return value if isinstance(value, str) else str(value)


class CustomOpDef(OpDef):
    """The ``Custom`` operator: names, inference and lowering come from the user's Prop."""

    def parse(self, raw: dict, node: str = "") -> Attrs:
        kwargs, op_type = {}, None
        for key, value in raw.items():
            if key.startswith("__") and key.endswith("__"):
                continue  # scope attributes (ctx_group, lr_mult...) are not Prop kwargs
            if key == "op_type":
                op_type = str(value)
            else:
                kwargs[key] = value if isinstance(value, str) else str(value)
        if op_type is None:
            raise MXNetError(
                f"Custom {node!r}: required attribute 'op_type' is missing; pass "
                "op_type=<the name given to @mx.operator.register>"
            )
        kw = tuple(sorted(kwargs.items()))
        try:
            prop = get_prop(op_type, kw)
        except MXNetError as e:
            raise MXNetError(f"Custom {node!r}: {e}") from None
        a = Attrs(op_type=op_type, kwargs=kw, prop=prop)
        a["arguments"] = _names(prop.list_arguments(), op_type, "list_arguments")
        a["outputs"] = _names(prop.list_outputs(), op_type, "list_outputs")
        a["aux"] = _names(prop.list_auxiliary_states(), op_type, "list_auxiliary_states")
        a["deps"] = _deps(prop, a)
        return a

    def input_names(self, a: Attrs) -> list[str]:
        return list(a.arguments)

    def aux_names(self, a: Attrs) -> list[str]:
        return list(a.aux)

    def output_names(self, a: Attrs) -> list[str]:
        return list(a.outputs)

    def loss_head(self, a: Attrs) -> bool:
        """Whether the backward ignores the head gradient (no ``out_grad`` dependency)."""
        return not any(i < len(a.outputs) for i in a.deps)

    def for_attrs(self, a: Attrs) -> "CustomOpDef":
        """This op with ``is_loss`` set for one Prop (what executors read per node)."""
        return dataclasses.replace(self, is_loss=self.loss_head(a))


def _names(value: Any, op_type: str, method: str) -> tuple:
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise MXNetError(
            f"custom operator {op_type!r}: {method}() must return a list of strings, got {value!r}"
        )
    return tuple(value)


def _deps(prop, a: Attrs) -> frozenset:
    n_out, n_arg = len(a.outputs), len(a.arguments)
    out_grad = list(range(n_out))
    in_data = list(range(n_out, n_out + n_arg))
    out_data = list(range(n_out + n_arg, 2 * n_out + n_arg))
    deps = prop.declare_backward_dependency(out_grad, in_data, out_data)
    try:
        ids = frozenset(int(d) for d in deps)
    except (TypeError, ValueError):
        ids = None
    if ids is None or any(not 0 <= d < 2 * n_out + n_arg for d in ids):
        raise MXNetError(
            f"custom operator {a.op_type!r}: declare_backward_dependency() must "
            f"return ids taken from its out_grad, in_data and out_data lists, got "
            f"{deps!r}"
        )
    return ids


# ------------------------------------------------------------------ inference
def _split(ret: Any, a: Attrs, method: str, what: str) -> tuple[list, list, list]:
    """Check a Prop's ``(in, out[, aux])`` answer against its declared names."""
    if not isinstance(ret, (list, tuple)) or len(ret) not in (2, 3):
        raise MXNetError(
            f"custom operator {a.op_type!r}: {method} must return 2 or 3 lists "
            f"(inputs, outputs[, aux]), got {ret!r}"
        )
    parts = [list(ret[0]), list(ret[1]), list(ret[2]) if len(ret) == 3 else []]
    for part, names, kind, lister in zip(
        parts,
        (a.arguments, a.outputs, a.aux),
        ("input", "output", "aux state"),
        ("list_arguments", "list_outputs", "list_auxiliary_states"),
    ):
        if len(part) != len(names):
            raise MXNetError(
                f"custom operator {a.op_type!r}: {method} returned {len(part)} "
                f"{kind} {what} but {lister}() names {len(names)} ({list(names)}); "
                "return one per name"
            )
    return parts[0], parts[1], parts[2]


def _ask_prop(a: Attrs, method: str, given: list, complete: bool, what: str):
    """The Prop's ``(ins, outs, aux)`` from ``method(given)``; None while an error of the
    user's code may come from inputs not known yet (``complete`` False)."""
    try:
        ret = getattr(a.prop, method)(given)
    except Exception as e:
        if not complete:
            return None
        raise MXNetError(
            f"custom operator {a.op_type!r}: {type(a.prop).__name__}.{method}"
            f"({given}) raised {type(e).__name__}: {e}"
        ) from e
    return _split(ret, a, method, what)


def _shape(s: Any) -> Any:
    shape = tuple(int(d) for d in s)
    return shape if shape and all(d > 0 for d in shape) else None


def _infer_shape(a: Attrs, shapes: list) -> tuple[list, list]:
    n_arg = len(a.arguments)
    given = [list(s) if s is not None else [] for s in shapes[:n_arg]]
    complete = all(s is not None for s in shapes[:n_arg])
    parts = _ask_prop(a, "infer_shape", given, complete, "shapes")
    if parts is None:
        return list(shapes), [None] * len(a.outputs)
    ins, outs, aux = parts
    return [_shape(s) for s in ins + aux], [_shape(s) for s in outs]


def np_type(d: Any) -> Any:
    if d is None:
        return None
    return jnp.bfloat16 if d == "bfloat16" else np.dtype(d).type


def _type_name(t: Any) -> Any:
    if t is None:
        return None
    return "bfloat16" if t == jnp.bfloat16 else np.dtype(t).name


def _infer_type(a: Attrs, dtypes: list) -> tuple[list, list]:
    n_arg = len(a.arguments)
    given = [np_type(d) for d in dtypes[:n_arg]]
    parts = _ask_prop(a, "infer_type", given, all(d is not None for d in given), "types")
    if parts is None:
        return list(dtypes), [None] * len(a.outputs)
    ins, outs, aux = parts
    try:
        return [_type_name(t) for t in ins + aux], [_type_name(t) for t in outs]
    except TypeError:
        raise MXNetError(
            f"custom operator {a.op_type!r}: infer_type must return numpy types "
            f"such as numpy.float32, got {parts!r}"
        ) from None


def signature(a: Attrs, shapes: list, dtypes: list) -> tuple[list, list]:
    """Output ``(shapes, dtype names)`` for fully known input shapes and dtype names.

    Raises:
      MXNetError: if the Prop's inference leaves an output undecided or contradicts the inputs.
    """
    new_in, out_shapes = _infer_shape(a, list(shapes))
    names = list(a.arguments) + list(a.aux)
    for name, old, new in zip(names, shapes, new_in):
        if new is not None and tuple(new) != tuple(old):
            raise MXNetError(
                f"custom operator {a.op_type!r}: {name} has shape {tuple(old)} but "
                f"infer_shape expects {tuple(new)}"
            )
    _, out_types = _infer_type(a, list(dtypes))
    if any(s is None for s in out_shapes) or any(t is None for t in out_types):
        raise MXNetError(
            f"custom operator {a.op_type!r}: infer_shape/infer_type left output "
            f"shapes {out_shapes} / types {out_types} undecided for input shapes "
            f"{[tuple(s) for s in shapes]}"
        )
    return [tuple(s) for s in out_shapes], out_types


def create_operator(a: Attrs, shapes: list, dtypes: list):
    """Call the Prop's ``create_operator`` as MXNet does (shape lists, MXNet type codes)."""
    flags = [DTYPE_FLAGS.get(d, -1) for d in dtypes]
    return a.prop.create_operator(cpu(0), [list(s) for s in shapes], flags)


def bound_operator(a: Attrs, shapes: list, dtypes: list):
    """The node's ``CustomOp`` for these input shapes and dtypes, created once.

    MXNet creates a node's operator once, when the executor is bound, outside any graph,
    and calls that one object's forward and backward from then on. Here every program
    that traces the node (forward, forward-backward, shape checks) shares the object
    kept on the node's parsed attributes (``a``), and it is created with tracing
    suspended, so NDArrays its ``__init__`` builds hold concrete values usable in
    ``forward``/``backward``. Executors bound to the same symbol with the same shapes
    share it.
    """
    made = a.__dict__.setdefault("bound_operators", {})
    key = (tuple(tuple(s) for s in shapes), tuple(dtypes))
    if key not in made:
        with jax.ensure_compile_time_eval():
            made[key] = create_operator(a, shapes, dtypes)
    return made[key]


# ------------------------------------------------------------------ lowering
def _lower(a: Attrs, ins: list, aux: list, ctx) -> Any:
    arrays = list(ins) + list(aux)
    shapes = [tuple(x.shape) for x in arrays]
    dtypes = [_type_name(x.dtype) for x in arrays]
    out_shapes, out_types = signature(a, shapes, dtypes)
    op = bound_operator(a, shapes, dtypes)
    label = f"{a.op_type!r} ({ctx.node_name})"
    out_specs = [jax.ShapeDtypeStruct(s, np_type(t)) for s, t in zip(out_shapes, out_types)]
    aux_specs = [jax.ShapeDtypeStruct(x.shape, x.dtype) for x in aux]
    in_specs = [jax.ShapeDtypeStruct(x.shape, x.dtype) for x in ins]
    n_out, n_arg, deps = len(out_specs), len(ins), a.deps
    is_train = bool(ctx.is_train)

    run_forward, run_backward = HOST_CALLS["forward"], HOST_CALLS["backward"]

    def host_forward(*host):
        return run_forward(op, label, is_train, host[:n_arg], host[n_arg:], out_specs)

    def host_backward(*host):
        it = iter(host)
        out_grad = [next(it) if i in deps else None for i in range(n_out)]
        in_data = [next(it) if n_out + i in deps else None for i in range(n_arg)]
        out_data = [next(it) if n_out + n_arg + i in deps else None for i in range(n_out)]
        return run_backward(op, label, out_grad, in_data, out_data, list(it), in_specs)

    def forward(xs, auxs):
        return jax.pure_callback(host_forward, (out_specs, aux_specs), *xs, *auxs)

    @jax.custom_vjp
    def apply(xs, auxs):
        return forward(xs, auxs)

    def apply_fwd(xs, auxs):
        outs, new_aux = forward(xs, auxs)
        kept_in = [x if n_out + i in deps else None for i, x in enumerate(xs)]
        kept_out = [o if n_out + n_arg + i in deps else None for i, o in enumerate(outs)]
        return (outs, new_aux), (kept_in, kept_out, new_aux)

    def apply_bwd(res, cts):
        kept_in, kept_out, new_aux = res
        out_cts, _ = cts
        args = [c for i, c in enumerate(out_cts) if i in deps]
        args += [x for x in kept_in if x is not None] + [o for o in kept_out if o is not None]
        grads = jax.pure_callback(host_backward, in_specs, *args, *new_aux)
        grads = [
            g if jnp.issubdtype(s.dtype, jnp.inexact) else np.zeros(s.shape, jax.dtypes.float0)
            for g, s in zip(grads, in_specs)
        ]
        return grads, [jnp.zeros_like(v) for v in new_aux]

    apply.defvjp(apply_fwd, apply_bwd)
    outs, new_aux = apply(list(ins), list(aux))
    return (list(outs), list(new_aux)) if aux else list(outs)


CUSTOM = register(
    CustomOpDef(
        name="Custom",
        params={},
        lower=_lower,
        infer_shape=_infer_shape,
        infer_type=_infer_type,
        inputs=(),
        outputs=(),
        aux_in_forward=True,
    )
)
