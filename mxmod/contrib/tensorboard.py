"""``mx.contrib.tensorboard``: metric logging to TensorBoard event files, as
``mxnet.contrib.tensorboard`` of MXNet 1.9.1.

MXNet writes through ``mxboard`` (which needs MXNet itself); mxmod writes the same
TensorBoard event files through ``tensorboardX``, the standard writer outside
TensorFlow and PyTorch (``pip install 'mxmod[tensorboard]'`` or ``pip install
tensorboardX``). View them with ``tensorboard --logdir <logging_dir>``.
"""

from __future__ import annotations

import os
import uuid

__all__ = ["LogMetricsCallback"]


class LogMetricsCallback:
    """Write each metric value as a TensorBoard scalar, as
    ``mxnet.contrib.tensorboard.LogMetricsCallback``.

    Use it as a ``batch_end_callback`` (training metrics) or an ``eval_end_callback``
    (validation metrics) of ``fit``. Each call writes every ``(name, value)`` of
    ``param.eval_metric.get_name_value()`` under the tag ``name`` (``'<prefix>-<name>'``
    with a prefix) at ``global_step=param.epoch``, as MXNet does, so batch-end values of
    one epoch share a step. A background thread writes the events to disk within
    ``flush_secs`` seconds; :meth:`close` writes the rest.

    Differences from MXNet: a missing writer raises ImportError when the callback is made
    (MXNet logs an error and fails on the first call); ``flush_secs`` and :meth:`close`
    are added.

    Args:
        logging_dir: folder for the event files (created if missing).
        prefix: put before each metric name, e.g. ``'train'`` and ``'eval'`` to draw two
            runs' curves apart.
        flush_secs: most seconds an event waits before it reaches the file (mxmod
            addition, keyword only).

    Raises:
        ImportError: tensorboardX is not installed.
        TypeError: ``logging_dir`` is not a path or ``prefix`` is not a string.
        ValueError: ``flush_secs`` is not a positive number.

    Examples:
        >>> mod.fit(train, eval_data=val, num_epoch=5,
        ...         batch_end_callback=mx.contrib.tensorboard.LogMetricsCallback('logs/train'),
        ...         eval_end_callback=mx.contrib.tensorboard.LogMetricsCallback('logs/eval'))
    """

    def __init__(self, logging_dir, prefix=None, *, flush_secs=5):
        if not isinstance(logging_dir, (str, os.PathLike)):
            raise TypeError(
                f"LogMetricsCallback logging_dir must be a folder path, "
                f"got {type(logging_dir).__name__}"
            )
        if not isinstance(flush_secs, (int, float)) or flush_secs <= 0:
            raise ValueError(
                f"LogMetricsCallback flush_secs must be a positive number of "
                f"seconds, got {flush_secs!r}"
            )
        if prefix is not None and not isinstance(prefix, str):
            raise TypeError(
                f"LogMetricsCallback prefix must be a string or None, got {type(prefix).__name__}"
            )
        try:
            from tensorboardX import SummaryWriter
        except ImportError as err:
            raise ImportError(
                "mx.contrib.tensorboard.LogMetricsCallback writes TensorBoard events with "
                "tensorboardX: pip install tensorboardX (or pip install 'mxmod[tensorboard]')"
            ) from err
        self.prefix = prefix
        # a suffix of its own: two writers opened in one second in one folder would otherwise
        # share a file name and corrupt each other's events
        self.summary_writer = SummaryWriter(
            os.fspath(logging_dir), flush_secs=flush_secs, filename_suffix=f".{uuid.uuid4().hex}"
        )

    def __call__(self, param):
        """Write the metric's current values at step ``param.epoch``."""
        if param.eval_metric is None:
            return
        for name, value in param.eval_metric.get_name_value():
            if self.prefix is not None:
                name = f"{self.prefix}-{name}"
            self.summary_writer.add_scalar(name, value, global_step=param.epoch)

    def close(self):
        """Write what is pending and close the event file (mxmod addition)."""
        self.summary_writer.close()
