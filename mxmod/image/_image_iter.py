"""``mx.image.ImageIter`` (MXNet 1.9.1): a Python image iterator over a ``.rec`` file, a
``.lst`` file or an in-memory ``imglist``, with an augmenter list.

Same sequence, labels, padding and ``last_batch_handle`` behaviour as MXNet. Images are
decoded and augmented as numpy arrays when every augmenter is a built-in one (the batch
becomes an NDArray once); a user augmenter gets NDArrays, as in MXNet.
"""

from __future__ import annotations

import logging
import os
import random
from numbers import Number

import numpy as np

from .. import recordio
from ..base import MXNetError
from ..io.io import DataBatch, DataIter
from ..ndarray import array as _nd_array
from . import _augmenters
from ._augmenters import CreateAugmenter
from ._ops import decode_np

__all__ = ["ImageIter"]

_BUILTIN = tuple(getattr(_augmenters, n) for n in _augmenters.__all__ if n != "CreateAugmenter")


def _all_builtin(augs):
    for a in augs:
        if type(a) not in _BUILTIN:
            return False
        if isinstance(
            a, (_augmenters.SequentialAug, _augmenters.RandomOrderAug)
        ) and not _all_builtin(a.ts):
            return False
    return True


class ImageIter(DataIter):
    """Image iterator with augmentation, as ``mx.image.ImageIter``.

    Args:
        batch_size: images per batch.
        data_shape: ``(3, height, width)`` of the output images.
        label_width: labels per image.
        path_imgrec: a ``.rec`` file (with ``path_imgidx`` for random access/shuffling).
        path_imglist: a ``.lst`` file (``index\\tlabel(s)\\tpath`` lines).
        path_root: folder the ``.lst``/``imglist`` paths are relative to.
        path_imgidx: the ``.idx`` of ``path_imgrec``.
        shuffle: shuffle every epoch (Python's ``random``).
        part_index, num_parts: read only this part of the data.
        aug_list: augmenters (default ``CreateAugmenter(data_shape, **kwargs)``).
        imglist: list of ``[label(s)..., path]`` instead of a ``.lst``.
        data_name, label_name: names in ``provide_data``/``provide_label``.
        dtype: label dtype of the list (int32, float32, int64 or float64).
        last_batch_handle: ``'pad'``, ``'discard'`` or ``'roll_over'``.
        **kwargs: passed to ``CreateAugmenter``.

    Raises:
        ValueError: no source given, a bad dtype, data_shape or last_batch_handle,
            or shuffling/partitioning a ``.rec`` without its ``.idx``.
    """

    def __init__(
        self,
        batch_size,
        data_shape,
        label_width=1,
        path_imgrec=None,
        path_imglist=None,
        path_root=None,
        path_imgidx=None,
        shuffle=False,
        part_index=0,
        num_parts=1,
        aug_list=None,
        imglist=None,
        data_name="data",
        label_name="softmax_label",
        dtype="float32",
        last_batch_handle="pad",
        **kwargs,
    ):
        super().__init__()
        if not (path_imgrec or path_imglist or isinstance(imglist, list)):
            raise ValueError("ImageIter needs path_imgrec, path_imglist or imglist (a list)")
        if dtype not in ("int32", "float32", "int64", "float64"):
            raise ValueError(
                f"ImageIter dtype {dtype!r} label not supported: use int32, "
                "float32, int64 or float64"
            )
        if last_batch_handle not in ("pad", "discard", "roll_over"):
            raise ValueError(
                f"ImageIter last_batch_handle {last_batch_handle!r}: use 'pad', "
                "'discard' or 'roll_over'"
            )
        if path_imgrec:
            if path_imgidx:
                self.imgrec = recordio.MXIndexedRecordIO(path_imgidx, path_imgrec, "r")
                self.imgidx = list(self.imgrec.keys)
            else:
                self.imgrec = recordio.MXRecordIO(path_imgrec, "r")
                self.imgidx = None
        else:
            self.imgrec = None
        imgkeys = None
        if path_imglist:
            imglist_d, imgkeys = {}, []
            with open(path_imglist) as fin:
                for lineno, line in enumerate(iter(fin.readline, ""), 1):
                    parts = line.strip().split("\t")
                    try:
                        key = int(parts[0])
                        label = np.array(parts[1:-1], dtype=dtype)
                    except (ValueError, IndexError):
                        raise MXNetError(
                            f"{path_imglist}:{lineno}: malformed line {line!r}; "
                            "expected 'index<TAB>label(s)<TAB>path'"
                        ) from None
                    imglist_d[key] = (label, parts[-1])
                    imgkeys.append(key)
            self.imglist = imglist_d
        elif isinstance(imglist, list):
            result, imgkeys = {}, []
            for index, img in enumerate(imglist, 1):
                key = str(index)
                if len(img) > 2:
                    label = np.array(img[:-1], dtype=dtype)
                elif isinstance(img[0], Number):
                    label = np.array([img[0]], dtype=dtype)
                else:
                    label = np.array(img[0], dtype=dtype)
                result[key] = (label, img[-1])
                imgkeys.append(key)
            self.imglist = result
        else:
            self.imglist = None
        self.path_root = path_root
        self.check_data_shape(data_shape)
        data_shape = tuple(data_shape)
        self.provide_data = [(data_name, (batch_size,) + data_shape)]
        if label_width > 1:
            self.provide_label = [(label_name, (batch_size, label_width))]
        else:
            self.provide_label = [(label_name, (batch_size,))]
        self.batch_size = batch_size
        self.data_shape = data_shape
        self.label_width = label_width
        self.shuffle = shuffle
        if self.imgrec is None:
            self.seq = imgkeys
        elif shuffle or num_parts > 1 or path_imgidx:
            if self.imgidx is None:
                raise ValueError(
                    "ImageIter: shuffle or num_parts > 1 over a .rec needs its index:"
                    " pass path_imgidx"
                )
            self.seq = self.imgidx
        else:
            self.seq = None
        if num_parts > 1:
            if not 0 <= part_index < num_parts:
                raise ValueError(f"ImageIter part_index {part_index} must be in [0, {num_parts})")
            c = len(self.seq) // num_parts
            self.seq = self.seq[part_index * c : (part_index + 1) * c]
        self.auglist = CreateAugmenter(data_shape, **kwargs) if aug_list is None else aug_list
        self._numpy_path = _all_builtin(self.auglist)
        self.cur = 0
        self._allow_read = True
        self.last_batch_handle = last_batch_handle
        self.num_image = len(self.seq) if self.seq is not None else None
        self._cache_data = None
        self._cache_label = None
        self._cache_idx = None
        logging.debug("ImageIter: %s images", self.num_image)
        self.reset()

    def reset(self):
        """Start a new epoch (reshuffle; keep a roll-over remainder)."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.last_batch_handle != "roll_over" or self._cache_data is None:
            if self.imgrec is not None:
                self.imgrec.reset()
            self.cur = 0
            self._allow_read = True

    def hard_reset(self):
        """Start over, dropping any roll-over remainder."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.imgrec is not None:
            self.imgrec.reset()
        self.cur = 0
        self._allow_read = True
        self._cache_data = self._cache_label = self._cache_idx = None

    def next_sample(self):
        """``(label, encoded image bytes)`` of the next image."""
        if self._allow_read is False:
            raise StopIteration
        if self.seq is not None:
            if self.cur >= self.num_image:
                if self.last_batch_handle != "discard":
                    self.cur = 0
                raise StopIteration
            idx = self.seq[self.cur]
            self.cur += 1
            if self.imgrec is not None:
                header, img = recordio.unpack(self.imgrec.read_idx(idx))
                if self.imglist is None:
                    return header.label, img
                return self.imglist[idx][0], img
            label, fname = self.imglist[idx]
            return label, self.read_image(fname)
        s = self.imgrec.read()
        if s is None:
            if self.last_batch_handle != "discard":
                self.imgrec.reset()
            raise StopIteration
        header, img = recordio.unpack(s)
        return header.label, img

    def _batchify(self, batch_data, batch_label, start=0):
        i = start
        try:
            while i < self.batch_size:
                label, s = self.next_sample()
                data = self.imdecode(s)
                try:
                    self.check_valid_image(data)
                except RuntimeError as e:
                    logging.debug("Invalid image, skipping:  %s", str(e))
                    continue
                data = self.augmentation_transform(data)
                if np.size(label) != self.label_width:
                    raise MXNetError(
                        f"ImageIter: image {self._locate()} has {np.size(label)} label(s) but "
                        f"label_width is {self.label_width}; set label_width to match the data"
                    )
                batch_data[i] = self.postprocess_data(data)
                batch_label[i] = np.reshape(label, batch_label[i].shape)
                i += 1
        except StopIteration:
            if not i:
                raise
        return i

    def next(self):
        """The next DataBatch (data ``(batch, c, h, w)`` float32)."""
        if self._cache_data is not None:
            batch_data, batch_label, i = self._cache_data, self._cache_label, self._cache_idx
        else:
            batch_data = np.zeros((self.batch_size,) + tuple(self.data_shape), np.float32)
            batch_label = self._new_label_batch()
            i = self._batchify(batch_data, batch_label)
        pad = self.batch_size - i
        if pad != 0:
            if self.last_batch_handle == "discard":
                raise StopIteration
            if self.last_batch_handle == "roll_over" and self._cache_data is None:
                self._cache_data, self._cache_label, self._cache_idx = batch_data, batch_label, i
                raise StopIteration
            self._batchify(batch_data, batch_label, i)
            if self.last_batch_handle == "pad":
                self._allow_read = False
            else:
                self._cache_data = self._cache_label = self._cache_idx = None
        return DataBatch([_nd_array(batch_data)], [_nd_array(batch_label)], pad=pad)

    def _new_label_batch(self):
        """The label buffer of one batch (zeros)."""
        return np.zeros(self.provide_label[0][1], np.float32)

    def check_data_shape(self, data_shape):
        """Raise ValueError unless ``data_shape`` is ``(3, h, w)``."""
        if not len(data_shape) == 3:
            raise ValueError("data_shape should have length 3, with dimensions CxHxW")
        if not data_shape[0] == 3:
            raise ValueError("This iterator expects inputs to have 3 channels.")

    def check_valid_image(self, data):
        """Raise RuntimeError for an empty image (the sample is then skipped)."""
        if len(data[0].shape) == 0:
            raise RuntimeError("Data shape is wrong")

    def _locate(self):
        if self.seq is not None:
            idx = self.seq[(self.cur % self.num_image) - 1]
        else:
            idx = self.imgrec._count - 1 if self.imgrec is not None else self.cur - 1
        if self.imglist is not None:
            return f"filename: {self.imglist[idx][1]}"
        src = f" of {self.imgrec.uri}" if self.imgrec is not None else ""
        return f"index: {idx}{src}"

    def imdecode(self, s):
        """Decode one image (RGB, HWC uint8).

        Raises:
            MXNetError: ``Broken image`` naming the record index or file.
        """
        try:
            img = decode_np(s)
        except MXNetError as e:
            raise MXNetError(f"Broken image {self._locate()}: {e}") from None
        return img if self._numpy_path else _nd_array(img, dtype=np.uint8)

    def read_image(self, fname):
        """The bytes of ``fname`` under ``path_root``.

        Raises:
            MXNetError: the file cannot be read.
        """
        path = os.path.join(self.path_root, fname) if self.path_root else fname
        try:
            with open(path, "rb") as fin:
                return fin.read()
        except OSError as e:
            raise MXNetError(f"ImageIter: cannot read image {path!r}: {e.strerror}") from None

    def augmentation_transform(self, data):
        """Apply the augmenters in order."""
        for aug in self.auglist:
            data = aug(data)
        return data

    def postprocess_data(self, datum):
        """HWC -> CHW (numpy)."""
        arr = datum.asnumpy() if hasattr(datum, "asnumpy") else np.asarray(datum)
        return arr.transpose(2, 0, 1)
