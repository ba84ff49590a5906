"""The step cells ``RNNCell``, ``LSTMCell`` and ``GRUCell`` (MXNet 1.9.1's graphs and names)."""

from __future__ import annotations

from typing import Any, Optional

from .. import initializer as init
from .. import symbol
from ._base_cell import BaseRNNCell, RNNParams


def _check_hidden(num_hidden: Any, cls: str) -> int:
    if isinstance(num_hidden, bool) or not isinstance(num_hidden, int) or num_hidden < 1:
        raise TypeError(f"{cls}: num_hidden must be a positive int, got {num_hidden!r}")
    return num_hidden


def lstm_step(cell: BaseRNNCell, gates: Any, prev_c: Any, activation: Any, name: str):
    """MXNet's LSTM update from the sliced gates ``[i, f, c, o]``: ``(next_h, next_c)``;
    ``activation`` acts on the candidate and on the new cell state (tanh in ``LSTMCell``)."""
    in_gate = symbol.Activation(gates[0], act_type="sigmoid", name=f"{name}i")
    forget_gate = symbol.Activation(gates[1], act_type="sigmoid", name=f"{name}f")
    in_transform = cell._get_activation(gates[2], activation, name=f"{name}c")
    out_gate = symbol.Activation(gates[3], act_type="sigmoid", name=f"{name}o")
    next_c = symbol._plus(forget_gate * prev_c, in_gate * in_transform, name=f"{name}state")
    next_h = symbol._mul(out_gate, cell._get_activation(next_c, activation), name=f"{name}out")
    return next_h, next_c


def gru_step(cell: BaseRNNCell, i2h: Any, h2h: Any, prev_h: Any, activation: Any, name: str):
    """MXNet's GRU update from the ``[r, z, o]`` projections: the next state; ``activation``
    acts on the candidate (tanh in ``GRUCell``)."""
    i2h_r, i2h_z, i2h = symbol.SliceChannel(i2h, num_outputs=3, name=f"{name}_i2h_slice")
    h2h_r, h2h_z, h2h = symbol.SliceChannel(h2h, num_outputs=3, name=f"{name}_h2h_slice")
    reset_gate = symbol.Activation(i2h_r + h2h_r, act_type="sigmoid", name=f"{name}_r_act")
    update_gate = symbol.Activation(i2h_z + h2h_z, act_type="sigmoid", name=f"{name}_z_act")
    next_h_tmp = cell._get_activation(i2h + reset_gate * h2h, activation, name=f"{name}_h_act")
    return symbol._plus((1.0 - update_gate) * next_h_tmp, update_gate * prev_h, name=f"{name}out")


class _FCCell(BaseRNNCell):
    """Base of RNNCell, LSTMCell and GRUCell: ``_num_states`` states of (batch, num_hidden),
    the i2h/h2h weight and bias variables, and the two fully connected projections onto
    ``len(_gate_names) * num_hidden`` units. Subclasses set the two class attributes and
    write ``__call__`` from :meth:`_projections`."""

    _gate_names: tuple = ("",)
    _num_states = 1

    def __init__(self, num_hidden: int, prefix: str, params: Any, i2h_bias_init: Any = None):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = _check_hidden(num_hidden, type(self).__name__)
        self._iW = self.params.get("i2h_weight")
        self._iB = self.params.get("i2h_bias", init=i2h_bias_init)
        self._hW = self.params.get("h2h_weight")
        self._hB = self.params.get("h2h_bias")

    @property
    def state_info(self) -> list:
        shape = (0, self._num_hidden)
        return [{"shape": shape, "__layout__": "NC"} for _ in range(self._num_states)]

    def _projections(self, inputs: Any, prev_h: Any, name: str) -> tuple:
        """``(i2h, h2h)`` FullyConnected nodes named ``{name}i2h`` and ``{name}h2h``."""
        units = self._num_hidden * len(self._gate_names)
        i2h = symbol.FullyConnected(
            data=inputs, weight=self._iW, bias=self._iB, num_hidden=units, name=f"{name}i2h"
        )
        h2h = symbol.FullyConnected(
            data=prev_h, weight=self._hW, bias=self._hB, num_hidden=units, name=f"{name}h2h"
        )
        return i2h, h2h


class RNNCell(_FCCell):
    """Elman RNN cell ``h' = act(W_i x + b_i + W_h h + b_h)``, as MXNet's ``mx.rnn.RNNCell``.

    Args:
        num_hidden: units of the output and the state.
        activation: an ``Activation`` act_type (``'tanh'``, ``'relu'`` ...) or a callable
            ``f(symbol, name=...)``.
        prefix: node and parameter name prefix.
        params: shared ``RNNParams`` or None.
    """

    def __init__(
        self,
        num_hidden: int,
        activation: Any = "tanh",
        prefix: str = "rnn_",
        params: Optional[RNNParams] = None,
    ):
        super().__init__(num_hidden, prefix, params)
        self._activation = activation

    def __call__(self, inputs, states):
        name = self._step_name()
        i2h, h2h = self._projections(inputs, states[0], name)
        output = self._get_activation(i2h + h2h, self._activation, name=f"{name}out")
        return output, [output]


class LSTMCell(_FCCell):
    """LSTM cell with gates in MXNet's order ``[i, f, c, o]``, as ``mx.rnn.LSTMCell``.

    Args:
        num_hidden: units of the output and of each state (``h``, ``c``).
        prefix: node and parameter name prefix.
        params: shared ``RNNParams`` or None.
        forget_bias: initial value of the forget-gate part of ``i2h_bias``; set through the
            variable's ``init=mx.init.LSTMBias(forget_bias)``, so it applies at
            ``init_params`` unless the bias is given.
    """

    _gate_names = ("_i", "_f", "_c", "_o")
    _num_states = 2

    def __init__(
        self,
        num_hidden: int,
        prefix: str = "lstm_",
        params: Optional[RNNParams] = None,
        forget_bias: float = 1.0,
    ):
        super().__init__(num_hidden, prefix, params, init.LSTMBias(forget_bias=forget_bias))

    def __call__(self, inputs, states):
        name = self._step_name()
        i2h, h2h = self._projections(inputs, states[0], name)
        gates = symbol.SliceChannel(i2h + h2h, num_outputs=4, name=f"{name}slice")
        next_h, next_c = lstm_step(self, gates, states[1], "tanh", name)
        return next_h, [next_h, next_c]


class GRUCell(_FCCell):
    """GRU cell in cuDNN's variant (reset gate applied after the recurrent projection),
    gates ``[r, z, o]``, as MXNet's ``mx.rnn.GRUCell``.

    Args:
        num_hidden: units of the output and the state.
        prefix: node and parameter name prefix.
        params: shared ``RNNParams`` or None.
    """

    _gate_names = ("_r", "_z", "_o")

    def __init__(self, num_hidden: int, prefix: str = "gru_", params: Optional[RNNParams] = None):
        super().__init__(num_hidden, prefix, params)

    def __call__(self, inputs, states):
        # MXNet's names carry a double underscore here (``gru_t0__i2h``).
        name = self._step_name()
        prev_h = states[0]
        i2h, h2h = self._projections(inputs, prev_h, f"{name}_")
        next_h = gru_step(self, i2h, h2h, prev_h, "tanh", name)
        return next_h, [next_h]
