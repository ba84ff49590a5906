"""Dynamic loss scaling: MXNet's ``amp.LossScaler`` rule, as state a compiled step carries.

MXNet's rule (``mxnet/contrib/amp/loss_scaler.py``): the scale starts at 2**16; a step
whose gradients hold a non-finite value is skipped and halves the scale; after 2000
finite steps in a row the scale doubles, up to 2**24. MXNet applies a new scale one step
late (``has_overflow`` first makes the previously decided scale current, then decides the
next one); this keeps that order.

``LossScaler`` keeps the rule on the host (MXNet's class, for code that reads
``loss_scale``); ``init_state``/``scaled_update`` are the same rule on device arrays, for
a fused step: gradients computed from a loss scaled by ``state['scale']`` are unscaled,
checked, and the optimizer update is applied only when all are finite, in one program
without a host round trip.
"""

from __future__ import annotations

import logging

import jax.numpy as jnp
import numpy as np

from ...executor.loss_scale import (  # noqa: F401  (the device rule, importable from here)
    INIT_SCALE,
    MAX_SCALE,
    SCALE_NAME,
    WINDOW,
    all_finite,
    next_state,
    scaled_update,
)
from ...ops import get_op
from ...symbol.graph import Node, topo_order
from ...symbol.symbol import Symbol


class LossScaler:
    """MXNet's dynamic loss scaler (same attributes and ``has_overflow``)."""

    def __init__(self):
        self._loss_scale = INIT_SCALE
        self._next_loss_scale = self._loss_scale
        self._max_loss_scale = MAX_SCALE
        self._scale_seq_len = WINDOW
        self._unskipped = 0

    @property
    def loss_scale(self) -> float:
        self._sync()
        return self._loss_scale

    def keep_device_state(self, state: dict) -> None:
        """Record the state a compiled step returned; the host fields follow on first read."""
        self._device_state = state

    def _sync(self) -> None:
        state = getattr(self, "_device_state", None)
        if state is not None:
            self._device_state = None
            self.load_state(state)

    def has_overflow(self, grads) -> bool:
        """Whether any gradient (NDArrays or arrays) is non-finite; moves the scale."""
        self._sync()
        finite = all(
            bool(np.isfinite(np.asarray(getattr(g, "asnumpy", lambda: g)())).all()) for g in grads
        )
        self._loss_scale = self._next_loss_scale
        if not finite:
            self._next_loss_scale = self._loss_scale / 2.0
            self._unskipped = 0
            logging.info("AMP: decreasing loss scale to %f", self._next_loss_scale)
        else:
            self._unskipped += 1
        if self._unskipped == self._scale_seq_len:
            self._unskipped = 0
            self._next_loss_scale = min(self._max_loss_scale, self._loss_scale * 2.0)
            logging.info("AMP: increasing loss scale to %f", self._next_loss_scale)
        return not finite

    def state(self) -> dict:
        """This scaler as the device state of ``scaled_update`` (the one a compiled step
        returned last, when there is one)."""
        if getattr(self, "_device_state", None) is not None:
            return self._device_state
        return {
            "scale": jnp.float32(self._loss_scale),
            "next": jnp.float32(self._next_loss_scale),
            "unskipped": jnp.int32(self._unskipped),
        }

    def load_state(self, state: dict) -> None:
        """Take the state a compiled step returned (reads device values: syncs)."""
        self._loss_scale = float(state["scale"])
        self._next_loss_scale = float(state["next"])
        self._unskipped = int(state["unskipped"])


def init_state() -> dict:
    """The initial device state (scale 2**16)."""
    return LossScaler().state()


# ------------------------------------------------------------------ Module.fit (mxmod)


def insert_loss_scale(sym, name: str = SCALE_NAME):
    """A copy of ``sym`` whose loss heads read their data through ``_amp_scale_grad(x,
    <name>)`` (mxmod only): the backward pass below the heads is multiplied by the value of
    the (1,)-shaped argument ``name``, which ``fit`` feeds from the loss scaler once
    ``amp.init_trainer(module)`` was called. Bind the Module with ``fixed_param_names`` holding
    ``name``. The forward pass is unchanged."""
    if name in sym.list_inputs():
        raise ValueError(
            f"insert_loss_scale: the symbol already has an input {name!r}; "
            "insert the loss scale once, or pass another name="
        )
    scale = Node(None, name, {"__shape__": "(1,)", "__init__": '["one", {}]'})
    new: dict = {}
    heads = 0
    for node in topo_order(sym._outputs):
        if node.is_var:
            new[id(node)] = node
            continue
        ins = [(new[id(c)], i) for c, i in node.inputs]
        if node.op.loss_head(node.parsed()) and ins:
            s = Node(
                get_op("_amp_scale_grad"), f"{node.name}_amp_scale_grad", {}, [ins[0], (scale, 0)]
            )
            ins[0] = (s, 0)
            heads += 1
        n = Node(node.op, node.name, node.attrs, ins)
        n._parsed = node._parsed
        n.subgraphs = node.subgraphs
        new[id(node)] = n
    if not heads:
        raise ValueError(
            "insert_loss_scale: the symbol has no loss head (SoftmaxOutput, "
            "LinearRegressionOutput, MakeLoss...) to scale the gradient of"
        )
    return Symbol([(new[id(n)], i) for n, i in sym._outputs])
