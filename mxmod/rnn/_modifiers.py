"""``DropoutCell`` and the modifier cells (``ModifierCell``, ``ZoneoutCell``, ``ResidualCell``)
of MXNet 1.9.1's ``mx.rnn``: same graphs and names."""

from __future__ import annotations

from typing import Any, Callable, Optional

from .. import symbol
from ._base_cell import BaseRNNCell, RNNParams, check_not_modified, normalize_sequence


class DropoutCell(BaseRNNCell):
    """Dropout on the inputs, no state, as MXNet's ``mx.rnn.DropoutCell``.

    Args:
        dropout: fraction of inputs to drop in training (0 adds no node).
        prefix: name prefix (MXNet's Dropout node itself is auto-named).
        params: shared ``RNNParams`` or None.
    """

    def __init__(
        self, dropout: float, prefix: str = "dropout_", params: Optional[RNNParams] = None
    ):
        super().__init__(prefix, params)
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)):
            raise TypeError(f"DropoutCell: dropout probability must be a number, got {dropout!r}")
        if not 0 <= dropout < 1:
            raise ValueError(f"DropoutCell: dropout probability must be in [0, 1), got {dropout}")
        self.dropout = dropout

    @property
    def state_info(self) -> list:
        return []

    def __call__(self, inputs, states):
        if self.dropout > 0:
            inputs = symbol.Dropout(data=inputs, p=self.dropout)
        return inputs, states

    def _unroll(self, length, inputs, begin_state, layout, merge_outputs):
        """One Dropout over a merged input symbol, else one per step."""
        inputs, _ = normalize_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, symbol.Symbol):
            return self(inputs, [])
        return super()._unroll(length, inputs, begin_state, layout, merge_outputs)


class ModifierCell(BaseRNNCell):
    """Base of cells that wrap a cell and change its behaviour, as MXNet's
    ``mx.rnn.ModifierCell``. The wrapped cell is then only used through the modifier.

    Args:
        base_cell: the cell to wrap.
    """

    def __init__(self, base_cell: BaseRNNCell):
        if not isinstance(base_cell, BaseRNNCell):
            raise TypeError(
                f"{type(self).__name__} wraps an mx.rnn cell, got {type(base_cell).__name__}"
            )
        super().__init__()
        base_cell._modified = True
        self.base_cell = base_cell

    @property
    def params(self) -> RNNParams:
        self._own_params = False
        return self.base_cell.params

    @property
    def state_info(self) -> list:
        return self.base_cell.state_info

    def begin_state(self, init_sym: Callable = symbol.zeros, **kwargs: Any) -> list:
        """The wrapped cell's begin states. ``func=`` is accepted as a synonym of
        ``init_sym`` (containers pass ``func``; MXNet 1.9.1 failed on it)."""
        check_not_modified(self)
        init_sym = kwargs.pop("func", init_sym)
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(init_sym, **kwargs)
        finally:
            self.base_cell._modified = True

    def unpack_weights(self, args: dict) -> dict:
        return self.base_cell.unpack_weights(args)

    def pack_weights(self, args: dict) -> dict:
        return self.base_cell.pack_weights(args)

    def __call__(self, inputs, states):
        raise NotImplementedError(f"{type(self).__name__} does not define a single step")


def _steppable(cell: BaseRNNCell) -> Optional[str]:
    """Why ``cell`` cannot be stepped (for zoneout), or None."""
    if cell._not_steppable:
        return cell._not_steppable
    for child in getattr(cell, "_cells", ()):
        reason = _steppable(child)
        if reason:
            return f"{type(cell).__name__} holds a cell that cannot be stepped: {reason}"
    return None


class ZoneoutCell(ModifierCell):
    """Zoneout (Krueger et al. 2016) on a cell's outputs and states, as MXNet's
    ``mx.rnn.ZoneoutCell``: in training each unit keeps its previous value with
    probability ``zoneout_*``; in inference the wrapped cell runs unchanged.

    Args:
        base_cell: a steppable cell.
        zoneout_outputs: probability of keeping the previous output.
        zoneout_states: probability of keeping the previous state.

    Raises:
        TypeError: ``base_cell`` is (or holds) a FusedRNNCell or BidirectionalCell.
    """

    def __init__(
        self, base_cell: BaseRNNCell, zoneout_outputs: float = 0.0, zoneout_states: float = 0.0
    ):
        if isinstance(base_cell, BaseRNNCell):
            reason = _steppable(base_cell)
            if reason:
                raise TypeError(f"ZoneoutCell: {reason}")
        for what, p in (("zoneout_outputs", zoneout_outputs), ("zoneout_states", zoneout_states)):
            if not 0 <= p < 1:
                raise ValueError(f"ZoneoutCell: {what} must be in [0, 1), got {p}")
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self.prev_output = None

    def reset(self) -> None:
        super().reset()
        self.prev_output = None

    def __call__(self, inputs, states):
        cell, p_outputs, p_states = self.base_cell, self.zoneout_outputs, self.zoneout_states
        next_output, next_states = cell(inputs, states)

        def mask(p, like):
            return symbol.Dropout(symbol.ones_like(like), p=p)

        prev_output = self.prev_output if self.prev_output is not None else symbol.zeros((0, 0))
        output = (
            symbol.where(mask(p_outputs, next_output), next_output, prev_output)
            if p_outputs != 0.0
            else next_output
        )
        states = (
            [
                symbol.where(mask(p_states, new_s), new_s, old_s)
                for new_s, old_s in zip(next_states, states)
            ]
            if p_states != 0.0
            else next_states
        )
        self.prev_output = output
        return output, states


class ResidualCell(ModifierCell):
    """Adds the cell's input to its output (Wu et al. 2016), as MXNet's
    ``mx.rnn.ResidualCell``; input and output widths must agree.

    Args:
        base_cell: the wrapped cell.
    """

    def __call__(self, inputs, states):
        output, states = self.base_cell(inputs, states)
        output = symbol.elemwise_add(output, inputs, name=f"{output.name}_plus_residual")
        return output, states

    def _unroll(self, length, inputs, begin_state, layout, merge_outputs):
        """Unroll the wrapped cell, then add the inputs to its outputs."""
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(
                length,
                inputs=inputs,
                begin_state=begin_state,
                layout=layout,
                merge_outputs=merge_outputs,
            )
        finally:
            self.base_cell._modified = True
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, symbol.Symbol)
        inputs, _ = normalize_sequence(length, inputs, layout, merge_outputs)
        if merge_outputs:
            outputs = symbol.elemwise_add(outputs, inputs, name=f"{outputs.name}_plus_residual")
        else:
            outputs = [
                symbol.elemwise_add(o, i, name=f"{o.name}_plus_residual")
                for o, i in zip(outputs, inputs)
            ]
        return outputs, states
