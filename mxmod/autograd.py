"""``mx.autograd``: MXNet's imperative gradients for NDArrays (the tape: ``ndarray/tape.py``).

``attach_grad()`` marks variables; operators run inside ``record()`` are recorded;
``y.backward()`` (or ``backward([heads])``) writes the gradients into each variable's
``.grad``; ``grad()`` returns them instead. ``record()``/``train_mode()`` also switch
imperative operators to training mode (Dropout, BatchNorm), ``pause()``/``predict_mode()``
back. ``Function`` defines an operator with a hand-written backward. Custom operators
written for MXNet use this inside their ``forward``/``backward``; whole networks train
compiled through ``mx.mod.Module``.
"""

from __future__ import annotations

from typing import Any

import jax

from .base import MXNetError
from .ndarray import NDArray, array, tape  # noqa: F401 (star-import names, as MXNet)
from .symbol import Symbol  # noqa: F401

# no __all__, as MXNet's module: ``from mxnet.autograd import *`` also gives NDArray

is_recording = tape.is_recording
is_training = tape.is_training
set_recording = tape.set_recording
set_training = tape.set_training


def record(train_mode: bool = True):  # noqa: A002 (MXNet's parameter name)
    """Scope that records operators for ``backward`` (in training mode by default)."""
    return tape.scope(True, train_mode)


def pause(train_mode: bool = False):  # noqa: A002
    """Scope that records nothing (in inference mode by default)."""
    return tape.scope(False, train_mode)


def train_mode():
    """Scope running operators in training mode (recording unchanged)."""
    return tape.scope(None, True)


def predict_mode():
    """Scope running operators in inference mode (recording unchanged)."""
    return tape.scope(None, False)


def mark_variables(variables: Any, gradients: Any, grad_reqs: Any = "write") -> None:
    """Mark ``variables`` so that ``backward`` writes their gradients into ``gradients``."""
    if isinstance(variables, NDArray):
        variables, gradients = [variables], [gradients]
    variables, gradients = list(variables), list(gradients)
    if len(variables) != len(gradients):
        raise MXNetError(
            f"mark_variables got {len(variables)} variables but {len(gradients)} gradients"
        )
    reqs = [grad_reqs] * len(variables) if isinstance(grad_reqs, str) else list(grad_reqs)
    if len(reqs) != len(variables):
        raise MXNetError(f"mark_variables got {len(reqs)} grad_reqs for {len(variables)} variables")
    for v, g, r in zip(variables, gradients, reqs):
        tape.mark(v, g, r)


def backward(
    heads: Any, head_grads: Any = None, retain_graph: bool = False, train_mode: bool = True
):  # noqa: A002
    """Gradients of ``heads`` into their variables' ``.grad`` (write or add, per grad_req)."""
    with tape.scope(None, train_mode):
        tape.backward(heads, head_grads, retain_graph)


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False, train_mode=True):  # noqa: A002
    """Gradients of ``heads`` w.r.t. ``variables``, returned (their ``.grad`` untouched)."""
    with tape.scope(None, train_mode):
        return tape.grad(heads, variables, head_grads, retain_graph, create_graph)


def get_symbol(x: Any) -> Any:
    raise NotImplementedError(
        "mx.autograd.get_symbol is not available in mxmod: the tape holds JAX pullbacks, not "
        "a symbol; build the graph with mx.sym instead"
    )


class Function:
    """An operator with a hand-written gradient (MXNet's ``autograd.Function``).

    Subclasses define ``forward(self, *inputs)`` and ``backward(self, *output_grads)`` on
    NDArrays (``save_for_backward`` keeps what backward needs); calling an instance runs
    forward and, inside ``record()``, puts backward on the tape.
    """

    def __init__(self) -> None:
        self.saved_tensors: tuple = ()

    def save_for_backward(self, *args: Any) -> None:
        self.saved_tensors = args

    def forward(self, *inputs: NDArray) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def backward(self, *output_grads: NDArray) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define backward()")

    def __call__(self, *inputs: NDArray) -> Any:
        with tape.scope(False, None):
            outputs = self.forward(*inputs)
        single = isinstance(outputs, NDArray)
        outs = [outputs] if single else list(outputs)
        if not tape.is_recording() or not any(x._tape is not None for x in inputs):
            return outputs

        def pullback(cts):
            with tape.scope(False, None):
                grads = self.backward(*[NDArray(c, o._ctx) for c, o in zip(cts, outs)])
            grads = [grads] if isinstance(grads, NDArray) else list(grads)
            if len(grads) != len(inputs):
                raise MXNetError(
                    f"{type(self).__name__}.backward returned {len(grads)} gradients for "
                    f"{len(inputs)} inputs"
                )
            return [g._data if isinstance(g, NDArray) else jax.numpy.asarray(g) for g in grads]

        node = tape.Node(pullback, [x._tape for x in inputs], [(o.shape, o.dtype) for o in outs])
        fresh = []
        for i, o in enumerate(outs):
            r = NDArray(o._data, o._ctx)
            r._tape = (node, i)
            fresh.append(r)
        return fresh[0] if single else fresh
