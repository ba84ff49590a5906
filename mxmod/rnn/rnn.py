"""Checkpoint helpers for networks built from ``mx.rnn`` cells, as MXNet's ``mx.rnn.rnn``.

Saved files hold the cells' *unpacked* (per-gate) weights, as MXNet writes them, so RNN
checkpoints move both ways between MXNet and mxmod. Built on the public
``mx.model.save_checkpoint``/``load_checkpoint``.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

from ..model import load_checkpoint, save_checkpoint
from ._base_cell import BaseRNNCell

__all__ = ["rnn_unroll", "save_rnn_checkpoint", "load_rnn_checkpoint", "do_rnn_checkpoint"]


def _as_cells(cells: Any) -> list:
    if isinstance(cells, BaseRNNCell):
        return [cells]
    if isinstance(cells, (list, tuple)) and all(isinstance(c, BaseRNNCell) for c in cells):
        return list(cells)
    raise TypeError(f"cells must be an mx.rnn cell or a list of them, got {cells!r}")


def rnn_unroll(
    cell: BaseRNNCell,
    length: int,
    inputs: Any = None,
    begin_state: Any = None,
    input_prefix: str = "",
    layout: str = "NTC",
):
    """Deprecated in MXNet: ``cell.unroll(length, inputs, begin_state, layout)``.

    ``input_prefix`` only named the inputs MXNet used to create for ``inputs=None``, which
    it no longer supported either; a non-empty one raises.
    """
    warnings.warn(
        "rnn_unroll is deprecated. Please call cell.unroll directly.",
        DeprecationWarning,
        stacklevel=2,
    )
    if input_prefix:
        raise NotImplementedError(
            "rnn_unroll(input_prefix=...) is not supported; create the "
            "input symbols yourself and call cell.unroll(length, inputs)"
        )
    return cell.unroll(length=length, inputs=inputs, begin_state=begin_state, layout=layout)


def save_rnn_checkpoint(
    cells: Any, prefix: str, epoch: int, symbol: Any, arg_params: dict, aux_params: dict
) -> None:
    """``mx.model.save_checkpoint`` after ``unpack_weights`` of every cell.

    Args:
        cells: the cell, or list of cells, the symbol was built with.
        prefix: file prefix (``<prefix>-symbol.json``, ``<prefix>-<epoch:04d>.params``).
        epoch: epoch number of the params file.
        symbol: the network.
        arg_params: packed argument parameters (as ``Module.get_params()[0]``).
        aux_params: auxiliary states.
    """
    for cell in _as_cells(cells):
        arg_params = cell.unpack_weights(arg_params)
    save_checkpoint(prefix, epoch, symbol, arg_params, aux_params)


def load_rnn_checkpoint(cells: Any, prefix: str, epoch: int) -> tuple:
    """``mx.model.load_checkpoint`` then ``pack_weights`` of every cell.

    Returns:
        ``(symbol, arg_params, aux_params)`` with the weights packed as the cells' graphs
        take them.
    """
    sym, arg, aux = load_checkpoint(prefix, epoch)
    for cell in _as_cells(cells):
        arg = cell.pack_weights(arg)
    return sym, arg, aux


def do_rnn_checkpoint(cells: Any, prefix: str, period: int = 1) -> Callable:
    """An epoch-end callback for ``fit`` that calls ``save_rnn_checkpoint`` every ``period``
    epochs, as MXNet's ``mx.rnn.do_rnn_checkpoint``."""
    cells = _as_cells(cells)
    period = int(max(1, period))

    def _callback(iter_no, sym=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0:
            save_rnn_checkpoint(cells, prefix, iter_no + 1, sym, arg, aux)

    return _callback
