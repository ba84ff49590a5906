"""``mx.operator``: operators written in Python (``CustomOp``, ``CustomOpProp``, ``register``).

The MXNet 1.9.1 custom-operator API. A ``CustomOpProp`` subclass registered under a
name describes the operator (argument/output/aux names, shape and type inference,
backward dependencies) and creates the ``CustomOp`` that computes it;
``mx.sym.Custom(..., op_type=name)`` and ``mx.nd.Custom`` use it.

How mxmod runs it (see ``mxmod/ops/README.md``): the symbol node is an ordinary
operator of the table (``mxmod.ops.custom``); inside a compiled program its forward and
backward are host callbacks (``jax.pure_callback``) under a ``jax.custom_vjp``. The
user's code gets NDArrays on ``cpu(0)`` holding copies of the device values, and what
it writes into ``out_data``/``in_grad``/``aux`` is copied back. Each call is therefore a
device -> host -> device round trip that XLA cannot fuse or overlap.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

import numpy as np

from .base import MXNetError
from .context import cpu

__all__ = ["CustomOp", "CustomOpProp", "register", "get_all_registered_operators"]

_PROPS: dict[str, type] = {}
_INSTANCES: dict[tuple, "CustomOpProp"] = {}


class CustomOp:
    """Base class of the computation of a Python operator (MXNet's ``mx.operator.CustomOp``).

    Override ``forward`` (and ``backward`` for training). In mxmod both run on the
    host with NDArrays on ``cpu(0)``; write results with :meth:`assign` or ``dst[:] =``.
    Gradients that ``backward`` leaves unwritten are zero (MXNet leaves them undefined).
    """

    def forward(self, is_train: bool, req: list, in_data: list, out_data: list, aux: list) -> None:
        """Compute ``out_data`` (and optionally update ``aux``) from ``in_data``.

        Args:
          is_train: whether the program is a training pass.
          req: per output, how to write it: ``'null'``, ``'write'``, ``'inplace'``, ``'add'``.
          in_data: the inputs, in ``list_arguments()`` order.
          out_data: the outputs to fill, in ``list_outputs()`` order.
          aux: the auxiliary states (writable), in ``list_auxiliary_states()`` order.

        Raises:
          NotImplementedError: always; a subclass must override it.
        """
        raise NotImplementedError(
            f"{type(self).__name__} must override CustomOp.forward(is_train, "
            "req, in_data, out_data, aux)"
        )

    def backward(
        self, req: list, out_grad: list, in_data: list, out_data: list, in_grad: list, aux: list
    ) -> None:
        """Compute ``in_grad`` from ``out_grad``; the default leaves every gradient at zero.

        Arrays that ``CustomOpProp.declare_backward_dependency`` did not declare are empty
        (shape ``(0,)``), as MXNet passes them unallocated.
        """
        for dst, r in zip(in_grad, req):
            self.assign(dst, r, np.zeros(dst.shape, dst.dtype))

    def assign(self, dst: Any, req: str, src: Any) -> None:
        """Write ``src`` into ``dst`` according to ``req`` (MXNet's ``CustomOp.assign``).

        Raises:
          ValueError: for a ``req`` other than ``'null'``, ``'write'``, ``'inplace'``, ``'add'``.
        """
        if req == "null":
            return
        if req in ("write", "inplace"):
            dst[:] = src
        elif req == "add":
            dst[:] += src
        else:
            raise ValueError(
                f"CustomOp.assign: unknown req {req!r}; use 'null', 'write', 'inplace' or 'add'"
            )


class CustomOpProp:
    """Base class describing a Python operator (MXNet's ``mx.operator.CustomOpProp``).

    A subclass is registered with ``@mx.operator.register(name)``; its constructor gets
    the extra keyword arguments of ``mx.sym.Custom`` as strings (what MXNet stores in
    the symbol JSON).

    Args:
      need_top_grad: whether ``backward`` reads the head gradient (``out_grad``). An
        operator that does not (a loss such as a softmax with its label) is a loss head:
        ``Module.backward()`` needs no ``out_grads`` for it.
    """

    def __init__(self, need_top_grad: bool = True):
        self.need_top_grad_ = need_top_grad

    def infer_shape(self, in_shape: list) -> tuple:
        """``(in_shapes, out_shapes, aux_shapes)`` from the argument shapes (lists of ints;
        ``[]`` for one not known yet). Default: every output has the first input's shape."""
        return in_shape, (in_shape[0],) * len(self.list_outputs()), ()

    def infer_type(self, in_type: list) -> tuple:
        """``(in_types, out_types, aux_types)`` as numpy types (``None`` while unknown).
        Default: everything has the first input's type."""
        return (
            in_type,
            [in_type[0]] * len(self.list_outputs()),
            [in_type[0]] * len(self.list_auxiliary_states()),
        )

    def infer_storage_type(self, in_stype: list) -> tuple:
        """Storage types: mxmod has dense storage only.

        Raises:
          NotImplementedError: for any storage type other than ``'default'``.
        """
        _dense_only(in_stype, "infer_storage_type")
        n_out, n_aux = len(self.list_outputs()), len(self.list_auxiliary_states())
        return in_stype, ["default"] * n_out, ["default"] * n_aux

    def infer_storage_type_backward(
        self, ograd_stype, in_stype, out_stype, igrad_stype, aux_stype
    ) -> tuple:
        """Backward storage types: all dense (see :meth:`infer_storage_type`)."""
        lists = [ograd_stype, in_stype, out_stype, igrad_stype, aux_stype]
        for stypes in lists:
            _dense_only([s for s in stypes if s != "undefined"], "infer_storage_type_backward")
        return tuple(["default"] * len(s) for s in lists)

    def list_outputs(self) -> list:
        """Output names (suffixes of the node name). Default ``['output']``."""
        return ["output"]

    def list_arguments(self) -> list:
        """Input names, in the order ``forward`` receives them. Default ``['data']``."""
        return ["data"]

    def list_auxiliary_states(self) -> list:
        """Auxiliary state names (inputs after the arguments). Default none."""
        return []

    def declare_backward_dependency(self, out_grad: list, in_data: list, out_data: list) -> list:
        """Ids (among ``out_grad``, ``in_data``, ``out_data``) that ``backward`` reads. Default:
        all of them, minus ``out_grad`` when ``need_top_grad`` is False. In mxmod the
        undeclared ones are neither kept for the backward pass nor passed to it."""
        deps = list(out_grad) if self.need_top_grad_ else []
        return deps + list(in_data) + list(out_data)

    def create_operator(self, ctx: Any, in_shapes: list, in_dtypes: list) -> CustomOp:
        """The ``CustomOp`` for these input shapes (lists) and dtypes (MXNet type codes).
        mxmod calls it once per compiled program (trace), with ``ctx`` = ``cpu(0)``
        where the host code runs."""
        return CustomOp()


_LEGACY = {"PythonOp", "NumpyOp", "NDArrayOp"}


def __getattr__(name: str) -> Any:
    if name in _LEGACY:  # MXNet's deprecated pre-CustomOp API, run as CustomOps
        from . import _legacy_ops

        return getattr(_legacy_ops, name)
    if name == "get_operator_arguments":
        raise NotImplementedError(
            "mx.operator.get_operator_arguments (MXNet's C operator "
            "signatures) is not supported by mxmod; mxmod.ops.get_op(name)."
            "params lists an operator's attributes"
        )
    raise AttributeError(f"module 'mxmod.operator' has no attribute {name!r}")


def _dense_only(stypes: list, where: str) -> None:
    for s in stypes:
        if s != "default":
            raise NotImplementedError(
                f"CustomOpProp.{where}: storage type {s!r} (sparse "
                "storage) is not supported by mxmod; custom operators use "
                "dense arrays"
            )


def register(reg_name: str) -> Callable[[type], type]:
    """Register a ``CustomOpProp`` subclass under ``reg_name`` (MXNet's ``mx.operator.register``).

    Use as a decorator; ``mx.sym.Custom(..., op_type=reg_name)`` then builds the operator.
    Registering a taken name replaces it and logs a warning, as MXNet does.

    Raises:
      TypeError: if the name is not a string or the class is not a ``CustomOpProp`` subclass.
    """
    if not isinstance(reg_name, str) or not reg_name:
        raise TypeError(
            f"mx.operator.register needs the operator name as a non-empty string, "
            f"got {reg_name!r}; use @mx.operator.register('my_op')"
        )

    def do_register(prop_cls: type) -> type:
        if not (isinstance(prop_cls, type) and issubclass(prop_cls, CustomOpProp)):
            raise TypeError(
                f"mx.operator.register({reg_name!r}) decorates a subclass of "
                f"mx.operator.CustomOpProp, got {prop_cls!r}"
            )
        if reg_name in _PROPS and _PROPS[reg_name] is not prop_cls:
            logging.warning("New registration is overriding existing custom operator %s", reg_name)
        _PROPS[reg_name] = prop_cls
        return prop_cls

    return do_register


def get_all_registered_operators() -> list:
    """Names of every operator: the built-in table's and the registered custom ones."""
    from .ops import list_ops

    return sorted(set(list_ops()) | set(_PROPS))


def get_prop(op_type: str, kwargs: tuple) -> CustomOpProp:
    """The ``CustomOpProp`` instance for ``op_type`` and its string kwargs (cached).

    Raises:
      MXNetError: if ``op_type`` is not registered or the constructor rejects the kwargs.
    """
    cls = _PROPS.get(op_type)
    if cls is None:
        known = ", ".join(sorted(_PROPS)) or "none yet"
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
            raise MXNetError(
                f"custom operator {op_type!r}: {cls.__name__}({_kw(kwargs)}) failed: "
                f"{e}; the extra keyword arguments of Custom go to the CustomOpProp "
                "constructor as strings"
            ) from None
        _INSTANCES[key] = prop
    return prop


def _kw(kwargs: tuple) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in kwargs)


# ------------------------------------------------------------------ running user code on the host
def _host_arrays(values: list, ctx) -> list:
    """NDArrays on ``ctx`` holding ``values`` (host arrays), placed in one transfer."""
    import jax
    from .ndarray import NDArray

    host = [np.asarray(v) for v in values]
    host = [h.astype(jax.dtypes.canonicalize_dtype(h.dtype), copy=False) for h in host]
    return [NDArray(a, ctx) for a in jax.device_put(host, ctx.jax_device)]


def _read_back(arrays: list, specs: list, label: str, what: str) -> list:
    out = []
    for i, (arr, spec) in enumerate(zip(arrays, specs)):
        value = arr.asnumpy() if hasattr(arr, "asnumpy") else np.asarray(arr)
        if tuple(value.shape) != tuple(spec.shape):
            raise MXNetError(
                f"custom operator {label}: {what}[{i}] has shape {value.shape} after "
                f"the call but must keep shape {tuple(spec.shape)}"
            )
        out.append(value.astype(spec.dtype, copy=False))
    return out


def run_forward(
    op: CustomOp, label: str, is_train: bool, ins: list, aux: list, out_specs: list
) -> tuple[list, list]:
    """Call ``op.forward`` on host copies; return the outputs and the aux states after it."""
    ctx = cpu(0)
    n_in, n_aux = len(ins), len(aux)
    arrays = _host_arrays([*ins, *aux, *(np.zeros(s.shape, s.dtype) for s in out_specs)], ctx)
    in_data, aux_data, out_data = arrays[:n_in], arrays[n_in : n_in + n_aux], arrays[n_in + n_aux :]
    try:
        with ctx:
            op.forward(
                is_train=is_train,
                req=["write"] * len(out_data),
                in_data=in_data,
                out_data=out_data,
                aux=aux_data,
            )
    except Exception as e:
        raise MXNetError(f"custom operator {label}: forward raised {type(e).__name__}: {e}") from e
    aux_specs = [np.asarray(a) for a in aux]
    return (
        _read_back(out_data, out_specs, label, "out_data"),
        _read_back(aux_data, aux_specs, label, "aux"),
    )


def run_backward(
    op: CustomOp,
    label: str,
    out_grad: list,
    in_data: list,
    out_data: list,
    aux: list,
    in_specs: list,
) -> list:
    """Call ``op.backward`` on host copies (``None``: not a declared dependency, passed
    empty); return the input gradients."""
    ctx = cpu(0)
    empty = np.zeros((0,), np.float32)  # an undeclared dependency, as MXNet's empty NDArray
    groups = [[empty if v is None else v for v in g] for g in (out_grad, in_data, out_data, aux)]
    groups.append([np.zeros(s.shape, s.dtype) for s in in_specs])
    arrays = iter(_host_arrays([v for g in groups for v in g], ctx))
    og, ind, outd, aux_data, in_grad = ([next(arrays) for _ in g] for g in groups)
    try:
        with ctx:
            op.backward(
                req=["write"] * len(in_grad),
                out_grad=og,
                in_data=ind,
                out_data=outd,
                in_grad=in_grad,
                aux=aux_data,
            )
    except Exception as e:
        raise MXNetError(f"custom operator {label}: backward raised {type(e).__name__}: {e}") from e
    return _read_back(in_grad, in_specs, label, "in_grad")


# ------------------------------------------------------------------ mx.sym.Custom / mx.nd.Custom
def _attr_value(key: str, value: Any) -> str:
    if key == "dtype" and not isinstance(value, str):
        return np.dtype(value).name
    return value if isinstance(value, str) else str(value)


def symbol_custom(
    *data: Any,
    op_type: str | None = None,
    name: str | None = None,
    attr: dict | None = None,
    **kwargs: Any,
):
    """``mx.sym.Custom``: a node running the registered Python operator ``op_type``.

    Inputs are given positionally or by the names of ``list_arguments()`` /
    ``list_auxiliary_states()`` (missing ones become variables ``<name>_<input>``); other
    keyword arguments reach the ``CustomOpProp`` constructor as strings.

    Raises:
      MXNetError: if ``op_type`` is missing or not registered.
    """
    from .symbol import Symbol
    from .symbol.creation import make_op

    if op_type is None:
        raise MXNetError("mx.sym.Custom needs op_type=<the name given to @mx.operator.register>")
    kw = {k: v if isinstance(v, Symbol) else _attr_value(k, v) for k, v in kwargs.items()}
    sym = make_op("Custom", list(data), {"op_type": op_type, **kw}, name=name, attr=attr)
    node = sym._outputs[0][0]
    node.op = node.op.for_attrs(node.parsed())
    return sym


def nd_custom(
    *data: Any, op_type: str | None = None, out: Any = None, name: str | None = None, **kwargs: Any
):
    """``mx.nd.Custom``: run the registered Python operator ``op_type`` on NDArrays now.

    Inputs are the arguments then the aux states (positionally or by name); the user's
    ``forward`` runs with ``is_train=False`` (mxmod has no ``autograd.record``) and
    writes the aux NDArrays in place, as in MXNet.

    Raises:
      MXNetError: if ``op_type`` is missing or unknown, or an input is missing.
      TypeError: if an input is not an NDArray.
    """
    from .ndarray import NDArray
    from .ops import get_op
    from .ops.custom import create_operator, np_type, signature

    if op_type is None:
        raise MXNetError("mx.nd.Custom needs op_type=<the name given to @mx.operator.register>")
    named = {k: v for k, v in kwargs.items() if isinstance(v, (NDArray, np.ndarray))}
    raw = {k: _attr_value(k, v) for k, v in kwargs.items() if k not in named}
    a = get_op("Custom").parse({"op_type": op_type, **raw}, name or "Custom")
    slots = list(a.arguments) + list(a.aux)
    if len(data) > len(slots):
        raise MXNetError(
            f"mx.nd.Custom {op_type!r} takes {len(slots)} inputs "
            f"({', '.join(slots)}), got {len(data)}"
        )
    unknown = sorted(set(named) - set(slots))
    if unknown:
        raise MXNetError(
            f"mx.nd.Custom {op_type!r}: no input named {unknown[0]!r}; its inputs "
            f"are {', '.join(slots)}"
        )
    arrays = []
    for i, slot in enumerate(slots):
        x = data[i] if i < len(data) else named.get(slot)
        if x is None:
            raise MXNetError(
                f"mx.nd.Custom {op_type!r} needs input {slot!r} (inputs: {', '.join(slots)})"
            )
        if not isinstance(x, NDArray):
            raise TypeError(
                f"mx.nd.Custom {op_type!r}: input {slot!r} must be an NDArray, got "
                f"{type(x).__name__}; wrap it with mx.nd.array()"
            )
        arrays.append(x)
    shapes = [x.shape for x in arrays]
    dtypes = [np.dtype(x.dtype).name for x in arrays]
    out_shapes, out_types = signature(a, shapes, dtypes)
    op = create_operator(a, shapes, dtypes)
    ctx = arrays[0].context if arrays else cpu(0)
    outs = [NDArray(np.zeros(s, np_type(t)), ctx) for s, t in zip(out_shapes, out_types)]
    n_arg = len(a.arguments)
    with ctx:
        op.forward(
            is_train=False,
            req=["write"] * len(outs),
            in_data=arrays[:n_arg],
            out_data=outs,
            aux=arrays[n_arg:],
        )
    if out is not None:
        targets = out if isinstance(out, (list, tuple)) else [out]
        for t, o in zip(targets, outs):
            t[:] = o
        return out
    return outs[0] if len(outs) == 1 else outs
