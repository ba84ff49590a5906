"""``FusedRNN``: initialise a fused RNN parameter vector gate by gate (MXNet 1.9.1 semantics)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import ndarray as nd
from ._base import InitDesc, Initializer, create, register
from ._fill import _assign

__all__ = ["FusedRNN"]


_GATES = {"rnn_relu": [""], "rnn_tanh": [""], "lstm": ["_i", "_f", "_c", "_o"],
          "gru": ["_r", "_z", "_o"]}  # fmt: skip


def _fused_layout(size: int, num_hidden: int, num_layers: int, mode: str, bidirectional: bool):
    """(name, shape) of each slice of the fused parameter vector, in cuDNN order.

    Mirrors ``mx.rnn.FusedRNNCell._slice_weights`` with an empty prefix.
    """
    gates = _GATES[mode]
    dirs = ["l", "r"] if bidirectional else ["l"]
    b, m, h = len(dirs), len(gates), num_hidden
    ni = size // b // h // m - (num_layers - 1) * (h + b * h + 2) - h - 2
    out = []
    for layer in range(num_layers):
        for d in dirs:
            for g in gates:
                shape = (h, b * h) if layer > 0 else (h, ni)
                out.append((f"{d}{layer}_i2h{g}_weight", shape))
            for g in gates:
                out.append((f"{d}{layer}_h2h{g}_weight", (h, h)))
    for layer in range(num_layers):
        for d in dirs:
            for g in gates:
                out.append((f"{d}{layer}_i2h{g}_bias", (h,)))
            for g in gates:
                out.append((f"{d}{layer}_h2h{g}_bias", (h,)))
    total = sum(int(np.prod(s)) for _, s in out)
    if ni <= 0 or total != size:
        raise ValueError(
            f"FusedRNN: a parameter vector of {size} elements does not fit mode={mode!r}, "
            f"num_hidden={num_hidden}, num_layers={num_layers}, bidirectional={bidirectional}"
        )
    return out


@register
class FusedRNN(Initializer):
    """Initialise a fused RNN parameter vector gate by gate (MXNet ``mx.init.FusedRNN``).

    The vector is split into the per-gate weights/biases of ``mx.rnn.FusedRNNCell``
    (``l0_i2h_i_weight``, ...); each is initialised with ``init`` (or ``desc.global_init``),
    LSTM ``*_f_bias`` slices (i2h and h2h) get ``forget_bias``; the result is repacked.

    Args:
        init: an Initializer, its JSON ``dumps()`` string, or None (use the global one).
        num_hidden, num_layers, mode, bidirectional, forget_bias: the RNN's configuration;
            ``mode`` is ``'rnn_relu'``, ``'rnn_tanh'``, ``'lstm'`` or ``'gru'``.

    Raises:
        ValueError: an unknown ``mode``; at call time, a vector size that does not fit.
    """

    def __init__(
        self,
        init: Any,
        num_hidden: int,
        num_layers: int,
        mode: str,
        bidirectional: bool = False,
        forget_bias: float = 1.0,
    ):
        if isinstance(init, str):
            init = create(init)
        if mode not in _GATES:
            raise ValueError(f"FusedRNN mode must be one of {sorted(_GATES)}, got {mode!r}")
        super().__init__(
            init=init.dumps() if init is not None else None,
            num_hidden=num_hidden,
            num_layers=num_layers,
            mode=mode,
            bidirectional=bidirectional,
            forget_bias=forget_bias,
        )
        self._init = init  # the instance; _kwargs holds its dumps() and the configuration

    def _init_weight(self, desc: Any, arr: Any) -> None:
        k = self._kwargs
        layout = _fused_layout(
            int(np.prod(arr.shape)), k["num_hidden"], k["num_layers"], k["mode"],
            k["bidirectional"],
        )  # fmt: skip
        global_init = getattr(desc, "global_init", None)
        if self._init is None and global_init is None:
            raise ValueError(
                f"FusedRNN for {desc}: no init given and no global initializer; pass "
                f"FusedRNN(init=mx.init.Xavier(), ...)"
            )
        pieces = []
        for name, shape in layout:
            sub = nd.NDArray(np.zeros(shape, arr._data.dtype), arr.context)
            if k["mode"] == "lstm" and name.endswith("_f_bias"):
                _assign(sub, k["forget_bias"])
            else:
                arg_desc = InitDesc(name, global_init=global_init)
                (self._init or global_init)(arg_desc, sub)
            pieces.append(np.asarray(sub._data).ravel())
        _assign(arr, np.concatenate(pieces).reshape(arr.shape))
