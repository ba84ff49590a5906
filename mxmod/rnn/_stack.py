"""Cells made of cells: ``SequentialRNNCell`` (stacked layers) and ``BidirectionalCell``
(MXNet 1.9.1's ``mx.rnn`` containers, same graphs and names)."""

from __future__ import annotations

from typing import Any, Optional

from .. import symbol
from ..base import MXNetError
from ._base_cell import (
    BaseRNNCell,
    RNNParams,
    check_not_modified,
    normalize_sequence,
)


def _check_cell(cell: Any, owner: str) -> None:
    if not isinstance(cell, BaseRNNCell):
        raise TypeError(f"{owner} takes mx.rnn cells, got {type(cell).__name__}")


def _share_params(owner: BaseRNNCell, cells: list, override: bool, what: str) -> None:
    if override:
        for cell in cells:
            if not cell._own_params:
                raise ValueError(
                    f"{what}: give params= to the {what} or to its child cells, "
                    "not both (this child cell already has shared params)"
                )
            cell.params._params.update(owner.params._params)
    for cell in cells:
        owner.params._params.update(cell.params._params)


class _ContainerCell(BaseRNNCell):
    """Base of the containers: states and weights are those of ``self._cells``, in order."""

    @property
    def state_info(self) -> list:
        return [info for c in self._cells for info in c.state_info]

    def begin_state(self, **kwargs: Any) -> list:
        check_not_modified(self)
        return [s for c in self._cells for s in c.begin_state(**kwargs)]

    def unpack_weights(self, args: dict) -> dict:
        for cell in self._cells:
            args = cell.unpack_weights(args)
        return args

    def pack_weights(self, args: dict) -> dict:
        for cell in self._cells:
            args = cell.pack_weights(args)
        return args


class SequentialRNNCell(_ContainerCell):
    """A stack of cells, each feeding the next, as MXNet's ``mx.rnn.SequentialRNNCell``.

    Args:
        params: an ``RNNParams`` whose variables the child cells take over, or None.
    """

    def __init__(self, params: Optional[RNNParams] = None):
        super().__init__(prefix="", params=params)
        self._override_cell_params = params is not None
        self._cells: list[BaseRNNCell] = []

    def add(self, cell: BaseRNNCell) -> None:
        """Append ``cell``; it takes the previous cell's outputs (or the raw inputs) as input.

        Raises:
            ValueError: both this stack and ``cell`` were given ``params``.
        """
        _check_cell(cell, "SequentialRNNCell.add")
        _share_params(self, [cell], self._override_cell_params, "SequentialRNNCell")
        self._cells.append(cell)

    def __call__(self, inputs, states):
        self._counter += 1
        next_states = []
        p = 0
        for cell in self._cells:
            if isinstance(cell, BidirectionalCell):
                raise MXNetError(
                    "a SequentialRNNCell holding a BidirectionalCell cannot be "
                    "stepped; use unroll()"
                )
            n = len(cell.state_info)
            inputs, state = cell(inputs, states[p : p + n])
            p += n
            next_states.extend(state)
        return inputs, next_states

    def _unroll(self, length, inputs, begin_state, layout, merge_outputs):
        """Unroll every layer in turn (inner layers with ``merge_outputs=None``)."""
        if begin_state is None:
            begin_state = self.begin_state()
        p = 0
        next_states = []
        last = len(self._cells) - 1
        for i, cell in enumerate(self._cells):
            n = len(cell.state_info)
            inputs, states = cell.unroll(
                length,
                inputs=inputs,
                begin_state=begin_state[p : p + n],
                layout=layout,
                merge_outputs=None if i < last else merge_outputs,
            )
            p += n
            next_states.extend(states)
        return inputs, next_states


class BidirectionalCell(_ContainerCell):
    """Runs ``l_cell`` forwards and ``r_cell`` backwards over the sequence and concatenates
    their outputs, as MXNet's ``mx.rnn.BidirectionalCell``. It can only be unrolled.

    Args:
        l_cell: the forward cell.
        r_cell: the backward cell.
        params: an ``RNNParams`` for both children, or None.
        output_prefix: prefix of the ``Concat`` node names (``<prefix>out`` / ``<prefix>t<i>``).
    """

    _not_steppable = (
        "BidirectionalCell does not support zoneout since it cannot be stepped; wrap "
        "the cells underneath in ZoneoutCell instead"
    )

    def __init__(
        self,
        l_cell: BaseRNNCell,
        r_cell: BaseRNNCell,
        params: Optional[RNNParams] = None,
        output_prefix: str = "bi_",
    ):
        super().__init__("", params=params)
        _check_cell(l_cell, "BidirectionalCell")
        _check_cell(r_cell, "BidirectionalCell")
        self._output_prefix = output_prefix
        self._override_cell_params = params is not None
        _share_params(self, [l_cell, r_cell], self._override_cell_params, "BidirectionalCell")
        self._cells = [l_cell, r_cell]

    def __call__(self, inputs, states):
        raise NotImplementedError("BidirectionalCell cannot be stepped; use unroll()")

    def _unroll(self, length, inputs, begin_state, layout, merge_outputs):
        """Unroll both directions; states are ``[l_states, r_states]`` (nested, as MXNet)."""
        inputs, axis = normalize_sequence(length, inputs, layout, False)
        if begin_state is None:
            begin_state = self.begin_state()
        l_cell, r_cell = self._cells
        n_l = len(l_cell.state_info)
        l_outputs, l_states = l_cell.unroll(
            length,
            inputs=inputs,
            begin_state=begin_state[:n_l],
            layout=layout,
            merge_outputs=merge_outputs,
        )
        r_outputs, r_states = r_cell.unroll(
            length,
            inputs=list(reversed(inputs)),
            begin_state=begin_state[n_l:],
            layout=layout,
            merge_outputs=merge_outputs,
        )
        if merge_outputs is None:
            merge_outputs = isinstance(l_outputs, symbol.Symbol) and isinstance(
                r_outputs, symbol.Symbol
            )
            if not merge_outputs:
                l_outputs = _as_steps(l_outputs, axis, length)
                r_outputs = _as_steps(r_outputs, axis, length)
        if merge_outputs:
            l_outputs = [l_outputs]
            r_outputs = [symbol.reverse(r_outputs, axis=axis)]
        else:
            r_outputs = list(reversed(r_outputs))
        outputs = [
            symbol.Concat(
                l_o,
                r_o,
                dim=1 + int(merge_outputs),
                name=(
                    f"{self._output_prefix}out" if merge_outputs else f"{self._output_prefix}t{i}"
                ),
            )
            for i, (l_o, r_o) in enumerate(zip(l_outputs, r_outputs))
        ]
        if merge_outputs:
            outputs = outputs[0]
        return outputs, [l_states, r_states]


def _as_steps(outputs: Any, axis: int, length: int) -> list:
    if isinstance(outputs, symbol.Symbol):
        return list(symbol.SliceChannel(outputs, axis=axis, num_outputs=length, squeeze_axis=1))
    return outputs
