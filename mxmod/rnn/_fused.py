"""``FusedRNNCell``: a whole multi-layer RNN as one ``RNN`` operator, as MXNet's
``mx.rnn.FusedRNNCell``.

In mxmod the ``RNN`` operator is one compiled ``lax.scan`` per layer on every device
(MXNet needed cuDNN for it), and its packed parameter vector has MXNet's layout, so
``unpack_weights``/``pack_weights`` convert to and from the per-gate names that
``unfuse()``'s cells use.
"""

from __future__ import annotations

from typing import Optional

from .. import initializer as init
from .. import ndarray
from .. import symbol
from ..base import MXNetError
from ._base_cell import BaseRNNCell, RNNParams, normalize_sequence
from ._cells import GRUCell, LSTMCell, RNNCell
from ._stack import BidirectionalCell, SequentialRNNCell
from ._modifiers import DropoutCell

_GATE_NAMES = {
    "rnn_relu": [""],
    "rnn_tanh": [""],
    "lstm": ["_i", "_f", "_c", "_o"],
    "gru": ["_r", "_z", "_o"],
}


class FusedRNNCell(BaseRNNCell):
    """Stacked (optionally bidirectional) RNN/LSTM/GRU on the fused ``RNN`` operator.

    Differences from MXNet: runs on any device (MXNet required cuDNN), and ``unroll`` with
    ``layout='NTC'`` does not warn (the transposes are fused by XLA).

    Args:
        num_hidden: hidden units per layer and direction.
        num_layers: number of stacked layers.
        mode: ``'rnn_relu'``, ``'rnn_tanh'``, ``'lstm'`` or ``'gru'``.
        bidirectional: also run each layer backwards; outputs are ``2 * num_hidden`` wide.
        dropout: dropout between layers, in training.
        get_next_state: ``unroll`` returns the final states (else an empty list).
        forget_bias: LSTM forget-gate bias set by the ``FusedRNN`` initializer.
        prefix: name prefix; ``'<mode>_'`` if None.
        params: shared ``RNNParams`` or None.
    """

    _not_steppable = "FusedRNNCell does not support zoneout; unfuse() it first"

    def __init__(
        self,
        num_hidden: int,
        num_layers: int = 1,
        mode: str = "lstm",
        bidirectional: bool = False,
        dropout: float = 0.0,
        get_next_state: bool = False,
        forget_bias: float = 1.0,
        prefix: Optional[str] = None,
        params: Optional[RNNParams] = None,
    ):
        if mode not in _GATE_NAMES:
            raise ValueError(
                f"FusedRNNCell mode must be one of {sorted(_GATE_NAMES)}, got {mode!r}"
            )
        for what, v in (("num_hidden", num_hidden), ("num_layers", num_layers)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise TypeError(f"FusedRNNCell: {what} must be a positive int, got {v!r}")
        if prefix is None:
            prefix = f"{mode}_"
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bool(bidirectional)
        self._dropout = dropout
        self._get_next_state = get_next_state
        self._directions = ["l", "r"] if bidirectional else ["l"]
        initializer = init.FusedRNN(None, num_hidden, num_layers, mode, bidirectional, forget_bias)
        self._parameter = self.params.get("parameters", init=initializer)

    @property
    def state_info(self) -> list:
        b = len(self._directions)
        n = 2 if self._mode == "lstm" else 1
        return [
            {"shape": (b * self._num_layers, 0, self._num_hidden), "__layout__": "LNC"}
            for _ in range(n)
        ]

    @property
    def _gate_names(self):
        return _GATE_NAMES[self._mode]

    def _pieces(self, num_input: int) -> list[tuple[str, tuple]]:
        """Names and shapes of the per-gate arrays in the packed vector's order."""
        h, b, p = self._num_hidden, len(self._directions), self._prefix
        out = []
        for layer in range(self._num_layers):
            for d in self._directions:
                shape = (h, b * h) if layer > 0 else (h, num_input)
                out += [(f"{p}{d}{layer}_i2h{g}_weight", shape) for g in self._gate_names]
                out += [(f"{p}{d}{layer}_h2h{g}_weight", (h, h)) for g in self._gate_names]
        for layer in range(self._num_layers):
            for d in self._directions:
                out += [(f"{p}{d}{layer}_i2h{g}_bias", (h,)) for g in self._gate_names]
                out += [(f"{p}{d}{layer}_h2h{g}_bias", (h,)) for g in self._gate_names]
        return out

    def unpack_weights(self, args: dict) -> dict:
        """Split ``<prefix>parameters`` into ``<prefix><l|r><layer>_<i2h|h2h><gate>_<weight|
        bias>`` arrays (MXNet's names); returns a new dict."""
        args = dict(args)
        name = self._parameter.name
        if name not in args:
            raise MXNetError(
                f"FusedRNNCell {self._prefix!r}: {name!r} is not in the given "
                f"parameters (they are {sorted(args)})"
            )
        arr = args.pop(name)
        b, m, h = len(self._directions), len(self._gate_names), self._num_hidden
        num_input = arr.size // b // h // m - (self._num_layers - 1) * (h + b * h + 2) - h - 2
        pieces = self._pieces(num_input)
        total = sum(_size(s) for _, s in pieces)
        if num_input < 1 or total != arr.size:
            raise MXNetError(
                f"FusedRNNCell {self._prefix!r}: {name!r} has {arr.size} elements, "
                f"which does not fit mode={self._mode!r}, num_hidden={h}, "
                f"num_layers={self._num_layers}, bidirectional={self._bidirectional}"
            )
        pos = 0
        for piece, shape in pieces:
            n = _size(shape)
            args[piece] = arr[pos : pos + n].reshape(shape).copy()
            pos += n
        return args

    def pack_weights(self, args: dict) -> dict:
        """Inverse of ``unpack_weights``: one ``<prefix>parameters`` vector; returns a new dict."""
        args = dict(args)
        first = f"{self._prefix}l0_i2h{self._gate_names[0]}_weight"
        if first not in args:
            raise MXNetError(
                f"FusedRNNCell {self._prefix!r}: {first!r} is not in the given "
                f"parameters (they are {sorted(args)}); pass unpacked weights"
            )
        flat = []
        for piece, shape in self._pieces(args[first].shape[1]):
            if piece not in args:
                raise MXNetError(
                    f"FusedRNNCell {self._prefix!r}: parameter {piece!r} is "
                    "missing; pass every unpacked weight and bias"
                )
            value = args.pop(piece)
            if tuple(value.shape) != shape:
                raise MXNetError(
                    f"FusedRNNCell {self._prefix!r}: {piece!r} has shape "
                    f"{tuple(value.shape)}, expected {shape}"
                )
            flat.append(value.reshape((-1,)))
        args[self._parameter.name] = ndarray.concatenate(flat)
        return args

    def __call__(self, inputs, states):
        raise NotImplementedError(
            "FusedRNNCell cannot be stepped; use unroll(), or unfuse() it into cells that can"
        )

    def _unroll(self, length, inputs, begin_state, layout, merge_outputs):
        """Unroll as one ``RNN`` node named ``<prefix>rnn`` (see ``BaseRNNCell.unroll``)."""
        inputs, axis = normalize_sequence(length, inputs, layout, True)
        if axis == 1:
            inputs = symbol.swapaxes(inputs, dim1=0, dim2=1)
        elif axis != 0:
            raise ValueError(f"FusedRNNCell: unsupported layout {layout!r}; use 'NTC' or 'TNC'")
        if begin_state is None:
            begin_state = self.begin_state()
        states = {"state": begin_state[0]}
        if self._mode == "lstm":
            states["state_cell"] = begin_state[1]
        rnn = symbol.RNN(
            data=inputs,
            parameters=self._parameter,
            state_size=self._num_hidden,
            num_layers=self._num_layers,
            bidirectional=self._bidirectional,
            p=self._dropout,
            state_outputs=self._get_next_state,
            mode=self._mode,
            name=self._prefix + "rnn",
            **states,
        )
        if not self._get_next_state:
            outputs, states = rnn, []
        else:
            n_states = 2 if self._mode == "lstm" else 1
            for i in range(1, n_states + 1):
                rnn[i]._set_attr(__layout__="LNC")
            outputs, states = rnn[0], [rnn[i] for i in range(1, n_states + 1)]
        if axis == 1:
            outputs = symbol.swapaxes(outputs, dim1=0, dim2=1)
        outputs, _ = normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def unfuse(self) -> SequentialRNNCell:
        """The same network as a ``SequentialRNNCell`` of step cells whose parameter names are
        those of ``unpack_weights`` (so ``unpack_weights`` output binds to it directly)."""

        def make(cell_prefix):
            if self._mode == "lstm":
                return LSTMCell(self._num_hidden, prefix=cell_prefix)
            if self._mode == "gru":
                return GRUCell(self._num_hidden, prefix=cell_prefix)
            act = "relu" if self._mode == "rnn_relu" else "tanh"
            return RNNCell(self._num_hidden, activation=act, prefix=cell_prefix)

        stack = SequentialRNNCell()
        p = self._prefix
        for i in range(self._num_layers):
            if self._bidirectional:
                stack.add(
                    BidirectionalCell(
                        make(f"{p}l{i}_"), make(f"{p}r{i}_"), output_prefix=f"{p}bi_l{i}_"
                    )
                )
            else:
                stack.add(make(f"{p}l{i}_"))
            if self._dropout > 0 and i != self._num_layers - 1:
                stack.add(DropoutCell(self._dropout, prefix=f"{p}_dropout{i}_"))
        return stack


def _size(shape: tuple) -> int:
    n = 1
    for d in shape:
        n *= d
    return n
