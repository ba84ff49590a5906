"""``mx.rnn``: symbolic RNN cells, RNN checkpoints and the bucketing sentence iterator,
as MXNet 1.9.1's ``mxnet.rnn``.

Cells build the same graphs, with the same node and parameter names, as MXNet's, so
``sym_gen`` functions, ``tojson()`` output and RNN checkpoints carry over unchanged.
"""

from . import io, rnn, rnn_cell
from .io import BucketSentenceIter, encode_sentences
from .rnn import do_rnn_checkpoint, load_rnn_checkpoint, rnn_unroll, save_rnn_checkpoint
from .rnn_cell import *  # noqa: F403 -- the cells, as rnn_cell.__all__

# MXNet's mx.rnn also carries the model checkpoint functions (its rnn.py imports them)
from ..module.checkpoint import load_checkpoint, save_checkpoint  # noqa: E402,F401

__all__ = rnn_cell.__all__ + [
    "encode_sentences",
    "BucketSentenceIter",
    "rnn_unroll",
    "save_rnn_checkpoint",
    "load_rnn_checkpoint",
    "do_rnn_checkpoint",
    "io",
    "rnn",
    "rnn_cell",
]
