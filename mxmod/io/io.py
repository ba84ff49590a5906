"""Data iterator protocol: DataDesc, DataBatch, DataIter, ResizeIter, PrefetchingIter.

Same names and behaviour as ``mxnet.io.io`` (MXNet 1.9.1); ``NDArrayIter`` lives in
:mod:`mxmod.io._ndarray_iter` and is re-exported here.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..base import MXNetError

__all__ = [
    "DataDesc",
    "DataBatch",
    "DataIter",
    "MXDataIter",
    "ResizeIter",
    "PrefetchingIter",
    "NDArrayIter",
]


class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """Name, shape, dtype and layout of one input, as ``mxnet.io.DataDesc``.

    A ``namedtuple('DataDesc', ['name', 'shape'])`` with extra ``dtype``/``layout``
    attributes: it unpacks as ``(name, shape)`` and compares/hashes by ``(name, shape)``
    only, so ``DataDesc('data', (2, 3)) == ('data', (2, 3))``.

    Args:
        name: input name.
        shape: shape including the batch axis.
        dtype: element type (default ``numpy.float32``).
        layout: axis letters; ``'N'`` marks the batch axis (default ``'NCHW'``).
    """

    def __new__(cls, name, shape, dtype=np.float32, layout="NCHW"):
        ret = super().__new__(cls, name, shape)
        ret.dtype = dtype
        ret.layout = layout
        return ret

    def __repr__(self):
        return "DataDesc[%s,%s,%s,%s]" % (self.name, self.shape, self.dtype, self.layout)

    def __getnewargs__(self):  # keep dtype/layout through copy/pickle
        return (self.name, self.shape, self.dtype, self.layout)

    def _replace(self, **kwargs):
        fields = dict(zip(self._fields, self), dtype=self.dtype, layout=self.layout)
        fields.update(kwargs)
        return type(self)(**fields)

    @staticmethod
    def get_batch_axis(layout):
        """Batch axis of ``layout``: 0 for None, else ``layout.find('N')`` (-1: none)."""
        if layout is None:
            return 0
        return layout.find("N")

    @staticmethod
    def get_list(shapes, types):
        """DataDescs from ``(name, shape)`` pairs and optional ``(name, dtype)`` pairs."""
        if types is not None:
            type_dict = dict(types)
            return [DataDesc(x[0], x[1], type_dict[x[0]]) for x in shapes]
        return [DataDesc(x[0], x[1]) for x in shapes]


class DataBatch:
    """One batch of data, as ``mxnet.io.DataBatch``; all attributes are assignable.

    Args:
        data: list of NDArrays (one per input).
        label: list of NDArrays (one per label) or None.
        pad: number of padding samples at the end of the batch.
        index: sample indices or None.
        bucket_key: bucket key for BucketingModule.
        provide_data: per-batch DataDescs of ``data``.
        provide_label: per-batch DataDescs of ``label``.

    Raises:
        TypeError: ``data``/``label`` given but not a list or tuple.
    """

    def __init__(
        self,
        data,
        label=None,
        pad=None,
        index=None,
        bucket_key=None,
        provide_data=None,
        provide_label=None,
    ):
        if data is not None and not isinstance(data, (list, tuple)):
            raise TypeError(
                f"Data must be list of NDArrays: got {type(data).__name__}, wrap it as [data]"
            )
        if label is not None and not isinstance(label, (list, tuple)):
            raise TypeError(
                f"Label must be list of NDArrays: got {type(label).__name__}, wrap it as [label]"
            )
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self):
        data_shapes = [d.shape for d in self.data]
        label_shapes = [lab.shape for lab in self.label] if self.label else None
        return "{}: data shapes: {} label shapes: {}".format(
            self.__class__.__name__, data_shapes, label_shapes
        )


class DataIter:
    """Base class of data iterators, as ``mxnet.io.DataIter``.

    Subclasses implement ``iter_next``/``getdata``/``getlabel``/``getpad`` (and ``reset``)
    or override ``next``. Iterators used with a Module also expose ``provide_data``,
    ``provide_label`` and ``batch_size``.

    Args:
        batch_size: samples per batch.
    """

    def __init__(self, batch_size=0):
        self.batch_size = batch_size

    def __iter__(self):
        return self

    def reset(self):
        """Reset to the beginning of the data."""

    def next(self):
        """Return the next ``DataBatch``; raise ``StopIteration`` at the end."""
        if self.iter_next():
            return DataBatch(
                data=self.getdata(),
                label=self.getlabel(),
                pad=self.getpad(),
                index=self.getindex(),
            )
        raise StopIteration

    def __next__(self):
        return self.next()

    def iter_next(self):
        """Move to the next batch; return whether there is one."""

    def getdata(self):
        """Data (list of NDArrays) of the current batch."""

    def getlabel(self):
        """Labels (list of NDArrays) of the current batch."""

    def getindex(self):
        """Sample indices of the current batch (None by default)."""
        return None

    def getpad(self):
        """Number of padding samples in the current batch."""


class MXDataIter(DataIter):
    """Base of the native iterators (C++ ``MXDataIter`` in MXNet): ImageRecordIter,
    ImageDetRecordIter, MNISTIter, CSVIter, LibSVMIter. Their ``getdata``/``getlabel``
    give one NDArray, not a list.

    Subclasses set ``self.placement`` (a ``_prefetch.Placement``) and store the batch that
    ``iter_next`` made in ``self._current``; the accessors below read it.
    """

    def place_on(self, target):
        """mxmod addition: put future batches on ``target`` (a ``{name: Sharding}`` dict,
        a Sharding/Device for all inputs, a Context, or None for the current context).
        ImageRecordIter re-places the batches it prefetched before the call when taken."""
        self.placement.set(target)

    def next(self):
        if self.iter_next():
            return self._current
        raise StopIteration

    def getdata(self):
        """The current batch's data: one NDArray, as MXNet's native iterators."""
        return self._current.data[0]

    def getlabel(self):
        """The current batch's label: one NDArray, as MXNet's native iterators."""
        return self._current.label[0]

    def getpad(self):
        return self._current.pad

    def getindex(self):
        """Sample indices of the current batch (numpy), as MXNet's native iterators."""
        return self._current.index

    def debug_skip_load(self):
        """MXNet's loader benchmark switch; not available."""
        raise NotImplementedError(
            "MXDataIter.debug_skip_load is not supported by mxmod; time the model on a "
            "fixed batch with mx.test_utils.DummyIter(iterator) instead"
        )


class _BatchHolder(DataIter):
    """Iterators whose ``iter_next`` stores ``current_batch``: the accessors read it."""

    def next(self):
        if self.iter_next():
            return self.current_batch
        raise StopIteration

    def getdata(self):
        return self.current_batch.data

    def getlabel(self):
        return self.current_batch.label

    def getindex(self):
        return self.current_batch.index

    def getpad(self):
        return self.current_batch.pad


class ResizeIter(_BatchHolder):
    """Give exactly ``size`` batches per epoch, as ``mxnet.io.ResizeIter``: the wrapped
    iterator is reset and continued when it runs out.

    Args:
        data_iter: the iterator to resize.
        size: batches per epoch.
        reset_internal: whether ``reset()`` also resets the wrapped iterator.
    """

    def __init__(self, data_iter, size, reset_internal=True):
        super().__init__()
        if not isinstance(size, (int, np.integer)) or size < 0:
            raise ValueError(f"ResizeIter size must be a non-negative int, got {size!r}")
        self.data_iter = data_iter
        self.size = size
        self.reset_internal = reset_internal
        self.cur = 0
        self.current_batch = None
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        self.batch_size = data_iter.batch_size
        if hasattr(data_iter, "default_bucket_key"):
            self.default_bucket_key = data_iter.default_bucket_key

    def reset(self):
        """Restart the batch count (and the wrapped iterator if ``reset_internal``)."""
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def set_epoch(self, epoch):
        """mxmod addition (``fit(begin_epoch=k)``): with ``reset_internal`` the wrapped
        iterator's epochs are this one's, so it replays epoch ``epoch``; without, the
        wrapped iterator's epoch is unknown and it goes on from where it is."""
        if self.reset_internal and hasattr(self.data_iter, "set_epoch"):
            self.data_iter.set_epoch(epoch)

    def iter_next(self):
        if self.cur == self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            try:
                self.current_batch = self.data_iter.next()
            except StopIteration:
                raise MXNetError(
                    "ResizeIter: the wrapped iterator yields no batch even after reset()"
                ) from None
        self.cur += 1
        return True


def _renamed(descs, mapping):
    if mapping is None:
        return list(descs)
    out = []
    for x in descs:
        if isinstance(x, DataDesc):
            out.append(DataDesc(mapping.get(x.name, x.name), x.shape, x.dtype, x.layout))
        else:
            out.append(DataDesc(mapping.get(x[0], x[0]), x[1]))
    return out


class PrefetchingIter(_BatchHolder):
    """Combine one or more iterators batch by batch, as ``mxnet.io.PrefetchingIter``.

    mxmod fetches synchronously (JAX dispatch is already asynchronous, so host work
    overlaps device work); the observable behaviour is MXNet's. Each batch concatenates
    the sub-batches' data and labels, takes ``pad``/``index`` from the first, and carries
    the combined ``provide_data``/``provide_label``.

    Args:
        iters: a DataIter or a list of them.
        rename_data: per-iterator ``{'old_name': 'new_name'}`` dicts for ``provide_data``.
        rename_label: the same for ``provide_label``.

    Raises:
        ValueError: no iterators, or rename lists of the wrong length.
        MXNetError: the iterators disagree on their number of batches or on ``pad``.
    """

    def __init__(self, iters, rename_data=None, rename_label=None):
        super().__init__()
        if not isinstance(iters, list):
            iters = [iters]
        if not iters:
            raise ValueError("PrefetchingIter needs at least one iterator")
        for arg, value in (("rename_data", rename_data), ("rename_label", rename_label)):
            if value is not None and len(value) != len(iters):
                raise ValueError(
                    f"PrefetchingIter: {arg} needs one dict per iterator ({len(iters)}), "
                    f"got {len(value)}"
                )
        self.n_iter = len(iters)
        self.iters = iters
        self.rename_data = rename_data
        self.rename_label = rename_label
        self.batch_size = self.provide_data[0][1][0]
        self.current_batch = None

    @property
    def provide_data(self):
        """Concatenated (renamed) ``provide_data`` of all iterators."""
        maps = self.rename_data or [None] * self.n_iter
        return sum((_renamed(i.provide_data, r) for r, i in zip(maps, self.iters)), [])

    @property
    def provide_label(self):
        """Concatenated (renamed) ``provide_label`` of all iterators."""
        maps = self.rename_label or [None] * self.n_iter
        return sum((_renamed(i.provide_label, r) for r, i in zip(maps, self.iters)), [])

    def reset(self):
        """Reset every iterator."""
        for it in self.iters:
            it.reset()

    def set_epoch(self, epoch):
        """mxmod addition (``fit(begin_epoch=k)``): every iterator replays epoch ``epoch``."""
        for it in self.iters:
            if hasattr(it, "set_epoch"):
                it.set_epoch(epoch)

    def iter_next(self):
        batches = []
        for it in self.iters:
            try:
                batches.append(it.next())
            except StopIteration:
                batches.append(None)
        if batches[0] is None or any(b is None for b in batches):
            if any(b is not None for b in batches):
                raise MXNetError(
                    "Number of entry mismatches between iterators: some iterators ended "
                    "before others; give them the same number of batches"
                )
            return False
        if any(b.pad != batches[0].pad for b in batches):
            raise MXNetError(
                "Number of entry mismatches between iterators: their batches have different "
                f"pad values {[b.pad for b in batches]}"
            )
        self.current_batch = DataBatch(
            sum((list(b.data) for b in batches), []),
            sum((list(b.label or []) for b in batches), []),
            batches[0].pad,
            batches[0].index,
            provide_data=self.provide_data,
            provide_label=self.provide_label,
        )
        return True


from ._ndarray_iter import NDArrayIter  # noqa: E402  (it builds on the classes above)
