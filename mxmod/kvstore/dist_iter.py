"""Equal steps on every worker of a ``dist_sync`` job.

Every step of a multi-process Module is one collective program, so all workers must run
the same number of them, and the same program (a BucketingModule's bucket) each time.
MXNet hung at the last batch when the workers' iterators had different lengths; here the
workers agree batch by batch, and when one runs out the others drop the rest of their
epoch (logged, naming the workers). Batches whose ``bucket_key`` differs between workers
raise an error naming the ranks.
"""

from __future__ import annotations

import logging
import zlib

import numpy as np

from ..base import MXNetError
from . import dist

__all__ = ["EqualSteps", "wrap_for_workers"]


class EqualSteps:
    """A data iterator yielding a batch only while every worker has one.

    Wraps any MXNet-style iterator (``provide_data``, ``reset``, ``next``); other
    attributes are the wrapped iterator's. ``dropped`` counts, per epoch, the batches this
    worker had left when another worker ran out.
    """

    def __init__(self, data_iter, what: str = "train_data", logger=logging):
        self._it = data_iter
        self._what = what
        self._logger = logger
        self.dropped = 0

    def __getattr__(self, name):
        return getattr(self._it, name)

    def __iter__(self):
        return self

    def reset(self) -> None:
        self.dropped = 0
        self._it.reset()

    def __next__(self):
        try:
            batch = next(self._it)
            have = 1
        except StopIteration:
            batch, have = None, 0
        key = zlib.crc32(repr(getattr(batch, "bucket_key", None)).encode()) & 0x7FFFFFFF
        every = dist.allgather(np.array([have, key], np.int64)).reshape(-1, 2)
        keys, every = every[:, 1], every[:, 0]
        if every.all():
            if (keys != keys[0]).any():
                bad = [r for r in range(len(keys)) if keys[r] != keys[0]]
                raise MXNetError(
                    f"dist_sync: {self._what} gave worker(s) {bad} another bucket_key than "
                    f"rank 0 at the same step; every worker must run the same bucket each "
                    "step (one program over all of them): order the buckets the same way on "
                    "every worker"
                )
            return batch
        if every.any():
            done = [r for r, h in enumerate(every) if not h]
            if have:
                self.dropped += 1
            self._logger.warning(
                "dist_sync: %s of worker(s) %s ran out before the others; every worker "
                "ends this epoch here (worker %d drops its remaining batches) so all run "
                "the same number of steps. Give every worker the same number of batches "
                "(num_parts/part_index split evenly, last_batch_handle='pad') to use all "
                "data.",
                self._what,
                done,
                dist.rank(),
            )
        raise StopIteration

    next = __next__


def is_multi_worker(kvstore) -> bool:
    """Whether ``kvstore`` (a name or a store) trains over several worker processes."""
    if isinstance(kvstore, str):
        return "dist" in kvstore.lower() and dist.num_workers() > 1
    return kvstore is not None and getattr(kvstore, "num_workers", 1) > 1


def wrap_for_workers(kvstore, train_data, eval_data, logger=logging):
    """``(train_data, eval_data)`` wrapped in :class:`EqualSteps` for a multi-worker
    store; unchanged otherwise."""
    if not is_multi_worker(kvstore):
        return train_data, eval_data
    train_data = EqualSteps(train_data, "train_data", logger)
    if eval_data is not None:
        eval_data = EqualSteps(eval_data, "eval_data", logger)
    return train_data, eval_data
