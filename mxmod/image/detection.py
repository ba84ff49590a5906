"""``mxnet.image.detection`` (MXNet 1.9.1): ``ImageDetIter`` and the detection augmenters.

A detection label is ``[header_width, object_width, (more header...), object, object, ...]``
with each object ``[class, xmin, ymin, xmax, ymax, (extra...)]`` in relative coordinates;
a batch's label is ``(batch, max objects, object_width)``, padded with -1.
"""

from __future__ import annotations

import logging

import numpy as np

from ..ndarray import NDArray
from . import _det_augmenters
from ._det_augmenters import *  # noqa: F403 -- as _det_augmenters.__all__
from ._det_augmenters import CreateDetAugmenter, DetBorrowAug, DetRandomSelectAug
from ._image_iter import ImageIter, _all_builtin

__all__ = _det_augmenters.__all__ + ["ImageDetIter"]

_BUILTIN_DET = tuple(
    getattr(_det_augmenters, n)
    for n in _det_augmenters.__all__
    if n.startswith("Det") and n != "DetAugmenter"
)


def _det_all_builtin(augs):
    for a in augs:
        if type(a) not in _BUILTIN_DET:
            return False
        if isinstance(a, DetBorrowAug) and not _all_builtin([a.augmenter]):
            return False
        if isinstance(a, DetRandomSelectAug) and not _det_all_builtin(a.aug_list):
            return False
    return True


class ImageDetIter(ImageIter):
    """Image iterator for object detection, as ``mx.image.ImageDetIter``.

    Takes ImageIter's sources (``path_imgrec``, ``path_imglist`` or ``imglist`` whose
    labels are raw detection labels) and ``CreateDetAugmenter``'s keyword arguments.
    ``provide_label`` is ``(batch_size, max objects in the data, object_width)``.

    Raises:
        RuntimeError: a label that is not a detection label (when the shape is estimated).
    """

    def __init__(
        self,
        batch_size,
        data_shape,
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
        label_name="label",
        last_batch_handle="pad",
        **kwargs,
    ):
        super().__init__(
            batch_size=batch_size,
            data_shape=data_shape,
            path_imgrec=path_imgrec,
            path_imglist=path_imglist,
            path_root=path_root,
            path_imgidx=path_imgidx,
            shuffle=shuffle,
            part_index=part_index,
            num_parts=num_parts,
            aug_list=[],
            imglist=imglist,
            data_name=data_name,
            label_name=label_name,
            last_batch_handle=last_batch_handle,
        )
        self.auglist = CreateDetAugmenter(data_shape, **kwargs) if aug_list is None else aug_list
        self._numpy_path = _det_all_builtin(self.auglist)
        label_shape = self._estimate_label_shape()
        self.provide_label = [(label_name, (self.batch_size,) + label_shape)]
        self.label_shape = label_shape

    def _check_valid_label(self, label):
        if len(label.shape) != 2 or label.shape[1] < 5:
            raise RuntimeError(f"Label with shape (1+, 5+) required, {label} received.")
        valid = (label[:, 0] >= 0) & (label[:, 3] > label[:, 1]) & (label[:, 4] > label[:, 2])
        if not valid.any():
            raise RuntimeError("Invalid label occurs.")

    def _estimate_label_shape(self):
        """``(max objects per image, object width)`` over one pass of the data."""
        max_count, width = 0, None
        self.reset()
        try:
            while True:
                label, _ = self.next_sample()
                label = self._parse_label(label)
                max_count, width = max(max_count, label.shape[0]), label.shape[1]
        except StopIteration:
            pass
        self.reset()
        if width is None:
            raise RuntimeError("ImageDetIter: the data source holds no images")
        return (max_count, width)

    def _parse_label(self, label):
        """The valid objects ``(n, object_width)`` of a raw detection label.

        Raises:
            RuntimeError: too short, inconsistent with its object width, or no valid box.
        """
        if isinstance(label, NDArray):
            label = label.asnumpy()
        raw = np.asarray(label).ravel()
        if raw.size < 7:
            raise RuntimeError(f"Label shape is invalid: {raw.shape}")
        header_width, obj_width = int(raw[0]), int(raw[1])
        if obj_width < 1 or (raw.size - header_width) % obj_width != 0:
            raise RuntimeError(
                f"Label shape {raw.shape} inconsistent with annotation width {obj_width}."
            )
        out = np.reshape(raw[header_width:], (-1, obj_width))
        valid = (out[:, 3] > out[:, 1]) & (out[:, 4] > out[:, 2])
        if not valid.any():
            raise RuntimeError("Encounter sample with no valid label.")
        return out[valid]

    def reshape(self, data_shape=None, label_shape=None):
        """Change ``data_shape`` and/or ``label_shape`` (more objects per image only)."""
        if data_shape is not None:
            self.check_data_shape(data_shape)
            self.provide_data = [(self.provide_data[0][0], (self.batch_size,) + tuple(data_shape))]
            self.data_shape = tuple(data_shape)
        if label_shape is not None:
            self.check_label_shape(label_shape)
            self.provide_label = [
                (self.provide_label[0][0], (self.batch_size,) + tuple(label_shape))
            ]
            self.label_shape = tuple(label_shape)

    def _new_label_batch(self):
        return np.full(self.provide_label[0][1], -1, np.float32)

    def _batchify(self, batch_data, batch_label, start=0):
        i = start
        try:
            while i < self.batch_size:
                label, s = self.next_sample()
                data = self.imdecode(s)
                try:
                    self.check_valid_image([data])
                    label = self._parse_label(label)
                    data, label = self.augmentation_transform(data, label)
                    self._check_valid_label(label)
                except RuntimeError as e:
                    logging.debug("Invalid image, skipping:  %s", str(e))
                    continue
                batch_data[i] = self.postprocess_data(data)
                n = label.shape[0]
                if n > batch_label.shape[1]:
                    raise RuntimeError(
                        f"ImageDetIter: an image has {n} objects but label_shape allows "
                        f"{batch_label.shape[1]}; call reshape(label_shape=...) first"
                    )
                batch_label[i][:n] = label
                batch_label[i][n:] = -1
                i += 1
        except StopIteration:
            if not i:
                raise
        return i

    def augmentation_transform(self, data, label):
        """Apply the detection augmenters in order; returns ``(data, label)``."""
        for aug in self.auglist:
            data, label = aug(data, label)
        return data, label

    def check_label_shape(self, label_shape):
        """Raise ValueError unless ``label_shape`` is 2-d, not fewer objects, same width."""
        if not len(label_shape) == 2:
            raise ValueError("label_shape should have length 2")
        if label_shape[0] < self.label_shape[0]:
            raise ValueError(
                f"Attempts to reduce label count from {self.label_shape[0]} to "
                f"{label_shape[0]}, not allowed."
            )
        if label_shape[1] != self.provide_label[0][1][2]:
            raise ValueError(
                f"label_shape object width inconsistent: {self.provide_label[0][1][2]} vs "
                f"{label_shape[1]}."
            )

    def sync_label_shape(self, it, verbose=False):
        """Give this iterator and ``it`` the same label shape (the larger object count).

        Returns ``it``.

        Raises:
            TypeError: ``it`` is not an ImageDetIter.
            ValueError: the object widths differ.
        """
        if not isinstance(it, ImageDetIter):
            raise TypeError(f"sync_label_shape needs an ImageDetIter, got {type(it).__name__}")
        mine, theirs = self.label_shape, it.label_shape
        if mine[1] != theirs[1]:
            raise ValueError(f"object width mismatch: {mine[1]} vs {theirs[1]}")
        max_count = max(mine[0], theirs[0])
        if max_count > mine[0]:
            self.reshape(None, (max_count, mine[1]))
        if max_count > theirs[0]:
            it.reshape(None, (max_count, theirs[1]))
        if verbose and max_count > min(mine[0], theirs[0]):
            logging.info("Resized label_shape to (%d, %d).", max_count, mine[1])
        return it

    def draw_next(self, *args, **kwargs):
        """Not supported: mxmod draws no windows."""
        raise NotImplementedError(
            "ImageDetIter.draw_next (OpenCV windows) is not supported by mxmod; take "
            "batches with next() and draw the boxes with cv2.rectangle yourself"
        )
