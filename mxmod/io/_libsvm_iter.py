"""``mx.io.LibSVMIter`` (MXNet 1.9.1) with **dense** batches.

MXNet yields CSR sparse NDArrays; mxmod has no sparse storage, so the same rows come as
dense NDArrays of ``(batch_size,) + data_shape`` (``stype`` 'default'; the values, the
batch stream, ``pad`` and ``index`` are MXNet's). A network that reads the data densely
(FullyConnected, dot) computes the same results; sparse-only calls on the batch (CSR
``indices``/``indptr``, ``check_format``) are not available.

File format: one example per line, ``label index:value index:value ...`` with zero-based
indices. Without ``label_libsvm`` the label is each line's first number; with it, the
label file's ``index:value`` entries fill a dense label of ``label_shape``.
"""

from __future__ import annotations

import numpy as np

from ..base import MXNetError
from ._csv_iter import CSVIter, row_file_params
from ._text_files import numbered_lines

__all__ = ["LibSVMIter"]

_PARAMS = row_file_params("libsvm", num_parts=1, part_index=0)


def _load_libsvm(path, width, dtype):
    """``(first numbers, dense rows)`` of a LibSVM file.

    Raises:
        MXNetError: unreadable file, a malformed entry, or an index outside ``[0, width)``.
    """
    heads, rows = [], []
    for lineno, line in numbered_lines(path, "LibSVMIter: cannot open"):
        tokens = line.split()
        row = np.zeros(width, dtype)
        try:
            heads.append(float(tokens[0]))
            for tok in tokens[1:]:
                idx, val = tok.split(":")
                idx = int(idx)
                if not 0 <= idx < width:
                    raise MXNetError(
                        f"{path}:{lineno}: index {idx} is outside [0, {width}) "
                        "(indices are zero-based; widen data_shape/label_shape)"
                    )
                row[idx] = float(val)
        except ValueError:
            raise MXNetError(
                f"{path}:{lineno}: malformed LibSVM line {line.strip()!r}; expected "
                "'label index:value index:value ...'"
            ) from None
        rows.append(row)
    return np.asarray(heads, dtype), np.asarray(rows, dtype).reshape(len(rows), width)


class LibSVMIter(CSVIter):
    """Iterate over a LibSVM file, as ``mx.io.LibSVMIter`` but with dense batches (see the
    module docstring). Keyword arguments only; MXNet's parameter names.

    Raises:
        TypeError: positional arguments.
        MXNetError: a missing required parameter, a malformed line, an index outside the
            shape, data/label files of different lengths, a bad part, or no rows.
    """

    def __init__(self, *args, **kwargs):
        dtype = self._keyword_params("LibSVMIter", args, kwargs, _PARAMS)
        p = self.p
        width = int(np.prod(p["data_shape"]))
        heads, data = _load_libsvm(p["data_libsvm"], width, dtype)
        if p["label_libsvm"] != "NULL":
            lwidth = int(np.prod(p["label_shape"]))
            _, label = _load_libsvm(p["label_libsvm"], lwidth, dtype)
            if len(label) != len(data):
                raise MXNetError(
                    f"LibSVMIter: {p['data_libsvm']} has {len(data)} rows but "
                    f"{p['label_libsvm']} has {len(label)}"
                )
        elif tuple(p["label_shape"]) != (1,):
            raise MXNetError(
                f"LibSVMIter: label_shape {tuple(p['label_shape'])} needs label_libsvm "
                "(without it each line's first number is a scalar label)"
            )
        else:
            label = heads
        parts, k = p["num_parts"], p["part_index"]
        if not 0 <= k < parts:
            raise MXNetError(f"LibSVMIter: part_index {k} must be in [0, {parts})")
        lo, hi = len(data) * k // parts, len(data) * (k + 1) // parts
        self._data = data[lo:hi].reshape((hi - lo,) + tuple(p["data_shape"]))
        self._label = label[lo:hi].reshape((hi - lo,) + tuple(p["label_shape"]))
        if hi == lo:
            raise MXNetError(f"LibSVMIter: part {k} of {p['data_libsvm']} holds no rows")
        self._setup(dtype)
