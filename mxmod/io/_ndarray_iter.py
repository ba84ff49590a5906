"""NDArrayIter: batches over in-memory arrays, as ``mxnet.io.NDArrayIter`` (MXNet 1.9.1).

Arrays are kept on the host as numpy; each batch is sliced (or gathered, when shuffled)
on the host and becomes an NDArray with one batched ``device_put``. Once a Module places
the iterator (``place_on``, called by ``fit``/``score``), data that fits
``NDArrayIter.device_data_limit`` also lives on the device(s) and batches are gathered
there (``_device_sources.py``): no host-to-device copy per batch.
"""

from __future__ import annotations


import numpy as np
from jax.sharding import SingleDeviceSharding

from ..base import MXNetError
from ..context import current_context
from ..ndarray import NDArray
from ._device_sources import DeviceSources, as_sharding
from ._host_csr import HostCsr
from ._ndarray_sources import named_inputs, send, to_host, to_nd
from .io import DataBatch, DataDesc, DataIter

__all__ = ["NDArrayIter"]

_HANDLES = ("pad", "discard", "roll_over")


class NDArrayIter(DataIter):
    """Iterate over in-memory arrays, as ``mxnet.io.NDArrayIter``.

    Inputs are an array, a list of arrays (named ``data_name`` or ``_<i>_<data_name>``) or
    a dict; sources are ordered by name. numpy inputs become float32, NDArray inputs keep
    their dtype. ``shuffle`` re-shuffles at construction and at each ``reset()``, drawing
    the same numbers MXNet draws from numpy's global RNG: the iterator snapshots that RNG
    when it is built and shuffles from the snapshot (advancing the global RNG alike), so
    epoch ``e``'s order is a function of the seed and ``e`` alone, and
    :meth:`set_epoch` (mxmod addition, called by ``fit(begin_epoch=k)``) replays it after a
    resume. ``last_batch_handle``: ``'pad'`` fills the last batch from the start and
    reports ``pad``; ``'discard'`` drops it; ``'roll_over'`` carries it into the next
    epoch's first batch (whose ``pad`` reports, as MXNet, the number of carried samples).
    csr inputs (``CSRNDArray``, ``scipy.sparse.csr_matrix``) need ``'discard'`` and, as in
    MXNet 1.9.1, give **dense** batches (MXNet slices them through a dense fallback); the
    ``data``/``label`` properties keep them as CSRNDArrays. A Module feeding such a batch
    to a ``Variable(stype='csr')`` converts it back to csr.

    Differences from MXNet: the sample count, shuffling and padding all use the layout's
    batch axis (MXNet mixes axis 0 in for layouts whose ``N`` is not first); bad
    arguments raise instead of misbehaving; h5py inputs are not supported;
    numpy draws made by other code between two ``reset()`` calls do not change the order
    (in MXNet they do); ``seed`` is an mxmod addition; :meth:`place_on` (mxmod addition,
    called by ``fit``/``score``) keeps data of up to ``device_data_limit`` bytes on the
    device and gathers each batch there (the batches are the same).

    Args:
        data: the input arrays.
        label: the label arrays (optional).
        batch_size: samples per batch.
        shuffle: shuffle the samples each epoch.
        last_batch_handle: ``'pad'``, ``'discard'`` or ``'roll_over'``.
        data_name: name of a single (or list) data input.
        label_name: name of a single (or list) label input.
        layout: axis letters of every array; ``'N'`` marks the batch axis.
        seed: (mxmod addition) an int seeds a private shuffle RNG and leaves numpy's
            global RNG alone; None (default) snapshots the global RNG, as MXNet uses it.

    Raises:
        ValueError: missing data, bad ``batch_size``/``last_batch_handle``/``layout``, or
            arrays with different numbers of samples.
        TypeError: inputs that are not arrays.
    """

    #: Bytes of data (all sources, one copy per device) that ``place_on`` keeps on the
    #: device(s); bigger data stays on the host and each batch is copied over.
    device_data_limit = 1 << 30
    #: Host-built batches after which an iterator never placed (a hand-written training
    #: loop) keeps its data on the current context's device too, when that is a CPU: the
    #: copy costs no accelerator memory, and one compile pays for itself by then.
    auto_place_after = 256

    def __init__(
        self,
        data,
        label=None,
        batch_size=1,
        shuffle=False,
        last_batch_handle="pad",
        data_name="data",
        label_name="softmax_label",
        layout="NCHW",
        seed=None,
    ):
        if (
            isinstance(batch_size, bool)
            or not isinstance(batch_size, (int, np.integer))
            or batch_size <= 0
        ):
            raise ValueError(f"NDArrayIter batch_size must be a positive int, got {batch_size!r}")
        if last_batch_handle not in _HANDLES:
            raise ValueError(
                f"NDArrayIter last_batch_handle must be one of {list(_HANDLES)}, "
                f"got {last_batch_handle!r}"
            )
        if not isinstance(layout, str) or "N" not in layout:
            raise ValueError(
                f"NDArrayIter layout must be a string with an 'N' batch axis, got {layout!r}"
            )
        super().__init__(int(batch_size))
        named = named_inputs(data, allow_empty=False, default_name=data_name)
        named_label = named_inputs(label, allow_empty=True, default_name=label_name)
        self._data = sorted((k, to_host(k, v)) for k, v in named.items())
        self._label = sorted((k, to_host(k, v)) for k, v in named_label.items())
        # NDArrays whose in-place writes reach later batches, as MXNet's iterator reads
        # them: the caller's (until a shuffle copies them) and those data_list handed out
        self._watched: list = []
        if not shuffle:
            given = [named[k] for k, _ in self._data] + [named_label[k] for k, _ in self._label]
            self._watch(given, None)
        self.layout = layout
        self._axis = axis = layout.find("N")
        self._has_csr = any(isinstance(v, HostCsr) for _, v in self._data + self._label)
        if self._has_csr and last_batch_handle != "discard":
            raise NotImplementedError(
                "`NDArrayIter` only supports ``CSRNDArray`` with `last_batch_handle` set to "
                f"`discard` (got {last_batch_handle!r}); pass last_batch_handle='discard'"
            )
        if self._has_csr and axis != 0:
            raise ValueError(
                f"NDArrayIter: a csr input needs the batch axis first; layout {layout!r} puts "
                f"it at {axis}"
            )
        for name, arr in self._data + self._label:
            if arr.ndim <= axis:
                raise ValueError(
                    f"NDArrayIter: {name!r} has shape {arr.shape} but layout {layout!r} puts "
                    f"the batch axis at {axis}"
                )
        self.num_data = self._data[0][1].shape[axis]
        for name, arr in self._data + self._label:
            if arr.shape[axis] != self.num_data:
                raise ValueError(
                    f"NDArrayIter: {name!r} has {arr.shape[axis]} samples but "
                    f"{self._data[0][0]!r} has {self.num_data}; all data and label arrays "
                    "need the same number of samples"
                )
        if self.num_data == 0:
            raise ValueError("NDArrayIter: the data has no samples")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
            raise TypeError(f"NDArrayIter seed must be an int or None, got {seed!r}")
        self.idx = np.arange(self.num_data)
        self._perm = None  # position -> original sample, once shuffled
        self._seed = seed
        self._rng_start = np.random.get_state() if seed is None else None
        self._rng = self._fresh_rng()
        self._epoch = -1  # the constructor's reset() starts epoch 0
        self._nd_cache = None
        self._targets = None  # per source: where batches go (None: the current context)
        self._device = None  # DeviceSources once placed and small enough
        self._auto_device = None  # the CPU device of an automatic placement
        self._host_batches = 0  # batches built on the host while never placed
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        self.cursor = -self.batch_size
        self._cache_data = None
        self._cache_label = None
        self.reset()

    # ------------------------------------------------------------------ descriptions
    def _descs(self, sources):
        ax, bs = self._axis, self.batch_size
        return [
            DataDesc(k, v.shape[:ax] + (bs,) + v.shape[ax + 1 :], v.dtype.type, layout=self.layout)
            for k, v in sources
        ]

    @property
    def provide_data(self):
        """``DataDesc`` of each data source, batch axis set to ``batch_size``."""
        return self._descs(self._data)

    @property
    def provide_label(self):
        """``DataDesc`` of each label source (``[]`` without labels)."""
        return self._descs(self._label)

    def _nd_sources(self):
        self._take_writes()
        if self._nd_cache is None:
            sources = self._data + self._label
            everything = np.arange(self.num_data)
            if self._perm is not None:
                everything = self._perm
            arrays = to_nd(
                (v, everything) if isinstance(v, HostCsr) else self._take(v, slice(None))
                for _, v in sources
            )
            self._nd_cache = [(k, a) for (k, _), a in zip(sources, arrays)]
            self._watch(arrays, None if self._perm is None else self._perm.copy())
        return self._nd_cache

    def _watch(self, arrays, order) -> None:
        for i, arr in enumerate(arrays):
            if isinstance(arr, NDArray) and getattr(arr, "stype", "default") == "default":
                self._watched.append((i, arr, arr._data, order))

    def _take_writes(self) -> None:
        """Copy in-place writes to watched NDArrays into the host sources (rows in
        ``order``: the shuffled order the array was handed out in); a device copy of the
        sources is made again."""
        changed = False
        for n, (i, arr, seen, order) in enumerate(self._watched):
            if arr._data is seen:
                continue
            is_data = i < len(self._data)
            sources = self._data if is_data else self._label
            j = i if is_data else i - len(self._data)
            name, host = sources[j]
            new = np.asarray(arr.asnumpy(), dtype=host.dtype).reshape(host.shape)
            if order is None:
                host = new.copy()
            else:  # back to the original sample order
                host = np.array(host, copy=True)
                np.moveaxis(host, self._axis, 0)[order] = np.moveaxis(new, self._axis, 0)
            sources[j] = (name, host)
            self._watched[n] = (i, arr, arr._data, order)
            changed = True
        if changed and self._device is not None:
            sources = self._data + self._label
            self._device = DeviceSources(
                [v for _, v in sources], self._device.shardings, self._axis, self.batch_size
            )

    @property
    def data(self):
        """``[(name, NDArray)]`` of the data in the current (shuffled) order."""
        return self._nd_sources()[: len(self._data)]

    @property
    def label(self):
        """``[(name, NDArray)]`` of the labels in the current (shuffled) order."""
        return self._nd_sources()[len(self._data) :]

    @property
    def data_list(self):
        """Data then label NDArrays (MXNet's ``data_list``)."""
        return [v for _, v in self._nd_sources()]

    @property
    def num_source(self):
        return len(self._data) + len(self._label)

    # ------------------------------------------------------------------ placement
    def place_on(self, target):
        """mxmod addition: where batches go, as the native iterators' ``place_on``.

        ``target``: a ``{input name: Sharding, Device or Context}`` dict (sources not
        named go to the current context), one Sharding/Device/Context for every source,
        or None (back to the current context, batches built on the host). When all the
        sources together fit :attr:`device_data_limit` bytes and the target is one device,
        they are copied once to it and every batch is then gathered there by one compiled
        program; bigger data, or several target devices, stay on the host and each batch
        is copied to ``target``. A target spanning several processes is ignored (each worker's batch
        is its own rows of the global batch, placed by the Module).
        """
        self._auto_device = None
        if target is None:
            self._targets = self._device = None
            return
        sources = self._data + self._label
        if isinstance(target, dict):
            default = current_context().jax_device
            targets = [target.get(name, default) for name, _ in sources]
        else:
            targets = [target] * len(sources)
        shardings = [as_sharding(name, t) for (name, _), t in zip(sources, targets)]
        if not all(s.is_fully_addressable for s in shardings):
            self._targets = self._device = None
            return
        self._targets = shardings
        if self._device is not None and self._device.shardings == shardings:
            return  # already there
        self._device = None
        device_sets = {frozenset(s.device_set) for s in shardings}
        # one device only: on XLA:CPU a gather over several devices beside the sharded
        # step can deadlock the in-process all-reduce (seen with 2 devices, 2 cores)
        one_device = len(device_sets) == 1 and len(next(iter(device_sets))) == 1
        nbytes = sum(v.nbytes for _, v in sources)
        small = nbytes <= self.device_data_limit and self.num_data < 2**31
        if one_device and small and not self._has_csr:
            self._device = DeviceSources(
                [v for _, v in sources], shardings, self._axis, self.batch_size
            )

    def _maybe_auto_place(self):
        """At an epoch boundary: give a long-used, never placed iterator a device copy on
        the current context when that is a CPU (see ``auto_place_after``)."""
        if self._targets is not None or self._device is not None or self._has_csr:
            return
        if self._host_batches < self.auto_place_after:
            return
        dev = current_context().jax_device
        sources = self._data + self._label
        if dev.platform != "cpu" or sum(v.nbytes for _, v in sources) > self.device_data_limit:
            return
        where = [SingleDeviceSharding(dev)] * len(sources)
        self._device = DeviceSources([v for _, v in sources], where, self._axis, self.batch_size)
        self._auto_device = dev

    @property
    def placed_on_device(self):
        """mxmod addition: whether batches are gathered from a copy on the device(s)."""
        return self._device is not None

    # ------------------------------------------------------------------ epoch control
    def _fresh_rng(self):
        if self._seed is not None:
            return np.random.RandomState(int(self._seed) % 2**32)
        rng = np.random.RandomState()
        rng.set_state(self._rng_start)
        return rng

    def _shuffle_data(self):
        self._take_writes()  # MXNet re-gathers the current values, then holds new copies
        self._watched = []
        self._rng.shuffle(self.idx)
        if self._seed is None:  # draw what MXNet draws from the global RNG
            np.random.shuffle(np.empty(self.num_data, np.int8))
        # MXNet re-gathers the already shuffled arrays by idx: compose the permutations.
        self._perm = self.idx.copy() if self._perm is None else self._perm[self.idx]
        self._nd_cache = None

    def hard_reset(self):
        """Reset to the start, dropping any rolled-over samples (a new epoch)."""
        self._epoch += 1
        if self.shuffle:
            self._shuffle_data()
        self.cursor = -self.batch_size
        self._cache_data = None
        self._cache_label = None
        self._maybe_auto_place()

    def reset(self):
        """Reset to the start; in ``roll_over`` mode keep the leftover of the last epoch."""
        self._epoch += 1
        if self.shuffle:
            self._shuffle_data()
        if (
            self.last_batch_handle == "roll_over"
            and self.num_data - self.batch_size < self.cursor < self.num_data
        ):
            self.cursor = self.cursor - self.num_data - self.batch_size
        else:
            self.cursor = -self.batch_size
        self._maybe_auto_place()

    @property
    def epoch(self):
        """mxmod addition: the epoch this iterator is in (0 after construction, +1 per
        ``reset()``/``hard_reset()``, or what :meth:`set_epoch` set)."""
        return self._epoch

    def set_epoch(self, epoch):
        """mxmod addition: go to the start of ``epoch`` exactly as an uninterrupted run
        (constructed, then ``reset()`` once per finished epoch) would be there: the same
        shuffled order and, with ``roll_over``, the same carried-over samples.

        ``Module.fit(begin_epoch=k)`` calls ``set_epoch(k)`` for k > 0, so a run resumed from
        a checkpoint sees the batches the interrupted run would have seen (MXNet replays
        epoch 0's order instead). Replaying costs ``epoch`` shuffles of the sample indices.

        Args:
            epoch: the epoch number (>= 0).

        Raises:
            ValueError: ``epoch`` is negative or not an int.
        """
        if isinstance(epoch, bool) or not isinstance(epoch, (int, np.integer)) or epoch < 0:
            raise ValueError(f"NDArrayIter.set_epoch needs an int >= 0, got {epoch!r}")
        epoch = int(epoch)
        n, bs = self.num_data, self.batch_size
        starts = [0]  # first cursor of each epoch (negative: carried samples)
        if self.last_batch_handle == "roll_over":
            for _ in range(epoch):
                last = starts[-1] + max(0, -(-(n - bs - starts[-1] + 1) // bs)) * bs
                starts.append(last - n if n - bs < last < n else 0)
        perms = [None, None]  # orders of epochs epoch-1 and epoch
        if self.shuffle:
            self._rng = self._fresh_rng()
            self.idx, self._perm = np.arange(n), None
            for _ in range(epoch + 1):
                self._rng.shuffle(self.idx)
                self._perm = self.idx.copy() if self._perm is None else self._perm[self.idx]
                perms = [perms[1], self._perm]
        self._nd_cache = None
        self._epoch = epoch
        self._cache_data = self._cache_label = None
        if starts[-1] < 0:  # the carried samples: the tail of the previous epoch's order
            tail = np.arange(starts[-1] + n, n)
            if perms[0] is not None:
                tail = perms[0][tail]
            self._cache_data = [np.take(v, tail, axis=self._axis) for _, v in self._data]
            self._cache_label = [np.take(v, tail, axis=self._axis) for _, v in self._label]
        self.cursor = starts[-1] - bs

    def iter_next(self):
        """Advance the cursor by ``batch_size``; True while it is inside the data."""
        self.cursor += self.batch_size
        return self.cursor < self.num_data

    # ------------------------------------------------------------------ batches
    def _take(self, arr, positions):
        """Samples at ``positions`` (a slice or an index array) along the batch axis."""
        if self._perm is not None:
            positions = self._perm[positions]
        if isinstance(arr, HostCsr):  # dense rows: MXNet slices csr sources with a fallback
            return arr.dense_rows(positions)
        if isinstance(positions, slice):
            index = [slice(None)] * arr.ndim
            index[self._axis] = positions
            return arr[tuple(index)]
        return np.take(arr, positions, axis=self._axis)

    def _rolled(self):
        return self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0

    def _batch_host(self, sources, cache):
        """Host arrays of the current batch (MXNet's ``_batchify``)."""
        n, bs, cur = self.num_data, self.batch_size, self.cursor
        if self._rolled():
            if cache is None:
                raise MXNetError(
                    "NDArrayIter: no rolled-over samples to start this epoch with; "
                    "call hard_reset()"
                )
            head = [self._take(v, slice(0, min(cur + bs, n))) for _, v in sources]
            return [np.concatenate([c, h], axis=self._axis) for c, h in zip(cache, head)]
        if self.last_batch_handle == "pad" and cur + bs > n:
            positions = np.concatenate([np.arange(cur, n), np.arange(cur + bs - n) % n])
            return [self._take(v, positions) for _, v in sources]
        return [self._take(v, slice(cur, min(cur + bs, n))) for _, v in sources]

    def _from_device(self):
        """Whether the current batch is gathered on the device: every full or padded batch
        but one that starts with carried samples (that one is built on the host)."""
        return (
            self._device is not None
            and not self._rolled()
            and (self.cursor + self.batch_size <= self.num_data or self.last_batch_handle == "pad")
            and (self._auto_device is None or self._auto_device == current_context().jax_device)
        )

    def _placed_batch(self, which):
        """NDArrays of sources ``which`` for the current batch, gathered on the device."""
        ctxs = self._device.contexts
        arrays = self._device.gather(which, self._perm, self.cursor)
        return [NDArray(a, ctxs[i]) for a, i in zip(arrays, which)]

    def _to_batch(self, host, which):
        """NDArrays of host batch arrays, sent where the iterator is placed."""
        if self._targets is None:
            self._host_batches += 1
            return send(host, None)
        return send(host, [self._targets[i] for i in which])

    def _current(self, sources, cache, which):
        self._take_writes()
        if self.cursor >= self.num_data:
            raise MXNetError("NDArrayIter: the epoch is over, call reset() before reading")
        if not which:
            return []
        if self._from_device():
            return self._placed_batch(which)
        return self._to_batch(self._batch_host(sources, cache), which)

    def getdata(self):
        """Data NDArrays of the current batch."""
        return self._current(self._data, self._cache_data, tuple(range(len(self._data))))

    def getlabel(self):
        """Label NDArrays of the current batch."""
        first = len(self._data)
        which = tuple(range(first, first + len(self._label)))
        return self._current(self._label, self._cache_label, which)

    def getpad(self):
        """Padding samples in the current batch (carried samples for a rolled-over batch)."""
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > self.num_data:
            return self.cursor + self.batch_size - self.num_data
        if self._rolled():
            return -self.cursor
        return 0

    def _stop(self) -> StopIteration:
        """The end of the epoch; when the data is smaller than one batch the message says why
        no batch ever comes (MXNet's bare StopIteration reaches ``fit`` unexplained)."""
        n, bs = self.num_data, self.batch_size
        if n >= bs:
            return StopIteration()
        return StopIteration(
            f"NDArrayIter has {n} samples, fewer than batch_size={bs}, and last_batch_handle="
            f"{self.last_batch_handle!r} drops an incomplete batch, so it yields no batch; use "
            f"batch_size <= {n}, or last_batch_handle='pad' (repeats samples to fill the batch)"
        )

    def next(self):
        """Return the next full ``DataBatch``; a partial last batch (discard/roll_over) is
        kept for roll-over and ends the epoch."""
        if not self.iter_next():
            raise StopIteration
        if self.last_batch_handle == "discard" and self.cursor + self.batch_size > self.num_data:
            raise self._stop()
        self._take_writes()
        every = tuple(range(self.num_source))
        if self._from_device():
            arrays = self._placed_batch(every)
        else:
            rolled = self._rolled()
            data = self._batch_host(self._data, self._cache_data)
            label = self._batch_host(self._label, self._cache_label)
            if data[0].shape[self._axis] != self.batch_size:
                self._cache_data, self._cache_label = data, label
                raise self._stop()
            if rolled:
                self._cache_data = self._cache_label = None
            arrays = self._to_batch(data + label, every)
        first = len(self._data)
        return DataBatch(data=arrays[:first], label=arrays[first:], pad=self.getpad(), index=None)
