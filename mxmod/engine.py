"""``mx.engine``: MXNet's bulk-execution setting.

MXNet's engine can group up to ``size`` imperative operators into one scheduled unit.
mxmod already runs every Module step and every ``mx.nd`` operator as a compiled XLA
program, so the size changes no result and no schedule; it is kept (and returned) as MXNet
keeps it, so programs that save and restore it work unchanged.
"""

from __future__ import annotations

import contextlib

__all__ = ["set_bulk_size", "bulk"]

_bulk_size = 0  # what MXNet's first set_bulk_size returns


def set_bulk_size(size: int) -> int:
    """Set the bulk size (operators grouped per engine push); returns the previous one."""
    global _bulk_size
    if int(size) != size or size < 0:
        raise ValueError(f"set_bulk_size: size must be a non-negative integer, got {size!r}")
    previous, _bulk_size = _bulk_size, int(size)
    return previous


@contextlib.contextmanager
def bulk(size: int):
    """``with mx.engine.bulk(size):`` sets the bulk size inside the block, then restores it."""
    previous = set_bulk_size(size)
    try:
        yield
    finally:
        set_bulk_size(previous)
