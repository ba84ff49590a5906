"""``RNNParams`` and ``BaseRNNCell``: the symbolic RNN cell protocol of MXNet's ``mx.rnn``.

A cell builds symbols, nothing runs here: ``cell(inputs, states)`` adds one time step
to the graph and ``unroll`` adds ``length`` of them. Node and parameter names follow
MXNet 1.9.1 exactly (``<prefix>i2h_weight``, ``<prefix>t<step>_i2h``,
``<prefix>begin_state_<n>``), so graphs and checkpoints match MXNet's.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from .. import ndarray
from .. import symbol
from ..base import MXNetError

_MODIFIED_MSG = (
    "after applying a modifier cell (DropoutCell, ZoneoutCell, ResidualCell) the "
    "base cell cannot be used directly; call the modifier cell instead"
)


def check_not_modified(cell: "BaseRNNCell") -> None:
    """Raise when a cell wrapped by a modifier cell is used directly."""
    if cell._modified:
        raise MXNetError(f"{type(cell).__name__} {cell._prefix!r}: {_MODIFIED_MSG}")


def normalize_sequence(
    length: Optional[int], inputs: Any, layout: str, merge: Optional[bool]
) -> tuple[Any, int]:
    """Turn ``inputs`` into a list of per-step symbols (``merge=False``), one merged symbol
    (``merge=True``) or leave it as it is (``merge=None``); return it and the time axis.

    Raises:
        ValueError: no inputs, a layout without ``T``, or a list of the wrong length.
        MXNetError: a grouped (multi-output) symbol to be split.
    """
    if inputs is None:
        raise ValueError(
            "unroll(inputs=None) is not supported (MXNet deprecated it): create "
            "the input symbol first, e.g. mx.sym.Variable('data'), and pass it"
        )
    axis = layout.find("T")
    if axis < 0 or "N" not in layout:
        raise ValueError(
            f"layout {layout!r} must name a time axis T and a batch axis N, e.g. 'NTC' or 'TNC'"
        )
    if isinstance(inputs, symbol.Symbol):
        if merge is False:
            if len(inputs.list_outputs()) != 1:
                raise MXNetError(
                    f"unroll got a grouped symbol with outputs {inputs.list_outputs()}; pass "
                    "list(inputs) to unroll one output per step, or a single-output symbol "
                    "to be split along the time axis"
                )
            inputs = list(symbol.split(inputs, axis=axis, num_outputs=length, squeeze_axis=1))
    else:
        if not isinstance(inputs, (list, tuple)):
            raise TypeError(
                f"unroll inputs must be a Symbol or a list of Symbols, got {type(inputs).__name__}"
            )
        if length is not None and len(inputs) != length:
            raise ValueError(
                f"unroll(length={length}) got a list of {len(inputs)} input "
                f"symbols; pass exactly {length}, one per time step"
            )
        if merge is True:
            inputs = symbol.Concat(*[symbol.expand_dims(i, axis=axis) for i in inputs], dim=axis)
    return inputs, axis


def check_length(length: Any) -> None:
    if isinstance(length, bool) or not isinstance(length, int) or length < 1:
        raise TypeError(
            f"unroll length must be a positive int (the number of time steps), got {length!r}"
        )


class RNNParams:
    """Named parameter variables shared between cells, as MXNet's ``mx.rnn.RNNParams``.

    Args:
        prefix: prepended to every variable name this container creates.
    """

    def __init__(self, prefix: str = ""):
        self._prefix = prefix
        self._params: dict[str, symbol.Symbol] = {}

    def get(self, name: str, **kwargs: Any) -> symbol.Symbol:
        """The variable ``prefix + name``, created with ``mx.sym.Variable(**kwargs)`` on
        first use and returned unchanged afterwards."""
        name = self._prefix + name
        if name not in self._params:
            self._params[name] = symbol.Variable(name, **kwargs)
        return self._params[name]


class BaseRNNCell:
    """Abstract symbolic RNN cell, as MXNet's ``mx.rnn.BaseRNNCell``.

    Subclasses give ``state_info`` and ``__call__`` (one step); ``unroll``, ``begin_state``
    and the gate-wise ``unpack_weights``/``pack_weights`` come from here.

    Args:
        prefix: prefix of node names (and of parameter names when ``params`` is None).
        params: an ``RNNParams`` to share weights with other cells; a new one if None.
    """

    #: Why the cell cannot be stepped one time step at a time (for zoneout), or None.
    _not_steppable: Optional[str] = None

    def __init__(self, prefix: str = "", params: Optional[RNNParams] = None):
        if params is None:
            params = RNNParams(prefix)
            self._own_params = True
        else:
            if not isinstance(params, RNNParams):
                raise TypeError(f"params must be an mx.rnn.RNNParams, got {type(params).__name__}")
            self._own_params = False
        self._prefix = prefix
        self._params = params
        self._modified = False
        self.reset()

    def reset(self) -> None:
        """Reset the step counters before building another graph with this cell."""
        self._init_counter = -1
        self._counter = -1
        for cell in getattr(self, "_cells", ()):
            cell.reset()

    def __call__(self, inputs: symbol.Symbol, states: list) -> tuple[symbol.Symbol, list]:
        """Add one time step: ``(output, new_states)`` for ``inputs`` of shape (batch, units)."""
        raise NotImplementedError(f"{type(self).__name__} does not define a single step")

    @property
    def params(self) -> RNNParams:
        """The parameter container (reading it marks the parameters as shared, as MXNet)."""
        self._own_params = False
        return self._params

    @property
    def state_info(self) -> list:
        """Shape (``0`` = batch, inferred later) and ``__layout__`` of each state."""
        raise NotImplementedError(f"{type(self).__name__} does not define state_info")

    @property
    def state_shape(self) -> list:
        """Shapes of the states."""
        return [info["shape"] for info in self.state_info]

    @property
    def _gate_names(self) -> Sequence[str]:
        return ()

    def begin_state(self, func: Callable = symbol.zeros, **kwargs: Any) -> list:
        """Symbols for the initial states, named ``<prefix>begin_state_<n>``.

        Args:
            func: makes each state from ``name=``, ``shape=`` and ``__layout__=``
                (``mx.sym.zeros`` by default; ``mx.sym.Variable`` to feed states as data).
            **kwargs: passed on to ``func`` (e.g. ``dtype``).
        """
        check_not_modified(self)
        states = []
        for info in self.state_info:
            self._init_counter += 1
            if info is not None:
                kwargs.update(info)
            states.append(func(name=f"{self._prefix}begin_state_{self._init_counter}", **kwargs))
        return states

    def unpack_weights(self, args: dict) -> dict:
        """Split each fused ``i2h``/``h2h`` weight and bias into per-gate arrays
        (``<prefix>i2h_f_weight`` ...), as MXNet; returns a new dict."""
        args = dict(args)
        if not self._gate_names:
            return args
        h = self._num_hidden
        for group in ("i2h", "h2h"):
            weight = _pop(args, f"{self._prefix}{group}_weight", self)
            bias = _pop(args, f"{self._prefix}{group}_bias", self)
            for j, gate in enumerate(self._gate_names):
                args[f"{self._prefix}{group}{gate}_weight"] = weight[j * h : (j + 1) * h].copy()
                args[f"{self._prefix}{group}{gate}_bias"] = bias[j * h : (j + 1) * h].copy()
        return args

    def pack_weights(self, args: dict) -> dict:
        """Inverse of ``unpack_weights``: concatenate the per-gate arrays; returns a new dict."""
        args = dict(args)
        if not self._gate_names:
            return args
        for group in ("i2h", "h2h"):
            weight, bias = [], []
            for gate in self._gate_names:
                weight.append(_pop(args, f"{self._prefix}{group}{gate}_weight", self))
                bias.append(_pop(args, f"{self._prefix}{group}{gate}_bias", self))
            args[f"{self._prefix}{group}_weight"] = ndarray.concatenate(weight)
            args[f"{self._prefix}{group}_bias"] = ndarray.concatenate(bias)
        return args

    def unroll(
        self,
        length: int,
        inputs: Any,
        begin_state: Optional[list] = None,
        layout: str = "NTC",
        merge_outputs: Optional[bool] = None,
    ) -> tuple[Any, list]:
        """Unroll the cell over ``length`` time steps.

        Args:
            length: number of steps.
            inputs: one symbol of shape (batch, length, ...) for ``layout='NTC'`` or
                (length, batch, ...) for ``'TNC'``, or a list of ``length`` symbols of
                shape (batch, ...).
            begin_state: initial states (``begin_state()`` if None).
            layout: layout of ``inputs`` and of merged outputs.
            merge_outputs: True: one symbol; False: a list per step; None: whichever is
                natural for the cell.

        Returns:
            ``(outputs, states)``.

        Raises:
            ValueError: a list of inputs whose length is not ``length``, or a bad layout.
        """
        check_length(length)
        self.reset()
        return self._unroll(length, inputs, begin_state, layout, merge_outputs)

    def _unroll(self, length, inputs, begin_state, layout, merge_outputs):
        """``unroll`` after its checks: step the cell ``length`` times (containers, fused
        and modifier cells override this)."""
        inputs, _ = normalize_sequence(length, inputs, layout, False)
        if begin_state is None:
            begin_state = self.begin_state()
        states = begin_state
        outputs = []
        for i in range(length):
            output, states = self(inputs[i], states)
            outputs.append(output)
        outputs, _ = normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _step_name(self) -> str:
        """Count one more step; its node names start ``<prefix>t<step>_`` (MXNet's)."""
        self._counter += 1
        return f"{self._prefix}t{self._counter}_"

    def _get_activation(self, inputs: symbol.Symbol, activation: Any, **kwargs: Any):
        if isinstance(activation, str):
            return symbol.Activation(inputs, act_type=activation, **kwargs)
        return activation(inputs, **kwargs)


def _pop(args: dict, name: str, cell: BaseRNNCell) -> Any:
    if name not in args:
        raise MXNetError(
            f"{type(cell).__name__} {cell._prefix!r}: parameter {name!r} is not in "
            f"the given dict (it has {sorted(args)}); pass the parameters of the "
            "network this cell built"
        )
    return args.pop(name)
