"""Data iterators, as ``mxnet.io``: DataDesc, DataBatch, DataIter, NDArrayIter, ResizeIter,
PrefetchingIter (MXNet 1.9.1 behaviour; see :mod:`mxmod.io.io`) and the native iterators
ImageRecordIter, MNISTIter, CSVIter and LibSVMIter (dense batches: no sparse storage)."""

from . import io as io
from ._csv_iter import CSVIter
from ._image_det_record_iter import ImageDetRecordIter
from ._image_record_iter import (
    ImageRecordInt8Iter,
    ImageRecordIter,
    ImageRecordIter_v1,
    ImageRecordUInt8Iter,
    ImageRecordUInt8Iter_v1,
)
from ._libsvm_iter import LibSVMIter
from ._mnist_iter import MNISTIter
from .io import (
    DataBatch,
    DataDesc,
    DataIter,
    MXDataIter,
    NDArrayIter,
    PrefetchingIter,
    ResizeIter,
)

__all__ = [
    "DataBatch",
    "DataDesc",
    "DataIter",
    "NDArrayIter",
    "PrefetchingIter",
    "ResizeIter",
    "ImageRecordIter",
    "ImageRecordUInt8Iter",
    "ImageRecordInt8Iter",
    "ImageRecordIter_v1",
    "ImageRecordUInt8Iter_v1",
    "MXDataIter",
    "ImageDetRecordIter",
    "MNISTIter",
    "CSVIter",
    "LibSVMIter",
]
