"""``mx.io.MNISTIter`` (MXNet 1.9.1): batches from MNIST's idx-ubyte files.

Same output as MXNet: pixels scaled by 1/256 (not 1/255), data ``(batch, 1, 28, 28)`` or
``(batch, 784)`` with ``flat``, labels ``(batch,)``, only full batches (the remainder is
dropped, ``pad`` is always 0), parts cut at ``floor(n * k / num_parts)``. With
``shuffle`` (MXNet's default) each part is shuffled once, at construction, in MXNet's
order: C++ ``std::shuffle`` with ``std::mt19937(seed)`` (``mxnet_order``).
The data is held in memory and batches are slices of it, so ``prefetch_buffer`` has
nothing to do (accepted for compatibility); ``ctx`` is checked ('cpu'/'gpu') and batches
go to the current context or where ``place_on()`` says.
"""

from __future__ import annotations

import logging
import struct

import numpy as np

from ..base import MXNetError
from ..ndarray import NDArray
from ._native_params import check_params
from ._prefetch import Placement
from .io import DataBatch, DataDesc, MXDataIter

# MXNet logs this from C++: a named logger, so no implicit root basicConfig
_LOG = logging.getLogger(__name__)

__all__ = ["MNISTIter"]

_PARAMS = {
    "image": "./train-images-idx3-ubyte",
    "label": "./train-labels-idx1-ubyte",
    "batch_size": 128,
    "shuffle": True,
    "flat": False,
    "seed": 0,
    "silent": False,
    "num_parts": 1,
    "part_index": 0,
    "prefetch_buffer": 4,
    "ctx": "gpu",
    "dtype": None,
    "data_name": "data",
    "label_name": "softmax_label",
}


def _read_idx(path, magic, what):
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise MXNetError(f"MNISTIter: cannot open {what} file {path!r}: {e.strerror}") from None
    ndim = 3 if magic == 2051 else 1
    if len(raw) < 4 + 4 * ndim or struct.unpack(">I", raw[:4])[0] != magic:
        raise MXNetError(f"MNISTIter: {path} is not an MNIST {what} file (idx magic {magic})")
    dims = struct.unpack(">" + "I" * ndim, raw[4 : 4 + 4 * ndim])
    body = np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim)
    need = int(np.prod(dims))
    if body.size < need:
        raise MXNetError(
            f"MNISTIter: {path} is truncated: {body.size} bytes of {what} data, "
            f"its header promises {need}"
        )
    return body[:need].reshape(dims)


class MNISTIter(MXDataIter):
    """Iterate over MNIST idx files, as ``mx.io.MNISTIter`` (keyword arguments only).

    Raises:
        TypeError: positional arguments.
        MXNetError: unknown parameters, missing/truncated files, image/label counts that
            differ.
    """

    def __init__(self, *args, **kwargs):
        if args:
            raise TypeError("MNISTIter can only accept keyword arguments")
        p = check_params("MNISTIter", kwargs, _PARAMS, {}, object())
        if not 0 <= p["part_index"] < p["num_parts"]:
            raise MXNetError(
                f"part_index {p['part_index']} must be in [0, num_parts={p['num_parts']})"
            )
        super().__init__(p["batch_size"])
        imgs = _read_idx(p["image"], 2051, "image")
        labels = _read_idx(p["label"], 2049, "label")
        if len(imgs) != len(labels):
            raise MXNetError(
                f"MNISTIter: {p['image']} has {len(imgs)} images but {p['label']} "
                f"has {len(labels)} labels"
            )
        n = len(imgs)
        lo = int(n / p["num_parts"] * p["part_index"])
        hi = int(n / p["num_parts"] * (p["part_index"] + 1))
        imgs, labels = imgs[lo:hi], labels[lo:hi]
        if p["shuffle"]:
            perm = mxnet_order(len(imgs), p["seed"])
            imgs, labels = imgs[perm], labels[perm]
        dtype = np.dtype(p["dtype"] or "float32")
        self._data = (imgs.astype(np.float32) * np.float32(1.0 / 256.0)).astype(dtype)
        self._data = (
            self._data.reshape(len(imgs), -1)
            if p["flat"]
            else self._data.reshape(len(imgs), 1, imgs.shape[1], imgs.shape[2])
        )
        self._label = labels.astype(np.float32)
        self.provide_data = [
            DataDesc(p["data_name"], (self.batch_size,) + self._data.shape[1:], dtype.type)
        ]
        self.provide_label = [DataDesc(p["label_name"], (self.batch_size,), np.float32)]
        self.placement = Placement()
        self._loc = 0
        self._current = None
        if not p["silent"]:
            _LOG.info(
                "MNISTIter: load %d images, shuffle=%d, shape=%s",
                len(imgs),
                p["shuffle"],
                self.provide_data[0].shape,
            )

    def reset(self):
        self._loc = 0

    def iter_next(self):
        if self._loc + self.batch_size > len(self._data):
            return False
        sl = slice(self._loc, self._loc + self.batch_size)
        self._loc += self.batch_size
        self._current = DataBatch(
            [NDArray(self.placement.put(self.provide_data[0].name, self._data[sl]))],
            [NDArray(self.placement.put(self.provide_label[0].name, self._label[sl]))],
            pad=0,
            provide_data=self.provide_data,
            provide_label=self.provide_label,
        )
        return True


def mxnet_order(n: int, seed: int) -> np.ndarray:
    """The order MXNet's MNISTIter shuffles ``n`` images into: ``std::shuffle`` (swap
    element ``i`` with one drawn from ``[0, i]``, ``i`` rising) driven by ``std::mt19937``
    seeded with ``seed``, each draw made by libstdc++'s ``uniform_int_distribution``
    (the 32-bit value divided down, values past the last whole bucket drawn again)."""
    # numpy's legacy RandomState is the same Mersenne Twister, seeded the same way; its
    # full-range 32-bit integers are the generator's raw outputs
    source = np.random.RandomState(int(seed) & 0xFFFFFFFF)
    raw: list = []
    k = 0
    order = list(range(n))
    for i in range(1, n):
        span = i + 1
        bucket = 0xFFFFFFFF // span
        limit = span * bucket
        while True:
            if k == len(raw):
                raw = source.randint(0, 2**32, size=max(1024, n - i), dtype=np.uint32).tolist()
                k = 0
            draw = raw[k]
            k += 1
            if draw < limit:
                break
        j = draw // bucket
        order[i], order[j] = order[j], order[i]
    return np.asarray(order, dtype=np.int64)
