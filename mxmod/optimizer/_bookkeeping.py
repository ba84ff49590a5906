"""Host bookkeeping of an Optimizer whose per-step cost does not grow with the parameters.

* **Update counts.** MXNet keeps one count per index per device
  (``_all_index_update_counts[device][index]``; ``_index_update_count`` is the current
  device's dict) and ``num_update``, their maximum. The imperative path counts exactly that
  way. A fused step gives every parameter the same count, so :meth:`_count_fused_step` only
  bumps one pending counter; the per-name counts are written into the dicts (*flushed*) the
  next time anyone reads ``_index_update_count``/``_all_index_update_counts`` or counts
  imperatively. Both properties return the real dicts, so in-place edits
  (``opt._index_update_count.update(saved)``) work; handing one out forgets the cached
  maximum, which the next fused step recomputes once.
* **Settings version.** ``fused_signature()`` is cached; any attribute assignment bumps
  ``_settings_version`` (except the per-step attributes in ``_STEP_ATTRS`` and a class's
  ``_step_attrs``), and ``lr_mult``/``wd_mult``/``idx2name`` are :class:`TrackedDict` s whose
  in-place edits (``opt.lr_mult['fc_weight'] = 2``) bump their own version. Objects in
  ``param_dict`` (gluon parameters) are re-read whenever ``param_dict`` is non-empty.
"""

from __future__ import annotations

from typing import Any

_STEP_ATTRS = frozenset(
    {
        "lr",
        "num_update",
        "_cur_dev",
        "_fused_pending",
        "_fused_base_t",
        "_fused_dev",
        "_sig_cache",
        "_jit_fn",
        "_settings_version",
        "_custom_probe",
    }
)
TRACKED = ("lr_mult", "wd_mult", "idx2name")


class TrackedDict(dict):
    """A dict that counts its in-place modifications (``_version``)."""

    _version = 0

    def _bump(self) -> None:
        self._version = self._version + 1

    def __setitem__(self, k, v):
        super().__setitem__(k, v)
        self._bump()

    def __delitem__(self, k):
        super().__delitem__(k)
        self._bump()

    def __ior__(self, other):
        out = super().__ior__(other)
        self._bump()
        return out

    def update(self, *a, **kw):
        super().update(*a, **kw)
        self._bump()

    def setdefault(self, k, v=None):
        self._bump()
        return super().setdefault(k, v)

    def pop(self, *a):
        self._bump()
        return super().pop(*a)

    def popitem(self):
        self._bump()
        return super().popitem()

    def clear(self):
        super().clear()
        self._bump()

    def __reduce__(self):  # pickles as a plain dict; the optimizer re-wraps it
        return (dict, (dict(self),))


class BookkeepingMixin:
    """Update counts and the settings version of :class:`~mxmod.optimizer.Optimizer`."""

    _step_attrs: frozenset = frozenset()  # a subclass's per-step attributes (not settings)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in TRACKED and type(value) is dict:
            value = TrackedDict(value)
        object.__setattr__(self, name, value)
        if name not in _STEP_ATTRS and name not in self._step_attrs:
            d = self.__dict__
            d["_settings_version"] = d.get("_settings_version", 0) + 1

    def _settings_key(self) -> tuple:
        """Changes whenever a setting the fused signature may read changes (O(1) unless
        ``param_dict`` is used)."""
        d = self.__dict__
        key = (d.get("_settings_version", 0),) + tuple(
            getattr(d.get(k), "_version", -1) for k in TRACKED
        )
        pd = d.get("param_dict")
        if pd:
            key += tuple(
                (k, getattr(v, "lr_mult", None), getattr(v, "wd_mult", None)) for k, v in pd.items()
            )
        return key

    # ------------------------------------------------------------------ counts storage
    def _init_counts(self) -> None:
        d = self.__dict__
        d["_all_index_update_counts"] = {0: {}}
        d["_cur_dev"] = 0
        d["_fused_pending"] = 0  # fused steps not yet written into the per-name dicts
        d["_fused_base_t"] = None  # max count over the fused names before those steps
        d["_fused_dev"] = 0

    @property
    def _all_index_update_counts(self) -> dict:
        """``{device_id: {index: count}}`` (MXNet's attribute), pending fused steps included."""
        self._flush_counts()
        return self.__dict__["_all_index_update_counts"]

    @_all_index_update_counts.setter
    def _all_index_update_counts(self, value: dict) -> None:
        self._flush_counts()
        self.__dict__["_all_index_update_counts"] = value

    @property
    def _index_update_count(self) -> dict:
        """The current device's ``{index: count}`` (MXNet's attribute)."""
        counts = self._all_index_update_counts
        return counts.setdefault(self.__dict__.get("_cur_dev", 0), {})

    @_index_update_count.setter
    def _index_update_count(self, value: dict) -> None:
        self._all_index_update_counts[self.__dict__.get("_cur_dev", 0)] = value

    def _flush_counts(self) -> None:
        """Write pending fused steps into the per-name counts; forget the cached maximum."""
        d = self.__dict__
        pending = d.get("_fused_pending", 0)
        if pending:
            counts = d["_all_index_update_counts"].setdefault(d["_fused_dev"], {})
            begin = self.begin_num_update
            for n in d.get("_fused_names", ()):
                counts[n] = counts.get(n, begin) + pending
            d["_fused_pending"] = 0
        d["_fused_base_t"] = None

    # ------------------------------------------------------------------ counting
    def _set_current_context(self, device_id: int) -> None:
        """Switch the per-device update-count dict (replicas do not inflate counts)."""
        self._flush_counts()
        self.__dict__["_all_index_update_counts"].setdefault(device_id, {})
        self._cur_dev = device_id

    def _update_count(self, index: Any) -> None:
        """Increment the count of each index (MXNet's rule); ``num_update`` is the max."""
        counts = self._index_update_count
        begin = self.begin_num_update
        num = self.num_update
        for idx in index if isinstance(index, (list, tuple)) else [index]:
            c = counts.get(idx, begin) + 1
            counts[idx] = c
            if c > num:
                num = c
        self.num_update = num

    def _count_fused_step(self, names: Any) -> int:
        """Count one fused step of ``names`` (default: the ``fused_init`` names): O(1) for the
        ``fused_init`` names. Returns the step's count ``t`` (the max over ``names``)."""
        d = self.__dict__
        fused = d.get("_fused_names", ())
        if names is not None and names is not fused and tuple(names) != fused:
            names = list(names)  # other names: count each exactly (O(len(names)))
            self._update_count(names)
            counts = self._index_update_count
            return max((counts[n] for n in names), default=self.num_update)
        if not fused:  # nothing to count (MXNet's Updater would not count either)
            return self.num_update
        if d.get("_fused_base_t") is None or d.get("_fused_dev") != d.get("_cur_dev", 0):
            self._flush_counts()
            counts = d["_all_index_update_counts"].setdefault(d.get("_cur_dev", 0), {})
            begin = self.begin_num_update
            d["_fused_base_t"] = max(counts.get(n, begin) for n in fused)
            d["_fused_dev"] = d.get("_cur_dev", 0)
        d["_fused_pending"] = d.get("_fused_pending", 0) + 1
        t = d["_fused_base_t"] + d["_fused_pending"]
        if t > self.num_update:
            self.num_update = t
        return t

    def _restore_bookkeeping(self) -> None:
        """After unpickling/decoding: plain dicts back to tracked ones, counters present."""
        d = self.__dict__
        for k in TRACKED:
            if type(d.get(k)) is dict:
                d[k] = TrackedDict(d[k])
        d.setdefault("_all_index_update_counts", {0: {}})
        d.setdefault("_cur_dev", 0)
        d["_all_index_update_counts"].setdefault(d["_cur_dev"], {})
        d.setdefault("_fused_pending", 0)
        d.setdefault("_fused_dev", 0)
        d["_fused_base_t"] = None
        d.pop("_sig_cache", None)
