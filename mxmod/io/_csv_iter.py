"""``mx.io.CSVIter`` (MXNet 1.9.1).

CSVIter keeps MXNet's batch stream: with ``round_batch`` (default) the last batch wraps
to the first rows with ``pad`` set and the next epoch continues where the wrap ended;
without it the last batch keeps the previous batch's rows in its tail (``pad`` counts
them) and every epoch restarts at row 0.
The data is held in memory and batches are slices of it, so ``prefetch_buffer`` has
nothing to do (accepted for compatibility); ``ctx`` is checked ('cpu'/'gpu') and batches
go to the current context or where ``place_on()`` says.
"""

from __future__ import annotations

import numpy as np

from ..base import MXNetError
from ..ndarray import NDArray
from ._native_params import BATCH_PARAMS, REQUIRED, check_params
from ._prefetch import Placement
from ._text_files import numbered_lines
from .io import DataBatch, DataDesc, MXDataIter

__all__ = ["CSVIter"]


def row_file_params(kind, **extra):
    """Parameters of the row-file iterators (CSVIter, LibSVMIter): the ``data_<kind>`` and
    ``label_<kind>`` files with their shapes, ``extra``, then MXNet's batching parameters."""
    return {
        f"data_{kind}": REQUIRED,
        "data_shape": REQUIRED,
        f"label_{kind}": "NULL",
        "label_shape": (1,),
        **extra,
        **BATCH_PARAMS,
    }


_PARAMS = row_file_params("csv")


def _parse_row(line, dtype):
    """One CSV row in ``dtype`` (integers parsed exactly: 2147483648 stays exact in int64)."""
    fields = line.split(",")
    if dtype.kind in "iu":
        try:
            return np.array([int(x) for x in fields], dtype=dtype)
        except ValueError:
            pass  # "1.0" and friends: through float, as strtod would
    return np.array([float(x) for x in fields]).astype(dtype)


def _load_csv(path, shape, what, dtype):
    width = int(np.prod(shape))
    rows = []
    for lineno, line in numbered_lines(path, "CSVIter: cannot open"):
        line = line.strip()
        try:
            vals = _parse_row(line, dtype)
        except (ValueError, OverflowError):
            raise MXNetError(f"{path}:{lineno}: not a number in {line!r}") from None
        if len(vals) != width:
            raise MXNetError(
                f"{path}:{lineno}: {len(vals)} values but {what} {tuple(shape)} needs {width}"
            )
        rows.append(vals)
    return np.asarray(rows, dtype).reshape((len(rows),) + tuple(shape))


class CSVIter(MXDataIter):
    """Iterate over rows of CSV files, as ``mx.io.CSVIter`` (keyword arguments only).

    Raises:
        TypeError: positional arguments.
        MXNetError: unknown parameters, a row of the wrong width, data/label row counts
            that differ, or fewer rows than one batch with ``round_batch``.
    """

    def __init__(self, *args, **kwargs):
        dtype = self._keyword_params("CSVIter", args, kwargs, _PARAMS)
        p = self.p
        self._data = _load_csv(p["data_csv"], p["data_shape"], "data_shape", dtype)
        n = len(self._data)
        if p["label_csv"] != "NULL":
            self._label = _load_csv(p["label_csv"], p["label_shape"], "label_shape", dtype)
            if len(self._label) != n:
                raise MXNetError(
                    f"CSVIter: {p['data_csv']} has {n} rows but {p['label_csv']} "
                    f"has {len(self._label)}"
                )
        else:
            self._label = np.zeros((n,) + tuple(p["label_shape"]), dtype)
        if n == 0:
            raise MXNetError(f"CSVIter: {p['data_csv']} holds no rows")
        self._setup(dtype)

    def _keyword_params(self, name, args, kwargs, params):
        """MXNet's keyword-only parameters, checked into ``self.p``; returns the dtype."""
        if args:
            raise TypeError(f"{name} can only accept keyword arguments")
        self.p = check_params(name, kwargs, params, {}, REQUIRED, stacklevel=4)
        MXDataIter.__init__(self, self.p["batch_size"])
        return np.dtype(self.p["dtype"] or "float32")

    def _setup(self, dtype):
        """Descriptors and cursor over the loaded ``self._data``/``self._label`` rows."""
        p, n = self.p, len(self._data)
        if tuple(p["label_shape"]) == (1,):
            self._label = self._label.reshape(n)
        self.provide_data = [
            DataDesc(p["data_name"], (self.batch_size,) + self._data.shape[1:], dtype.type)
        ]
        self.provide_label = [
            DataDesc(p["label_name"], (self.batch_size,) + self._label.shape[1:], dtype.type)
        ]
        self.placement = Placement()
        self._pos, self._wrapped, self._done = 0, False, False
        self._prev = None  # row indices of the previous batch (the stale tail)
        self._current = None

    def reset(self):
        if not (self.p["round_batch"] and self._wrapped):
            self._pos = 0
        self._wrapped, self._done = False, False

    def iter_next(self):
        n, bs = len(self._data), self.batch_size
        if self._done or self._pos >= n:
            return False
        rows = list(range(self._pos, min(self._pos + bs, n)))
        self._pos += len(rows)
        pad = bs - len(rows)
        if pad and self.p["round_batch"]:
            if pad > n:
                raise MXNetError(
                    f"{type(self).__name__}: {n} rows are fewer than the batch size {bs} "
                    "(number of input must be bigger than batch size)"
                )
            rows += list(range(pad))
            self._pos, self._wrapped, self._done = pad, True, True
        elif pad:
            stale = self._prev if self._prev is not None else [rows[0]] * bs
            rows += stale[len(rows) :]
            self._done = True
        self._prev = rows
        self._current = self._batch(np.asarray(rows), pad)
        return True

    def _batch(self, idx, pad):
        """The DataBatch of rows ``idx`` (``pad`` of them repeated)."""
        return DataBatch(
            [NDArray(self.placement.put(self.provide_data[0].name, self._data[idx]))],
            [NDArray(self.placement.put(self.provide_label[0].name, self._label[idx]))],
            pad=pad,
            index=idx,
            provide_data=self.provide_data,
            provide_label=self.provide_label,
        )
