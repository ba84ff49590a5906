"""``mx.log``: MXNet's logger factory, whose records read like glog's
(``W1129 13:07:53 4242 train.py:main:12] text``)."""

from __future__ import annotations

import logging
import warnings
from logging import CRITICAL, DEBUG, ERROR, INFO, NOTSET, WARNING

__all__ = ["get_logger", "getLogger", "CRITICAL", "DEBUG", "ERROR", "INFO", "NOTSET", "WARNING"]

_LETTERS = {CRITICAL: "C", ERROR: "E", WARNING: "W", INFO: "I", DEBUG: "D"}
_COLORS = {CRITICAL: "\x1b[35m", ERROR: "\x1b[31m", WARNING: "\x1b[33m", INFO: "\x1b[32m"}


class GlogFormatter(logging.Formatter):
    """``<level letter><MMDD HH:MM:SS> <pid> <file>:<function>:<line>] <message>``, the
    prefix coloured by level on a terminal stream."""

    def __init__(self, color: bool = True):
        super().__init__(datefmt="%m%d %H:%M:%S")
        self._color = color

    def format(self, record: logging.LogRecord) -> str:
        head = f"{_LETTERS.get(record.levelno, 'U')}%(asctime)s %(process)d "
        head += "%(filename)s:%(funcName)s:%(lineno)d]"
        if self._color and record.levelno in _COLORS:
            head = f"{_COLORS[record.levelno]}{head}\x1b[0m"
        self._style._fmt = head + " %(message)s"
        return super().format(record)


def get_logger(name=None, filename=None, filemode=None, level=WARNING) -> logging.Logger:
    """The logger ``name``, given on its first request a handler (a file ``filename``
    opened with ``filemode``, ``"a"`` by default, else standard error) and ``level``; the
    root logger (``name=None``) is returned untouched, as MXNet does."""
    logger = logging.getLogger(name)
    if name is not None and not getattr(logger, "_init_done", False):
        logger._init_done = True
        if filename:
            handler = logging.FileHandler(filename, filemode or "a")
            handler.setFormatter(GlogFormatter(color=False))
        else:
            handler = logging.StreamHandler()
            handler.setFormatter(GlogFormatter())
        logger.addHandler(handler)
        logger.setLevel(level)
    return logger


def getLogger(name=None, filename=None, filemode=None, level=WARNING) -> logging.Logger:
    """Deprecated spelling of :func:`get_logger` (MXNet warns the same way)."""
    warnings.warn("getLogger is deprecated, use get_logger instead.", DeprecationWarning, 2)
    return get_logger(name, filename, filemode, level)
