"""``mx.mon.Monitor``: statistics of a network's intermediate values every few batches.

Relation to MXNet: forward outputs of every node (``fc1_output``, ``relu1_output``...),
arguments and aux states are reported with MXNet's names and formatting. A batch that
ran backward (Module or Executor) also reports each node's backward entries
(``<node>_backward_output<i>``), recomputed for it (``executor/monitor_taps.py``).
"""

from __future__ import annotations

import logging
import math
import re
from typing import Any, Callable, Optional

import jax.numpy as jnp

from .executor.monitor_taps import in_run_order
from .ndarray import NDArray


def _rms(x: NDArray) -> NDArray:
    data = x._data.astype(jnp.float32)
    return NDArray(jnp.reshape(jnp.linalg.norm(data.ravel()) / math.sqrt(max(data.size, 1)), (1,)))


class Monitor:
    """Collects ``stat_func`` of matching arrays every ``interval`` batches."""

    def __init__(
        self,
        interval: int,
        stat_func: Optional[Callable] = None,
        pattern: str = ".*",
        sort: bool = False,
        monitor_all: bool = False,
    ):
        if interval < 1:
            raise ValueError(f"Monitor interval must be >= 1, got {interval}")
        self.interval = interval
        self.stat_func = stat_func or _rms
        self.re_prog = re.compile(pattern)
        self.sort = sort
        self.monitor_all = monitor_all
        self.step = 0
        self.activated = False
        self.queue: list = []
        self.exes: list = []

    def stat_helper(self, name: str, array: Any) -> None:
        if not self.activated or not self.re_prog.match(name):
            return
        arr = array if isinstance(array, NDArray) else NDArray(array)
        self.queue.append((self.step, name, self.stat_func(arr)))

    def install(self, exe) -> None:
        """Watch an Executor or a Module's executor group."""
        exe.set_monitor_callback(self.stat_helper, self.monitor_all)
        self.exes.append(exe)

    def tic(self) -> None:
        if self.step % self.interval == 0:
            self.queue = []
            self.activated = True
        self.step += 1

    def toc(self) -> list:
        if not self.activated:
            return []
        for exe in self.exes:
            # MXNet's order: node outputs as they ran (queued during the batch), then the
            # arguments in list_arguments() order and the aux states
            internals = getattr(exe, "monitor_internals", None)
            if internals is not None:
                for name, arr in _as_run(internals()):
                    self.stat_helper(name, arr)
            symbol = getattr(exe, "symbol", None)
            symbol = getattr(exe, "_symbol", None) if symbol is None else symbol
            rank = {} if symbol is None else {n: i for i, n in enumerate(symbol.list_arguments())}
            args = sorted(exe.arg_dict.items(), key=lambda kv: rank.get(kv[0], len(rank)))
            for name, arr in args + list(exe.aux_dict.items()):
                self.stat_helper(name, arr)
        self.activated = False
        res = []
        queue = sorted(self.queue, key=lambda q: q[1]) if self.sort else self.queue
        for step, name, value in queue:
            values = value if isinstance(value, list) else [value]
            text = ""
            for v in values:
                if v.shape == (1,):
                    text += str(v.asscalar()) + "\t"
                else:
                    text += str(v.asnumpy()) + "\t"
            res.append((step, name, text))
        self.queue = []
        return res

    def toc_print(self) -> None:
        for step, name, value in self.toc():
            logging.info("Batch: {:7d} {:30s} {:s}".format(step, name, value))


__all__ = ["Monitor"]


def _as_run(items: list) -> list:
    """Forward outputs in graph order, then the backward nodes' outputs in the order the
    backward pass runs them."""
    forward = [it for it in items if "_backward_output" not in it[0]]
    return forward + in_run_order([it for it in items if "_backward_output" in it[0]])
