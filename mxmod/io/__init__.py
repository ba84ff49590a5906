"""Data iterators, as ``mxnet.io``: DataDesc, DataBatch, DataIter, NDArrayIter, ResizeIter,
PrefetchingIter (MXNet 1.9.1 behaviour; see :mod:`mxmod.io.io`)."""
from . import io
from .io import DataBatch, DataDesc, DataIter, NDArrayIter, PrefetchingIter, ResizeIter

__all__ = ["DataBatch", "DataDesc", "DataIter", "NDArrayIter", "PrefetchingIter", "ResizeIter"]
