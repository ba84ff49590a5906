"""Training callbacks, as ``mxnet.callback`` (MXNet 1.9.1 behaviour and log formats).

Batch-end callbacks take a :class:`mxmod.model.BatchEndParam`; epoch-end callbacks are
called as ``cb(epoch, symbol, arg_params, aux_params)``. Logging goes through the root
``logging`` module, as in MXNet.
"""

from __future__ import annotations

import logging
import math
import time

from .kvstore import dist
from . import model
from .model import save_checkpoint  # noqa: F401  (MXNet's callback module re-exports it)

__all__ = [
    "module_checkpoint",
    "do_checkpoint",
    "log_train_metric",
    "Speedometer",
    "ProgressBar",
    "TqdmProgressBar",
    "LogValidationMetricsCallback",
]


def _period(period) -> int:
    return int(max(1, period))


def _writer() -> bool:
    """Whether this process writes checkpoints: rank 0 of a multi-worker ``dist_sync`` job
    (the workers hold equal weights), or the only process."""
    return dist.rank() == 0


def module_checkpoint(mod, prefix, period=1, save_optimizer_states=False):
    """Epoch-end callback calling ``mod.save_checkpoint(prefix, epoch + 1,
    save_optimizer_states)`` every ``period`` epochs (the passed params are ignored); in a
    multi-worker ``dist_sync`` job only rank 0 writes.

    Args:
        mod: the module to checkpoint.
        prefix: file prefix.
        period: epochs between checkpoints (at least 1).
        save_optimizer_states: also write ``prefix-NNNN.states``.
    """
    period = _period(period)

    def _callback(iter_no, sym=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0 and _writer():
            mod.save_checkpoint(prefix, iter_no + 1, save_optimizer_states)

    return _callback


def do_checkpoint(prefix, period=1):
    """Epoch-end callback writing ``prefix-symbol.json`` and ``prefix-NNNN.params`` through
    ``mxmod.model.save_checkpoint``, numbered ``epoch + 1``, every ``period`` epochs; in a
    multi-worker ``dist_sync`` job only rank 0 writes.

    Args:
        prefix: file prefix.
        period: epochs between checkpoints (at least 1).
    """
    period = _period(period)

    def _callback(iter_no, sym, arg, aux):
        if (iter_no + 1) % period == 0 and _writer():
            model.save_checkpoint(prefix, iter_no + 1, sym, arg, aux)

    return _callback


def log_train_metric(period, auto_reset=False):
    """Batch-end callback logging ``'Iter[%d] Batch[%d] Train-%s=%f'`` every ``period``
    batches; with ``auto_reset`` the metric's local statistics are then reset.

    Args:
        period: batches between logs.
        auto_reset: call ``eval_metric.reset_local()`` after logging.
    """

    def _callback(param):
        if param.nbatch % period == 0 and param.eval_metric is not None:
            for name, value in param.eval_metric.get_name_value():
                logging.info(
                    "Iter[%d] Batch[%d] Train-%s=%f", param.epoch, param.nbatch, name, value
                )
            if auto_reset:
                param.eval_metric.reset_local()

    return _callback


class Speedometer:
    """Log throughput and the metric every ``frequent`` batches, as
    ``mxnet.callback.Speedometer``.

    The first call of each epoch only starts the clock. Logs
    ``'Epoch[%d] Batch [%d-%d]\\tSpeed: %.2f samples/sec\\t%s=%f...'`` (``auto_reset``:
    the metric's local statistics are reset after each log, so values cover the last
    ``frequent`` batches), ``'Epoch[%d] Batch [0-%d]...'`` without ``auto_reset``, or
    ``'Iter[%d] Batch [%d]\\tSpeed: %.2f samples/sec'`` without a metric. Reading the
    metric is the only host sync the training loop makes; it happens before the clock is
    read, so the speed counts the computation of the batches, not their dispatch.

    Args:
        batch_size: samples per batch.
        frequent: batches between logs.
        auto_reset: reset the metric's local statistics after each log.
    """

    def __init__(self, batch_size, frequent=50, auto_reset=True):
        self.batch_size = batch_size
        self.frequent = frequent
        self.init = False
        self.tic = 0
        self.last_count = 0
        self.auto_reset = auto_reset

    def __call__(self, param):
        count = param.nbatch
        if self.last_count > count:
            self.init = False
        self.last_count = count

        if not self.init:
            self.init = True
            self.tic = time.time()
            return
        if count % self.frequent != 0:
            return
        # read the metric first: it waits for the batches dispatched so far, so the speed
        # is the work's (MXNet's metric update syncs every batch), not the dispatch's
        name_value = None if param.eval_metric is None else param.eval_metric.get_name_value()
        try:
            speed = self.frequent * self.batch_size / (time.time() - self.tic)
        except ZeroDivisionError:
            speed = float("inf")
        if param.eval_metric is not None:
            flat = sum(name_value, ())
            if self.auto_reset:
                param.eval_metric.reset_local()
                msg = "Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec"
                msg += "\t%s=%f" * len(name_value)
                logging.info(msg, param.epoch, count - self.frequent, count, speed, *flat)
            else:
                msg = "Epoch[%d] Batch [0-%d]\tSpeed: %.2f samples/sec"
                msg += "\t%s=%f" * len(name_value)
                logging.info(msg, param.epoch, count, speed, *flat)
        else:
            logging.info("Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec", param.epoch, count, speed)
        self.tic = time.time()


class ProgressBar:
    """Log a progress bar of the batches done in the epoch, as
    ``mxnet.callback.ProgressBar``.

    Args:
        total: batches per epoch.
        length: characters in the bar.
    """

    def __init__(self, total, length=80):
        if not total or total <= 0:
            raise ValueError(
                f"ProgressBar total must be a positive number of batches, got {total!r}"
            )
        self.bar_len = length
        self.total = total

    def __call__(self, param):
        count = param.nbatch
        filled_len = int(round(self.bar_len * count / float(self.total)))
        percents = math.ceil(100.0 * count / float(self.total))
        prog_bar = "=" * filled_len + "-" * (self.bar_len - filled_len)
        logging.info("[%s] %s%s\r", prog_bar, percents, "%")


class TqdmProgressBar:
    """A ``tqdm.auto`` bar per epoch with the metric beside it (mxmod addition: MXNet has
    only the logging :class:`ProgressBar`).

    Use it as a ``fit``/``score`` batch-end callback. ``tqdm.auto`` renders a widget in
    Jupyter and Colab and text in a terminal. The metric is read (a device-to-host
    sync) at most every ``refresh_secs`` seconds and at the end of an epoch (its last
    batch by ``total``, or ``fit``'s ``end_of_batch``), so the bar does not slow the fused
    training step. With ``total=None`` the first epoch counts batches without a total and
    later epochs take the count of the one before.

    Args:
        total: batches per epoch, or None to learn it from the first epoch.
        refresh_secs: least seconds between metric reads.
        desc: bar label; ``{epoch}`` is replaced by the epoch number.
        leave: keep each finished bar on screen.
        **tqdm_kwargs: passed to ``tqdm.auto.tqdm`` (e.g. ``file``, ``ncols``).

    Raises:
        ValueError: ``total`` or ``refresh_secs`` is not a positive number.
        ImportError: tqdm is not installed (``pip install tqdm``).
    """

    def __init__(
        self, total=None, refresh_secs=0.5, desc="Epoch[{epoch}]", leave=True, **tqdm_kwargs
    ):
        if total is not None and (not isinstance(total, int) or total <= 0):
            raise ValueError(
                f"TqdmProgressBar total must be a positive int number of "
                f"batches or None (learn it from the first epoch), got {total!r}"
            )
        if not isinstance(refresh_secs, (int, float)) or refresh_secs < 0:
            raise ValueError(
                f"TqdmProgressBar refresh_secs must be a number of seconds >= 0, "
                f"got {refresh_secs!r}"
            )
        try:
            from tqdm.auto import tqdm
        except ImportError as err:
            raise ImportError("mx.callback.TqdmProgressBar needs tqdm: pip install tqdm") from err
        self._tqdm = tqdm
        self.total, self.refresh_secs, self.desc, self.leave = total, refresh_secs, desc, leave
        self.tqdm_kwargs = tqdm_kwargs
        self.bar = None
        self._epoch = None
        self._read_at = 0.0

    def __call__(self, param):
        done = param.nbatch + 1
        if self.bar is None or param.epoch != self._epoch or done <= self.bar.n:
            self._open(param.epoch)
        self.bar.update(done - self.bar.n)
        now = time.monotonic()
        end = (self.total is not None and done >= self.total) or bool(
            (param.locals or {}).get("end_of_batch")
        )  # fit's last batch of the epoch
        if param.eval_metric is not None and (end or now - self._read_at >= self.refresh_secs):
            self.bar.set_postfix(dict(param.eval_metric.get_name_value()), refresh=False)
            self._read_at = now
        if end:
            if self.total is None:
                self.total = done  # the first epoch tells the size
            self.close()

    def _open(self, epoch):
        if self.bar is not None:
            if self.total is None:
                self.total = self.bar.n  # the epoch just finished tells the size
            self.close()
        self._epoch = epoch
        self.bar = self._tqdm(
            total=self.total,
            desc=self.desc.format(epoch=epoch),
            leave=self.leave,
            unit="batch",
            **self.tqdm_kwargs,
        )
        self._read_at = time.monotonic()

    def close(self):
        """Finish the open bar (``fit`` closes each one when its epoch's last batch ends
        and ``total`` is known)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class LogValidationMetricsCallback:
    """Eval-end callback logging ``'Epoch[%d] Validation-%s=%f'`` per metric value, as
    ``mxnet.callback.LogValidationMetricsCallback``."""

    def __call__(self, param):
        if not param.eval_metric:
            return
        for name, value in param.eval_metric.get_name_value():
            logging.info("Epoch[%d] Validation-%s=%f", param.epoch, name, value)
