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

import itertools
from typing import Any, Callable

import numpy as np

from . import ndarray as _ndarray  # noqa: F401  (sets the host side of Custom nodes)
from .ops import list_ops
from .ops.custom import PROPS, register_prop
from .symbol.custom import Custom as symbol_custom

__all__ = [
    "CustomOp",
    "CustomOpProp",
    "register",
    "get_all_registered_operators",
    "PythonOp",
    "NumpyOp",
    "NDArrayOp",
]


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


def __getattr__(name: str) -> Any:
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
        register_prop(reg_name, prop_cls)
        return prop_cls

    return do_register


def get_all_registered_operators() -> list:
    """Names of every operator: the built-in table's and the registered custom ones."""
    return sorted(set(list_ops()) | set(PROPS))


# ------------------------------------------------------------------ MXNet's deprecated API
# ``NumpyOp``/``NDArrayOp``: pre-CustomOp Python operators, run as ``CustomOp``s. The op
# instance describes itself (``list_arguments``, ``list_outputs``, ``infer_shape(in_shapes)
# -> (in_shapes, out_shapes)``, ``need_top_grad``) and computes ``forward(in_data,
# out_data)`` / ``backward(out_grad, in_data, out_data, in_grad)`` by writing into its
# output arrays: numpy arrays for ``NumpyOp``, NDArrays for ``NDArrayOp``. Calling the
# instance (``op(data=..., name=...)``) makes the symbol.
_COUNTER = itertools.count()


class PythonOp:
    """Base of the legacy Python operators, as ``mxnet.operator.PythonOp``."""

    _arrays = "numpy"

    def __init__(self, need_top_grad: bool = True):
        self.need_top_grad_ = need_top_grad

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.get_symbol(*args, **kwargs)

    def get_symbol(self, *args: Any, **kwargs: Any) -> Any:
        """The ``Custom`` symbol computing this op on ``args``/``kwargs`` inputs."""
        op_type = f"_legacy_{type(self).__name__}_{next(_COUNTER)}"
        register(op_type)(_prop_class(self))
        return symbol_custom(*args, op_type=op_type, **kwargs)

    def list_arguments(self) -> list:
        return ["data"]

    def list_outputs(self) -> list:
        return ["output"]

    def infer_shape(self, in_shape: list) -> tuple:
        return in_shape, [in_shape[0]]

    def need_top_grad(self) -> bool:
        return self.need_top_grad_

    def forward(self, in_data: list, out_data: list) -> None:
        """Write the outputs into ``out_data`` (override)."""

    def backward(self, out_grad: list, in_data: list, out_data: list, in_grad: list) -> None:
        """Write the input gradients into ``in_grad`` (override)."""


class NumpyOp(PythonOp):
    """A legacy operator computing on numpy arrays, as ``mxnet.operator.NumpyOp``."""


class NDArrayOp(PythonOp):
    """A legacy operator computing on NDArrays, as ``mxnet.operator.NDArrayOp``."""

    _arrays = "ndarray"

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        deps = list(out_grad) if self.need_top_grad_ else []
        return deps + list(in_data) + list(out_data)


def _prop_class(op: PythonOp) -> type:
    def to_host(arrays):
        if op._arrays == "ndarray":
            return list(arrays)
        return [a.asnumpy() for a in arrays]

    class _Op(CustomOp):
        def _run(self, outs, reqs, call):
            host = [np.zeros(o.shape, o.dtype) for o in outs] if op._arrays == "numpy" else outs
            call(host)
            if op._arrays == "numpy":
                for dst, req, src in zip(outs, reqs, host):
                    self.assign(dst, req, src)

        def forward(self, is_train, req, in_data, out_data, aux):
            self._run(out_data, req, lambda outs: op.forward(to_host(in_data), outs))

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            grads, ins, outs = to_host(out_grad), to_host(in_data), to_host(out_data)
            self._run(in_grad, req, lambda g: op.backward(grads, ins, outs, g))

    class _Prop(CustomOpProp):
        def __init__(self, **_attrs):
            super().__init__(need_top_grad=op.need_top_grad())

        def list_arguments(self):
            return op.list_arguments()

        def list_outputs(self):
            return op.list_outputs()

        def infer_shape(self, in_shape):
            ins, outs = op.infer_shape(in_shape)[:2]
            return ins, outs, []

        def create_operator(self, ctx, shapes, dtypes):
            return _Op()

    return _Prop
