"""Checks of what a Module is called with, for mistakes MXNet reports with an unrelated
error (issue 26): a string for the symbol, an array for the data batch."""

from __future__ import annotations

from typing import Any

__all__ = ["check_symbol", "check_data_batch"]


def check_symbol(symbol: Any, owner: str = "Module") -> None:
    """``symbol`` must be a Symbol (MXNet: ``'str' object has no attribute
    'list_arguments'``)."""
    if hasattr(symbol, "list_arguments") and hasattr(symbol, "list_outputs"):
        return
    if isinstance(symbol, str):
        raise TypeError(
            f"{owner}(symbol=...) needs an mx.sym.Symbol, got the string {symbol!r}; build the "
            "network with mx.sym (e.g. net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected("
            "mx.sym.Variable('data'), num_hidden=10), name='softmax')) and pass net, or load "
            f"a saved one: {owner}(mx.sym.load('<prefix>-symbol.json')) or "
            "mx.mod.Module.load('<prefix>', epoch)"
        )
    raise TypeError(
        f"{owner}(symbol=...) needs an mx.sym.Symbol, got {type(symbol).__name__}; build the "
        "network with mx.sym or load it with mx.sym.load('<prefix>-symbol.json')"
    )


def check_data_batch(data_batch: Any, method: str = "forward") -> None:
    """``data_batch`` must be a DataBatch (or a list of them, pre-sliced), not an array
    (MXNet reads the array's ``.data`` buffer and fails far from the call)."""
    if isinstance(data_batch, list) or (
        hasattr(data_batch, "data") and isinstance(data_batch.data, (list, tuple))
    ):
        return
    shape = getattr(data_batch, "shape", None)
    kind = f"{type(data_batch).__module__.split('.')[0]}.{type(data_batch).__name__}"
    got = f"a {kind}" + (f" of shape {tuple(shape)}" if shape is not None else "")
    wrap = "mx.nd.array(x)" if not hasattr(data_batch, "asnumpy") else "x"
    raise TypeError(
        f"Module.{method} needs a DataBatch, got {got}; wrap the arrays: "
        f"mod.{method}(mx.io.DataBatch(data=[{wrap}], label=[...]), is_train=...) "
        "(label only for training; one array per data name, in data_names order)"
    )
