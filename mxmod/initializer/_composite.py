"""Initializers that delegate: ``Load``, ``Mixed`` and ``FusedRNN`` (MXNet 1.9.1 semantics)."""

from __future__ import annotations

import logging
import re
from typing import Any, Sequence

import numpy as np

from ._base import InitDesc, Initializer, _assign, create, register

__all__ = ["Load", "Mixed", "FusedRNN"]


class Load:
    """Initialise from saved parameters, else from ``default_init`` (MXNet ``mx.init.Load``).

    Args:
        param: a file name (read with ``mx.nd.load``) or a dict name -> NDArray/array;
            ``arg:``/``aux:`` prefixes are stripped.
        default_init: initializer for names not in ``param``.
        verbose: log ``'Initialized <name> by loading'`` / ``'by default'``.

    Raises:
        TypeError: ``param`` is neither a file name nor a dict.
    """

    def __init__(self, param: Any, default_init: Any = None, verbose: bool = False):
        if isinstance(param, str):
            from .. import ndarray as nd

            param = nd.load(param)
        if not isinstance(param, dict):
            raise TypeError(
                f"Load needs a dict of name -> array or a file saved with mx.nd.save(fname, "
                f"dict), got {type(param).__name__}"
            )
        self.param = {}
        for name, arr in param.items():
            if name.startswith("arg:") or name.startswith("aux:"):
                self.param[name[4:]] = arr
            else:
                self.param[name] = arr
        self.default_init = default_init
        self.verbose = verbose

    def __call__(self, name: Any, arr: Any) -> None:
        if name in self.param:
            src = self.param[name]
            if tuple(arr.shape) != tuple(src.shape):
                raise ValueError(
                    f"Parameter {name} cannot be initialized from loading. Shape mismatch, "
                    f"target {tuple(arr.shape)} vs loaded {tuple(src.shape)}"
                )
            _assign(arr, src)
            if self.verbose:
                logging.info("Initialized %s by loading", name)
        else:
            if self.default_init is None:
                raise ValueError(
                    f"Cannot Initialize {name}. Not found in loaded param and no default "
                    f"Initializer is provided: pass Load(..., default_init=mx.init.Xavier())"
                )
            self.default_init(name, arr)
            if self.verbose:
                logging.info("Initialized %s by default", name)


class Mixed:
    """Pick the initializer by regex on the name (MXNet ``mx.init.Mixed``).

    Patterns are tried in order with ``re.match`` (anchored at the start); the first match
    initialises the parameter.

    Raises:
        ValueError: the two lists differ in length; at call time, no pattern matches.
    """

    def __init__(self, patterns: Sequence[str], initializers: Sequence[Any]):
        if len(patterns) != len(initializers):
            raise ValueError(
                f"Mixed needs one initializer per pattern: got {len(patterns)} patterns and "
                f"{len(initializers)} initializers"
            )
        self.map = list(zip([re.compile(p) for p in patterns], initializers))

    def __call__(self, name: Any, arr: Any) -> None:
        for prog, init in self.map:
            if prog.match(name):
                init(name, arr)
                return
        raise ValueError(
            f"Parameter name {name} did not match any pattern. Consider add a \".*\" pattern "
            f"at the end with default Initializer."
        )


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
        self._init = init
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._forget_bias = forget_bias

    def _init_weight(self, desc: Any, arr: Any) -> None:
        from .. import ndarray as nd

        layout = _fused_layout(
            int(np.prod(arr.shape)), self._num_hidden, self._num_layers, self._mode,
            self._bidirectional,
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
            if self._mode == "lstm" and name.endswith("_f_bias"):
                _assign(sub, self._forget_bias)
            else:
                arg_desc = InitDesc(name, global_init=global_init)
                (self._init or global_init)(arg_desc, sub)
            pieces.append(np.asarray(sub._data).ravel())
        _assign(arr, np.concatenate(pieces).reshape(arr.shape))
