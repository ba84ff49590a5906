"""The ``mx.rnn`` cells, as MXNet's ``mxnet.rnn.rnn_cell`` module (re-exports)."""

from ._base_cell import BaseRNNCell, RNNParams
from ._cells import GRUCell, LSTMCell, RNNCell
from ._conv_cells import BaseConvRNNCell, ConvGRUCell, ConvLSTMCell, ConvRNNCell
from ._fused import FusedRNNCell
from ._modifiers import DropoutCell, ModifierCell, ResidualCell, ZoneoutCell
from ._stack import BidirectionalCell, SequentialRNNCell

__all__ = [
    "RNNParams",
    "BaseRNNCell",
    "RNNCell",
    "LSTMCell",
    "GRUCell",
    "FusedRNNCell",
    "SequentialRNNCell",
    "DropoutCell",
    "ModifierCell",
    "ZoneoutCell",
    "ResidualCell",
    "BidirectionalCell",
    "BaseConvRNNCell",
    "ConvRNNCell",
    "ConvLSTMCell",
    "ConvGRUCell",
]
