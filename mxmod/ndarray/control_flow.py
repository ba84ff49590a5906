"""``mx.nd.contrib.foreach``, ``while_loop`` and ``cond``: MXNet's control flow, run
imperatively as plain Python loops over NDArrays (each step's operators are mxmod's
compiled ``mx.nd`` programs).

Nested lists of NDArrays are accepted wherever MXNet accepts them and step outputs come
back in the body's nesting. ``while_loop`` pads the outputs of the steps it did not run
(up to ``max_iterations``) with zeros; MXNet leaves that memory uninitialised.
"""

from __future__ import annotations

from typing import Any, Callable

from .ndarray import NDArray
from .creation import zeros
from .shape_ops import concat, stack

__all__ = ["foreach", "while_loop", "cond"]


def _flatten(value: Any, what: str) -> tuple[list, Any]:
    """The NDArrays of a nested list and its nesting (``_regroup`` rebuilds it)."""
    if value is None:
        return [], None
    if isinstance(value, NDArray):
        return [value], 0
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{what} must be an NDArray or a nested list of NDArrays, got {value!r}")
    flat, fmt = [], []
    for item in value:
        items, item_fmt = _flatten(item, what)
        flat.extend(items)
        fmt.append(item_fmt)
    return flat, fmt


def _regroup(flat: list, fmt: Any) -> tuple[Any, list]:
    if fmt is None:
        return [], flat
    if fmt == 0:
        return flat[0], flat[1:]
    out = []
    for item_fmt in fmt:
        item, flat = _regroup(flat, item_fmt)
        out.append(item)
    return out, flat


def foreach(body: Callable, data: Any, init_states: Any, name: str = "foreach"):
    """Run ``body(data[i], states) -> (outputs, states)`` over axis 0 of ``data`` (an NDArray
    or a nested list of them); returns the step outputs stacked on a new axis 0 and the
    final states."""
    flat_data, data_fmt = _flatten(data, "foreach data")
    _flatten(init_states, "foreach init_states")
    if not flat_data:
        raise ValueError("foreach: data must hold at least one NDArray")
    steps = flat_data[0].shape[0]
    if any(d.shape[0] != steps for d in flat_data):
        shapes = [d.shape for d in flat_data]
        raise ValueError(f"foreach: every data array needs the same length on axis 0, got {shapes}")
    states, per_step, out_fmt = init_states, [], None
    for i in range(steps):
        step_in, _ = _regroup([d[i] for d in flat_data], data_fmt)
        outs, states = body(step_in, states)
        flat_outs, out_fmt = _flatten(outs, "foreach body output")
        per_step.append(flat_outs)
    stacked = [stack(*column, axis=0) for column in zip(*per_step)]
    outputs, _ = _regroup(stacked, out_fmt) if per_step else ([], [])
    return outputs, states


def _scalar_bool(value: Any, what: str) -> bool:
    if isinstance(value, NDArray):
        if value.size != 1:
            raise ValueError(
                f"{what} must be a single value, got an NDArray of shape {value.shape}"
            )
        value = value.asscalar()
    return bool(value)


def while_loop(
    cond: Callable,
    func: Callable,
    loop_vars: Any,
    max_iterations: Any = None,
    name: str = "while_loop",
):
    """While ``cond(*loop_vars)`` holds and fewer than ``max_iterations`` steps ran:
    ``step_output, loop_vars = func(*loop_vars)``. Returns the step outputs stacked on a
    new axis 0 (``max_iterations`` long, zero-padded) and the final loop variables."""
    if max_iterations is None:
        raise ValueError("while_loop: max_iterations must be given (the outputs' length)")
    max_iterations = int(
        max_iterations.asscalar() if isinstance(max_iterations, NDArray) else max_iterations
    )
    single = isinstance(loop_vars, NDArray)
    loop_vars = [loop_vars] if single else list(loop_vars)
    if not loop_vars:
        raise ValueError("while_loop: loop_vars must hold at least one NDArray")
    per_step, out_fmt = [], None
    while len(per_step) < max_iterations and _scalar_bool(
        cond(*loop_vars), "while_loop cond's result"
    ):
        step_out, new_vars = func(*loop_vars)
        new_vars = [] if new_vars is None else new_vars
        new_vars = [new_vars] if isinstance(new_vars, NDArray) else list(new_vars)
        if len(new_vars) != len(loop_vars):
            raise ValueError(
                f"while_loop: func returned {len(new_vars)} loop variables for {len(loop_vars)}"
            )
        flat, out_fmt = _flatten(
            list(step_out) if isinstance(step_out, tuple) else step_out, "while_loop step output"
        )
        if per_step and len(flat) != len(per_step[0]):
            raise ValueError("while_loop: every step must return the same number of outputs")
        per_step.append(flat)
        loop_vars = new_vars
    stacked = []
    for column in zip(*per_step):
        rows = [x.expand_dims(0) for x in column]
        missing = max_iterations - len(rows)
        if missing:
            rows.append(
                zeros((missing,) + column[0].shape, ctx=column[0].context, dtype=column[0].dtype)
            )
        stacked.append(concat(*rows, dim=0))
    outputs = _regroup(stacked, out_fmt)[0] if out_fmt is not None else []
    return outputs, (loop_vars[0] if single else loop_vars)


def cond(pred: Any, then_func: Callable, else_func: Callable, name: str = "cond"):
    """``then_func()`` if ``pred`` (a number or a one-element NDArray) holds, else
    ``else_func()``."""
    return then_func() if _scalar_bool(pred, "cond's pred") else else_func()
