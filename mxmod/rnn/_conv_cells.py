"""Convolutional RNN cells (``ConvRNNCell``, ``ConvLSTMCell``, ``ConvGRUCell``), as in
MXNet 1.9.1's ``mx.rnn``: the i2h and h2h projections are convolutions."""

from __future__ import annotations

import functools
from typing import Any, Optional

from .. import symbol
from ._base_cell import BaseRNNCell, RNNParams
from ._cells import gru_step, lstm_step

_LEAKY = functools.partial(symbol.LeakyReLU, act_type="leaky", slope=0.2)


class BaseConvRNNCell(BaseRNNCell):
    """Shared parts of the convolutional cells, as MXNet's ``mx.rnn.BaseConvRNNCell``.

    The state has the shape of ``Convolution(input)`` (batch dim 0, inferred later); the
    h2h convolution pads to keep it, so ``h2h_kernel`` must be odd.

    Raises:
        ValueError: an even ``h2h_kernel``.
    """

    _num_states = 2  # h and c; the Elman and GRU cells keep only h

    def __init__(
        self,
        input_shape: tuple,
        num_hidden: int,
        h2h_kernel: tuple,
        h2h_dilate: tuple,
        i2h_kernel: tuple,
        i2h_stride: tuple,
        i2h_pad: tuple,
        i2h_dilate: tuple,
        i2h_weight_initializer: Any,
        h2h_weight_initializer: Any,
        i2h_bias_initializer: Any,
        h2h_bias_initializer: Any,
        activation: Any,
        prefix: str = "",
        params: Optional[RNNParams] = None,
        conv_layout: str = "NCHW",
    ):
        super().__init__(prefix=prefix, params=params)
        if h2h_kernel[0] % 2 != 1 or h2h_kernel[1] % 2 != 1:
            raise ValueError(
                f"{type(self).__name__}: h2h_kernel must be odd to keep the state "
                f"shape, got {h2h_kernel}"
            )
        # The two convolutions' attributes (the h2h one pads to keep the state shape).
        self._i2h_conv = dict(
            kernel=i2h_kernel, stride=i2h_stride, pad=i2h_pad, dilate=i2h_dilate, layout=conv_layout
        )
        h2h_pad = tuple(d * (k - 1) // 2 for d, k in zip(h2h_dilate, h2h_kernel))
        self._h2h_conv = dict(
            kernel=h2h_kernel, dilate=h2h_dilate, pad=h2h_pad, stride=(1, 1), layout=conv_layout
        )
        self._num_hidden = num_hidden
        self._input_shape = input_shape
        self._conv_layout = conv_layout
        self._activation = activation

        conv = symbol.Convolution(
            data=symbol.Variable("data"), num_filter=num_hidden, **self._i2h_conv
        )
        out_shape = conv.infer_shape(data=input_shape)[1][0]
        self._state_shape = (0,) + tuple(out_shape[1:])

        self._iW = self.params.get("i2h_weight", init=i2h_weight_initializer)
        self._hW = self.params.get("h2h_weight", init=h2h_weight_initializer)
        self._iB = self.params.get("i2h_bias", init=i2h_bias_initializer)
        self._hB = self.params.get("h2h_bias", init=h2h_bias_initializer)

    @property
    def _num_gates(self) -> int:
        return len(self._gate_names)

    @property
    def state_info(self) -> list:
        return [{"shape": self._state_shape, "__layout__": self._conv_layout}] * self._num_states

    def _conv_forward(self, inputs, states, name):
        n = self._num_hidden * self._num_gates
        i2h = symbol.Convolution(
            name=f"{name}i2h", data=inputs, num_filter=n, weight=self._iW, bias=self._iB,
            **self._i2h_conv,
        )  # fmt: skip
        h2h = symbol.Convolution(
            name=f"{name}h2h", data=states[0], num_filter=n, weight=self._hW, bias=self._hB,
            **self._h2h_conv,
        )  # fmt: skip
        return i2h, h2h


def _public_init(default_prefix: str):
    """The ``__init__`` of a concrete conv cell: MXNet's defaults and the cell's own prefix."""

    def __init__(
        self,
        input_shape,
        num_hidden,
        h2h_kernel=(3, 3),
        h2h_dilate=(1, 1),
        i2h_kernel=(3, 3),
        i2h_stride=(1, 1),
        i2h_pad=(1, 1),
        i2h_dilate=(1, 1),
        i2h_weight_initializer=None,
        h2h_weight_initializer=None,
        i2h_bias_initializer="zeros",
        h2h_bias_initializer="zeros",
        activation=_LEAKY,
        prefix=default_prefix,
        params=None,
        conv_layout="NCHW",
    ):
        BaseConvRNNCell.__init__(
            self,
            input_shape,
            num_hidden,
            h2h_kernel,
            h2h_dilate,
            i2h_kernel,
            i2h_stride,
            i2h_pad,
            i2h_dilate,
            i2h_weight_initializer,
            h2h_weight_initializer,
            i2h_bias_initializer,
            h2h_bias_initializer,
            activation,
            prefix=prefix,
            params=params,
            conv_layout=conv_layout,
        )

    return __init__


class ConvRNNCell(BaseConvRNNCell):
    """Convolutional Elman cell, as MXNet's ``mx.rnn.ConvRNNCell`` (same arguments)."""

    _num_states = 1

    __init__ = _public_init("ConvRNN_")

    @property
    def _gate_names(self):
        return ("",)

    def __call__(self, inputs, states):
        name = self._step_name()
        i2h, h2h = self._conv_forward(inputs, states, name)
        output = self._get_activation(i2h + h2h, self._activation, name=f"{name}out")
        return output, [output]


class ConvLSTMCell(BaseConvRNNCell):
    """Convolutional LSTM (Shi et al. 2015), as MXNet's ``mx.rnn.ConvLSTMCell``; the
    activation replaces tanh on the candidate and the cell output."""

    __init__ = _public_init("ConvLSTM_")

    @property
    def _gate_names(self):
        return ["_i", "_f", "_c", "_o"]

    def __call__(self, inputs, states):
        name = self._step_name()
        i2h, h2h = self._conv_forward(inputs, states, name)
        gates = symbol.SliceChannel(
            i2h + h2h, num_outputs=4, axis=self._conv_layout.find("C"), name=f"{name}slice"
        )
        next_h, next_c = lstm_step(self, gates, states[1], self._activation, name)
        return next_h, [next_h, next_c]


class ConvGRUCell(BaseConvRNNCell):
    """Convolutional GRU, as MXNet's ``mx.rnn.ConvGRUCell``."""

    _num_states = 1

    __init__ = _public_init("ConvGRU_")

    @property
    def _gate_names(self):
        return ["_r", "_z", "_o"]

    def __call__(self, inputs, states):
        name = self._step_name()
        i2h, h2h = self._conv_forward(inputs, states, name)
        next_h = gru_step(self, i2h, h2h, states[0], self._activation, name)
        return next_h, [next_h]
