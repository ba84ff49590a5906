"""MXNet's update counts, kept so that a fused step costs O(1) whatever the parameters.

MXNet keeps one count per index per device (``_all_index_update_counts[device][index]``;
``_index_update_count`` is the current device's dict) and ``num_update``, their maximum. The
imperative path counts exactly that way (:meth:`UpdateCounts.count`). A fused step gives
every parameter the same count, so :meth:`UpdateCounts.fused_step` only bumps one pending
counter; the per-name counts are written into the dicts (*flushed*) the next time anyone
reads them or counts imperatively. The tables handed out are the real dicts, so in-place
edits (``opt._index_update_count.update(saved)``) work; handing one out forgets the cached
maximum, which the next fused step recomputes once.

``num_update`` and ``begin_num_update`` stay plain attributes of the optimizer (MXNet's);
the methods here take and return them.
"""

from __future__ import annotations

from typing import Any

# the attributes the counts are pickled and dumped as (MXNet's name first)
_ATTRS = ("_all_index_update_counts", "_cur_dev", "_fused_pending", "_fused_dev", "_fused_names")


class UpdateCounts:
    """Per-device ``{index: count}`` tables plus the fused steps not yet written into them.

    Args:
        tables: ``{device_id: {index: count}}``.
        device: the current device (``Optimizer._set_current_context``).
        names: the ``fused_init`` names, in MXNet's update order.
        pending: fused steps of ``names`` not yet written into ``tables[fused_dev]``.
        fused_dev: the device those pending steps belong to.
    """

    def __init__(self, tables=None, device=0, names=(), pending=0, fused_dev=0):
        self.tables = {0: {}} if tables is None else tables
        self.device = device
        self.names = tuple(names)
        self.pending = pending
        self.fused_dev = fused_dev
        self.base_t = None  # max count over ``names`` before the pending steps
        self.tables.setdefault(device, {})

    @classmethod
    def traced(cls, t: Any) -> UpdateCounts:
        """Counts in which every index has the (traced) count ``t``."""
        return cls({0: TracedCounts(t)})

    # ------------------------------------------------------------------ reading
    def flush(self, begin: int) -> None:
        """Write the pending fused steps into the per-name counts; forget the maximum."""
        if self.pending:
            table = self.tables.setdefault(self.fused_dev, {})
            for n in self.names:
                table[n] = table.get(n, begin) + self.pending
            self.pending = 0
        self.base_t = None

    def all(self, begin: int) -> dict:
        """``{device_id: {index: count}}``, pending fused steps included."""
        self.flush(begin)
        return self.tables

    def table(self, begin: int) -> dict:
        """The current device's ``{index: count}``."""
        return self.all(begin).setdefault(self.device, {})

    # ------------------------------------------------------------------ counting
    def set_device(self, device: int, begin: int) -> None:
        self.flush(begin)
        self.tables.setdefault(device, {})
        self.device = device

    def count(self, indices: list, begin: int, num_update: int) -> int:
        """Increment each index's count (MXNet's rule); returns the new ``num_update``."""
        table = self.table(begin)
        for idx in indices:
            c = table.get(idx, begin) + 1
            table[idx] = c
            if c > num_update:
                num_update = c
        return num_update

    def fused_step(self, names: Any, begin: int, num_update: int) -> tuple[int, int]:
        """Count one fused step of ``names`` (None: the ``fused_init`` names, in O(1); other
        names one by one). Returns ``(t, num_update)``: the step's count (the max over
        ``names``) and the new ``num_update``."""
        if names is not None and names is not self.names and tuple(names) != self.names:
            names = list(names)
            num_update = self.count(names, begin, num_update)
            table = self.table(begin)
            return max((table[n] for n in names), default=num_update), num_update
        if not self.names:  # nothing to count (MXNet's Updater would not count either)
            return num_update, num_update
        if self.base_t is None or self.fused_dev != self.device:
            self.flush(begin)
            table = self.tables.setdefault(self.device, {})
            self.base_t = max(table.get(n, begin) for n in self.names)
            self.fused_dev = self.device
        self.pending += 1
        t = self.base_t + self.pending
        return t, max(t, num_update)

    # ------------------------------------------------------------------ pickling
    def to_attrs(self, begin: int) -> dict:
        """The attributes the counts are pickled and dumped as (flushed)."""
        self.flush(begin)
        return dict(zip(_ATTRS, (self.tables, self.device, 0, self.fused_dev, self.names)))

    @classmethod
    def from_attrs(cls, d: dict) -> UpdateCounts:
        """Take the counts out of an unpickled or decoded ``__dict__`` (older files too)."""
        d.pop("_index_update_count", None)  # MXNet's attribute, a view now
        d.pop("_fused_base_t", None)
        tables, device, pending, fused_dev, names = (d.pop(k, None) for k in _ATTRS)
        return cls(tables, device or 0, names or (), pending or 0, fused_dev or 0)


class TracedCounts(dict):
    """``_index_update_count`` while a user's update is traced: every index has count ``t``."""

    def __init__(self, t):
        super().__init__()
        self.t = t

    def __missing__(self, key):
        return self.t

    def get(self, key, default=None):
        return self.t

    def __contains__(self, key):
        return True
