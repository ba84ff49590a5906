"""Background batch pipeline for the native-style iterators: a producer thread keeps the
next batches being built by a pool of worker threads, finishes them in order, places
them on the bound devices and queues up to ``depth`` of them ahead of the consumer.

Threads run truly in parallel here because the heavy work (OpenCV decode/resize, numpy
arithmetic on whole images) releases the GIL, like MXNet's OpenMP decoder threads. An
exception in a worker reaches the consumer's ``next()`` unchanged (with the file and
record it names); a producer that dies without one is reported, never waited on forever.
"""

from __future__ import annotations

import atexit
import collections
import queue
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

import jax
import numpy as np

from ..base import MXNetError
from ..context import Context, current_context

_END = object()
_LIVE: "weakref.WeakSet[BatchPipeline]" = weakref.WeakSet()


@atexit.register
def _stop_all():
    """Stop producers before the interpreter tears down (a thread inside OpenCV at exit
    aborts the process)."""
    for p in list(_LIVE):
        p.close()


def aligned_empty(shape, dtype, align=64):
    """An uninitialised numpy array on a 64-byte boundary: ``jax.device_put`` to a CPU
    device then adopts its memory instead of copying it (each batch gets a fresh buffer,
    never written after it is handed over)."""
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.empty(nbytes + align, np.uint8)
    off = (-raw.ctypes.data) % align
    return raw[off : off + nbytes].view(dtype).reshape(shape)


class Placement:
    """Where finished batches go: the current context's device by default, or per-input
    ``jax`` shardings/devices set with :meth:`set` (the Module's ``input_sharding``)."""

    def __init__(self):
        self.by_name: dict = {}
        self.default = None
        self.version = 0

    def set(self, target):
        """``target``: a ``{input name: Sharding or Device}`` dict, one Sharding/Device for
        every input, an mxmod Context, or None (back to the current context)."""
        self.by_name, self.default = {}, None
        self.version += 1
        if isinstance(target, dict):
            self.by_name = dict(target)
        elif isinstance(target, Context):
            self.default = target.jax_device
        elif target is not None:
            self.default = target

    def put(self, name, arr):
        dev = self.by_name.get(name, self.default)
        if dev is None:
            dev = current_context().jax_device
        return jax.device_put(arr, dev)


class BatchPipeline:
    """Build batches ahead of time.

    Args:
        num_threads: worker threads for the per-sample work.
        depth: finished batches kept ready (MXNet's ``prefetch_buffer``).
        start_batch: ``spec -> (buffers, [callables])``: allocates a batch and returns the
            per-chunk jobs that fill it (run in the pool).
        finish_batch: ``(spec, buffers) -> batch``: runs in order in the producer (device
            placement).

    Both are bound methods of the iterator and are held weakly: an iterator dropped
    mid-epoch is collected, and its producer thread then ends by itself.
    """

    def __init__(self, num_threads, depth, start_batch, finish_batch):
        self.pool = ThreadPoolExecutor(max(1, num_threads), thread_name_prefix="mxmod-decode")
        self.depth = max(1, int(depth))
        self._start_ref = weakref.WeakMethod(start_batch)
        self._finish_ref = weakref.WeakMethod(finish_batch)
        self.thread = None
        self.queue = None
        self.stop_event = threading.Event()
        _LIVE.add(self)

    def start(self, specs):
        """Begin producing the batches of ``specs`` (an iterable) in order."""
        self.stop()
        self.stop_event = threading.Event()
        self.queue = queue.Queue(self.depth)
        self.thread = threading.Thread(
            target=self._produce,
            name="mxmod-prefetch",
            args=(iter(specs), self.queue, self.stop_event),
            daemon=True,
        )
        self.thread.start()

    def _put(self, q, item, stop):
        while not stop.is_set() and self._start_ref() is not None:
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _produce(self, specs, q, stop):
        inflight = collections.deque()
        try:
            while not stop.is_set():
                while len(inflight) <= self.depth:
                    spec = next(specs, _END)
                    if spec is _END:
                        break
                    start_batch = self._start_ref()
                    if start_batch is None:  # the iterator is gone
                        return
                    bufs, jobs = start_batch(spec)
                    inflight.append((spec, bufs, [self.pool.submit(j) for j in jobs]))
                    del start_batch, jobs  # the jobs' closures hold the iterator
                if not inflight:
                    self._put(q, (_END, None), stop)
                    return
                spec, bufs, futs = inflight.popleft()
                for f in futs:
                    f.result()
                finish_batch = self._finish_ref()
                if finish_batch is None:
                    return
                batch = finish_batch(spec, bufs)
                del finish_batch
                if not self._put(q, (batch, None), stop):
                    return
        except BaseException as e:  # handed to the consumer, raised there
            self._put(q, (None, e), stop)
        finally:
            for _, _, futs in inflight:
                for f in futs:
                    f.cancel()

    def next(self):
        """The next finished batch; StopIteration at the end of the specs.

        Raises:
            MXNetError: the producer thread died without reporting why.
        """
        if self.thread is None:
            raise StopIteration
        while True:
            try:
                item, err = self.queue.get(timeout=1.0)
                break
            except queue.Empty:
                if not self.thread.is_alive() and self.queue.empty():
                    raise MXNetError(
                        "the data pipeline's prefetch thread stopped without a "
                        "result (killed?); call reset() to restart it"
                    ) from None
        if err is not None:
            self.thread = None
            raise err
        if item is _END:
            self.thread = None
            raise StopIteration
        return item

    def stop(self):
        """Stop producing and drop queued batches."""
        if self.thread is None:
            return
        self.stop_event.set()
        if self.thread is threading.current_thread():  # dropped by the producer itself
            return
        while self.thread.is_alive():
            try:
                self.queue.get(timeout=0.05)
            except queue.Empty:
                pass
        self.thread.join()
        self.thread = None

    def run_now(self, jobs):
        """Run jobs in the pool and wait (used outside the prefetch, e.g. mean images)."""
        for f in [self.pool.submit(j) for j in jobs]:
            f.result()

    def close(self, wait=True):
        """Stop the producer and the worker pool (``wait=False`` from finalizers)."""
        self.stop()
        self.pool.shutdown(
            wait=wait and not threading.current_thread().name.startswith("mxmod-decode"),
            cancel_futures=True,
        )
