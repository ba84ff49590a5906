"""``mx.io.ImageRecordIter`` (MXNet 1.9.1's ``ImageRecordIter``, the C++ ``ImageRecordIter2``)
in Python: RecordIO reading, OpenCV decoding and the default augmenter on worker threads,
batches prefetched and placed on the bound devices ahead of the step.

Same parameters, defaults, batch order, labels, ``pad`` and epoch stream as MXNet. With
``round_batch`` (default) the last batch of an epoch wraps to the start and the next epoch
continues where the wrap ended, as in MXNet. Differences: random draws (shuffle order,
crops, mirrors) are reproducible for a ``seed`` but are not MXNet's sequences; with
``round_batch=False`` MXNet fills the last batch's tail with uninitialised memory and
reports ``pad=0``, mxmod repeats the batch's real samples and reports the true ``pad``.
"""

from __future__ import annotations

import logging
import math
import os

import numpy as np

from ..base import MXNetError
from .. import ndarray as nd
from ..ndarray import NDArray
from ._image_aug_default import AUG_DEFAULTS, NORM_DEFAULTS, DefaultAugmenter, Normalizer, decode
from ._native_params import BATCH_PARAMS, REQUIRED, check_params
from ._prefetch import BatchPipeline, Placement, aligned_empty
from ._record_source import RecordFile, read_label_list, split_image_record
from .io import DataBatch, DataDesc, MXDataIter

# MXNet logs this from C++: a named logger, so no implicit root basicConfig
_LOG = logging.getLogger(__name__)

__all__ = [
    "ImageRecordIter",
    "ImageRecordUInt8Iter",
    "ImageRecordInt8Iter",
    "ImageRecordIter_v1",
    "ImageRecordUInt8Iter_v1",
]

_REQUIRED = REQUIRED
_PARAMS = {
    "path_imglist": "",
    "path_imgrec": "",
    "path_imgidx": "",
    "aug_seq": "aug_default",
    "label_width": 1,
    "data_shape": _REQUIRED,
    "preprocess_threads": 4,
    "verbose": True,
    "num_parts": 1,
    "part_index": 0,
    "device_id": 0,
    "shuffle_chunk_size": 0,
    "shuffle_chunk_seed": 0,
    "seed_aug": None,
    "shuffle": False,
    "seed": 0,
    **BATCH_PARAMS,
    **AUG_DEFAULTS,
    **NORM_DEFAULTS,
}
# MXNet 1.9.1 options mxmod does not implement: refused when set to anything but the default
_UNSUPPORTED = {}


class ImageRecordIter(MXDataIter):
    """Iterate over images in a RecordIO file, as ``mx.io.ImageRecordIter``.

    Keyword-only, MXNet's parameter names (``path_imgrec``, ``data_shape``,
    ``batch_size``, ``label_width``, ``shuffle``, ``seed``, ``rand_crop``,
    ``rand_mirror``, ``resize``, ``mean_r/g/b``, ``std_r/g/b``, ``scale``, ``mean_img``,
    ``num_parts``/``part_index``, ``round_batch``, ``preprocess_threads``,
    ``prefetch_buffer``, ``dtype``, ...). ``preprocess_threads`` decoder threads (capped
    at the CPU count; MXNet 1.9.1 caps them at ``max(cores / 2 - 1, 1)``) fill batches
    ``prefetch_buffer`` ahead.

    mxmod addition: :meth:`place_on` sends batches straight to given devices/shardings
    (what a bound Module's inputs use), so the host-to-device copy overlaps the step.
    ``ctx`` and ``device_id`` choose MXNet's internal loader variant and pinned-memory
    device; they are checked and have no other effect here (batches go to the current
    context, or where :meth:`place_on` says).

    Raises:
        TypeError: positional arguments.
        MXNetError: unknown parameters, a missing ``data_shape``/``batch_size``/file,
            bad records (naming file and record).
        NotImplementedError: an MXNet option mxmod does not implement.
    """

    _dtype_default = None

    def __init__(self, *args, **kwargs):
        if args:
            raise TypeError("ImageRecordIter can only accept keyword arguments")
        if self._dtype_default is not None:
            kwargs.setdefault("dtype", self._dtype_default)
        p = check_params(type(self).__name__, kwargs, _PARAMS, _UNSUPPORTED, _REQUIRED)
        self.p = p
        shape = p["data_shape"]
        if len(shape) != 3 or shape[0] not in (1, 3, 4) or min(shape) <= 0:
            raise MXNetError(
                f"data_shape {shape} must be (channels, height, width) with 1, 3 or 4 channels"
            )
        if p["aug_seq"] != "aug_default":
            raise NotImplementedError(
                f"ImageRecordIter aug_seq={p['aug_seq']!r}: only 'aug_default' is implemented"
            )
        if int(p["shuffle_chunk_size"]) < 0:
            raise MXNetError(f"shuffle_chunk_size {p['shuffle_chunk_size']} must be >= 0 (MB)")
        if not p["path_imgrec"]:
            raise MXNetError("ImageRecordIter needs path_imgrec (the .rec file)")
        if not 0 <= p["part_index"] < p["num_parts"]:
            raise MXNetError(
                f"part_index {p['part_index']} must be in [0, num_parts={p['num_parts']})"
            )
        dtype = np.dtype(p["dtype"] or "float32")
        if dtype not in (np.float32, np.uint8, np.int8):
            raise MXNetError(f"ImageRecordIter dtype {p['dtype']!r}: use float32, uint8 or int8")
        super().__init__(p["batch_size"])
        self.data_shape, self.dtype = tuple(shape), dtype
        self.rec = RecordFile(p["path_imgrec"], p["path_imgidx"])
        self.part = self.rec.part(p["num_parts"], p["part_index"], bool(p["path_imgidx"]))
        self.label_map = (
            read_label_list(p["path_imglist"], p["label_width"]) if p["path_imglist"] else None
        )
        self.aug = DefaultAugmenter(p, shape)
        self.norm = Normalizer(p, shape[0], dtype)
        self.threads = max(1, min(int(p["preprocess_threads"]), os.cpu_count() or 1))
        self.placement = Placement()
        self.pipeline = BatchPipeline(
            self.threads, p["prefetch_buffer"], self._start_batch, self._finish_batch
        )
        lw = p["label_width"]
        self.provide_data = [
            DataDesc(p["data_name"], (self.batch_size,) + self.data_shape, dtype.type)
        ]
        self.provide_label = [
            DataDesc(
                p["label_name"],
                (self.batch_size,) if lw == 1 else (self.batch_size, lw),
                np.float32,
            )
        ]
        if p["verbose"]:
            _LOG.info(
                "ImageRecordIter: %s, %d records in this part, %d decoder threads",
                p["path_imgrec"],
                len(self.part),
                self.threads,
            )
        if p["mean_img"] and dtype != np.uint8:
            self._load_or_make_mean(p["mean_img"])
        self._epoch, self._order, self._cursor = 0, self._make_order(0), 0
        self._consumed = self._n_batches = 0
        self._current = None
        self.reset()

    # ------------------------------------------------------------ epochs
    def _make_order(self, epoch):
        p = self.p
        chunks = self._shuffle_chunks()
        if chunks is not None:  # chunks in a new order each epoch, each read in file order
            rng = np.random.default_rng([int(p["shuffle_chunk_seed"]), epoch])
            if p["shuffle"]:  # and its records shuffled within it, as MXNet's chunk reader
                inner = np.random.default_rng([p["seed"], epoch])
                chunks = [inner.permutation(c) for c in chunks]
            return np.concatenate([chunks[i] for i in rng.permutation(len(chunks))])
        if p["shuffle"]:
            return np.random.default_rng([p["seed"], epoch]).permutation(self.part)
        return self.part

    def _shuffle_chunks(self):
        """MXNet's chunk shuffling (``shuffle_chunk_size`` MB, a ``.rec`` without ``.idx``:
        reads stay local in a file too large to shuffle by record): this part's records cut
        by byte offset into ``ceil(1.1 * file size / (num_parts * chunk))`` chunks; None
        when that is one chunk, or when an index file lets records be shuffled one by one
        (MXNet then ignores the chunk size too)."""
        p, mb = self.p, int(self.p["shuffle_chunk_size"])
        if mb <= 0 or p["path_imgidx"] or len(self.part) == 0:
            return None
        count = math.ceil(self.rec.size * 1.1 / (p["num_parts"] * (mb << 20)))
        if count <= 1:
            return None
        offsets = self.rec.offsets[self.part]
        lo, hi = int(offsets[0]), int(offsets[-1]) + 1
        edges = lo + (hi - lo) * np.arange(1, count) // count
        return [c for c in np.split(self.part, np.searchsorted(offsets, edges)) if len(c)]

    def _plan(self):
        """Batch specs of one epoch, then the state the next epoch starts from."""
        bs, order, pos, n = self.batch_size, self._order, self._cursor, len(self._order)
        if n == 0:
            raise MXNetError(
                f"{self.rec.path}: part {self.p['part_index']} of "
                f"{self.p['num_parts']} holds no records"
            )
        epoch, specs = self._epoch, []
        nxt = (epoch + 1, self._make_order(epoch + 1), 0)
        while pos < n:
            take = [(int(r), epoch, pos + j) for j, r in enumerate(order[pos : pos + bs])]
            pos += bs
            pad = bs - len(take)
            if pad and self.p["round_batch"]:
                if pad > n:
                    raise MXNetError(
                        f"number of input images ({n}) must be bigger than the batch size ({bs})"
                    )
                take += [(int(r), epoch + 1, j) for j, r in enumerate(nxt[1][:pad])]
                nxt = (nxt[0], nxt[1], pad)
            elif pad:
                take += [take[j % len(take)] for j in range(pad)]
            specs.append((take, pad))
        return specs, nxt

    def reset(self):
        """Start the next epoch (prefetching begins at once). An epoch cut short before its
        wrapped last batch was taken leaves nothing to carry: the next one starts at 0."""
        if self._consumed < self._n_batches:
            self._cursor = 0
        specs, nxt = self._plan()
        self._epoch, self._order, self._cursor = nxt
        self._consumed, self._n_batches = 0, len(specs)
        self.pipeline.start(specs)

    def hard_reset(self):
        """Start over from the first epoch's beginning."""
        self._epoch, self._order, self._cursor = 0, self._make_order(0), 0
        self._consumed = self._n_batches = 0
        self.reset()

    # ------------------------------------------------------------ batches
    def _sample(self, item, out_img, out_label, k):
        r, epoch, pos = item
        seed = self.p["seed_aug"] if self.p["seed_aug"] is not None else self.p["seed"]
        rng = np.random.default_rng([seed, epoch, pos, 111])
        rid, labels, scalar, img_bytes = split_image_record(self.rec.payload(r), self.rec.path, r)
        img = decode(img_bytes, self.data_shape[0], self.rec.path, rid, r)
        lw = self.p["label_width"]
        if self.label_map is not None:
            if rid not in self.label_map:
                raise MXNetError(
                    f"{self.rec.path}: record {r} has image id {rid}, which is not "
                    f"in the image list {self.p['path_imglist']}"
                )
            out_label[k] = self.label_map[rid]
        elif labels is not None:
            if labels.size != lw:
                raise MXNetError(
                    f"{self.rec.path}: record {r} provides {labels.size}-dimensional "
                    f"label but label_width is set to {lw}"
                )
            out_label[k] = labels
        else:
            if lw != 1:
                raise MXNetError(
                    f"{self.rec.path}: record {r} has one label but label_width is "
                    f"{lw}: label_width must be 1 unless an imglist is provided or "
                    "the rec file is packed with multi dimensional label"
                )
            out_label[k] = scalar
        img = self.aug(img, rng)
        if img.shape[0] != self.data_shape[1] or img.shape[1] != self.data_shape[2]:
            raise MXNetError(
                f"{self.rec.path}: record {r} came out of the augmenter as "
                f"{img.shape[1]}x{img.shape[0]}, not data_shape "
                f"{self.data_shape[2]}x{self.data_shape[1]}"
            )
        self.norm(img, out_img[k], rng)
        return rid

    def _start_batch(self, spec):
        take, pad = spec
        data = aligned_empty((self.batch_size,) + self.data_shape, self.dtype)
        label = aligned_empty((self.batch_size, self.p["label_width"]), np.float32)
        ids = np.zeros(self.batch_size, np.uint64)
        step = max(1, -(-len(take) // (self.threads * 2)))

        def job(lo):
            for k in range(lo, min(lo + step, len(take))):
                ids[k] = self._sample(take[k], data, label, k)

        return (data, label, ids), [lambda lo=lo: job(lo) for lo in range(0, len(take), step)]

    def _finish_batch(self, spec, bufs):
        data, label, ids = bufs
        version = self.placement.version
        if self.p["label_width"] == 1:
            label = label.reshape(self.batch_size)
        d = NDArray(self.placement.put(self.provide_data[0].name, data))
        lab = NDArray(self.placement.put(self.provide_label[0].name, label))
        batch = DataBatch(
            [d],
            [lab],
            pad=spec[1],
            index=ids,
            provide_data=self.provide_data,
            provide_label=self.provide_label,
        )
        batch._placement = version
        return batch

    def next(self):
        """The next DataBatch; StopIteration at the end of the epoch."""
        batch = self.pipeline.next()
        if batch._placement != self.placement.version:  # place_on() after it was prefetched
            batch.data = [
                NDArray(self.placement.put(self.provide_data[0].name, batch.data[0]._data))
            ]
            batch.label = [
                NDArray(self.placement.put(self.provide_label[0].name, batch.label[0]._data))
            ]
        self._current = batch
        self._consumed += 1
        return batch

    def iter_next(self):
        try:
            self.next()
            return True
        except StopIteration:
            return False

    def __del__(self):
        pipeline = getattr(self, "pipeline", None)
        if pipeline is not None:
            pipeline.close(wait=False)

    # ------------------------------------------------------------ mean image
    def _load_or_make_mean(self, path):
        if os.path.exists(path):
            arrs = nd.load(path)
            arrs = list(arrs.values()) if isinstance(arrs, dict) else arrs
            if len(arrs) != 1:
                raise MXNetError(
                    f"Invalid mean image file format: {path} holds {len(arrs)} arrays, expected one"
                )
            mean = arrs[0].asnumpy().astype(np.float32)
        else:
            _LOG.info("Cannot find %s: create mean image, this will take some time...", path)
            total = np.zeros(self.data_shape, np.float64)
            items = [(int(r), 0, j) for j, r in enumerate(self.part)]
            bs = self.batch_size
            for lo in range(0, len(items), bs):
                chunk = items[lo : lo + bs]
                (data, _, _), jobs = self._start_batch((chunk, 0))
                self.pipeline.run_now(jobs)
                total += data[: len(chunk)].astype(np.float64).sum(axis=0)
            mean = (total / len(items)).astype(np.float32)
            nd.save(path, {"mean_img": nd.array(mean)})
        if mean.shape != self.data_shape:
            raise MXNetError(
                f"mean image {path} has shape {mean.shape}, data_shape is {self.data_shape}"
            )
        self.norm.mean_img = mean


class ImageRecordUInt8Iter(ImageRecordIter):
    """``ImageRecordIter(dtype='uint8')`` under its deprecated MXNet name."""

    _dtype_default = "uint8"


class ImageRecordInt8Iter(ImageRecordIter):
    """``ImageRecordIter(dtype='int8')`` under its deprecated MXNet name."""

    _dtype_default = "int8"


ImageRecordIter_v1 = ImageRecordIter  # MXNet's older implementation; same parameters
ImageRecordUInt8Iter_v1 = ImageRecordUInt8Iter
