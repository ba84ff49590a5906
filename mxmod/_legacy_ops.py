"""``mx.operator.NumpyOp``/``NDArrayOp``: MXNet's deprecated pre-CustomOp Python operators,
run as ``CustomOp``s.

The op instance describes itself (``list_arguments``, ``list_outputs``,
``infer_shape(in_shapes) -> (in_shapes, out_shapes)``, ``need_top_grad``) and computes
``forward(in_data, out_data)`` / ``backward(out_grad, in_data, out_data, in_grad)`` by
writing into its output arrays: numpy arrays for ``NumpyOp``, NDArrays for ``NDArrayOp``.
Calling the instance (``op(data=..., name=...)``) makes the symbol.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

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
        from . import operator, symbol

        op_type = f"_legacy_{type(self).__name__}_{next(_COUNTER)}"
        operator.register(op_type)(_prop_class(self))
        return symbol.Custom(*args, op_type=op_type, **kwargs)

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
    from . import operator

    def to_host(arrays):
        if op._arrays == "ndarray":
            return list(arrays)
        return [a.asnumpy() for a in arrays]

    class _Op(operator.CustomOp):
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

    class _Prop(operator.CustomOpProp):
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
