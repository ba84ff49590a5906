"""Model helpers, as ``mxnet.model``: ``BatchEndParam`` (checkpoint helpers follow)."""
from collections import namedtuple

#: What batch-end and eval-end callbacks receive, as ``mxnet.model.BatchEndParam``
#: (note the type name ``BatchEndParams``). ``nbatch`` is 0-based within the epoch and
#: ``locals`` is the caller's ``locals()``.
BatchEndParam = namedtuple("BatchEndParams", ["epoch", "nbatch", "eval_metric", "locals"])
