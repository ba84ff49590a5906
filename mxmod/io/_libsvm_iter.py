"""``mx.io.LibSVMIter`` (MXNet 1.9.1): csr batches from LibSVM files.

Each batch's data is a ``CSRNDArray`` of shape ``(batch_size, data_shape[0])``; the label
is a dense ``(batch_size,)`` array of each line's first number, or, with ``label_libsvm``,
a ``CSRNDArray`` of ``(batch_size, label_shape[0])`` from the label file's ``index:value``
entries. The batch stream is MXNet's ``round_batch`` one (the last batch wraps to the first
rows with ``pad`` set, and the next epoch continues after the wrap); MXNet's sparse batch
loader has no ``round_batch=False``, so neither has this one.

File format: one example per line, ``label index:value index:value ...`` with zero-based
indices. Differences from MXNet (where it crashes): an index outside ``data_shape`` or
repeated in one line raises MXNetError, a line's indices may come in any order (they are
sorted).
"""

from __future__ import annotations

import numpy as np

from ..base import MXNetError
from ..context import current_context
from ..ndarray import NDArray
from ._csv_iter import CSVIter, row_file_params
from ._host_csr import HostCsr
from .io import DataBatch

__all__ = ["LibSVMIter"]

_PARAMS = row_file_params("libsvm", num_parts=1, part_index=0)


def _parse_line(path, lineno, line, width):
    """``(head, sorted indices, values)`` of one LibSVM line."""
    tokens = line.split()
    try:
        head = float(tokens[0])
        pairs = [tok.split(":") for tok in tokens[1:]]
        indices = np.array([int(i) for i, _ in pairs], np.int64)
        values = np.array([float(v) for _, v in pairs], np.float64)
    except ValueError:
        raise MXNetError(
            f"{path}:{lineno}: malformed LibSVM line {line.strip()!r}; expected "
            "'label index:value index:value ...'"
        ) from None
    bad = indices[(indices < 0) | (indices >= width)]
    if bad.size:
        raise MXNetError(
            f"{path}:{lineno}: index {bad[0]} is outside [0, {width}) "
            "(indices are zero-based; widen data_shape/label_shape)"
        )
    order = np.argsort(indices, kind="stable")
    indices, values = indices[order], values[order]
    if indices.size > 1 and (np.diff(indices) == 0).any():
        raise MXNetError(f"{path}:{lineno}: an index appears twice in {line.strip()!r}")
    return head, indices, values


def _record_start(text: bytes, pos: int) -> int:
    """dmlc's line splitter: from byte ``pos`` (not 0) go past the next end of line."""
    if pos <= 0 or pos >= len(text):
        return max(0, min(pos, len(text)))
    ends = [i for i in (text.find(b"\n", pos), text.find(b"\r", pos)) if i >= 0]
    if not ends:
        return len(text)
    at = min(ends) + 1
    while at < len(text) and text[at : at + 1] in (b"\n", b"\r"):
        at += 1
    return at


def _part_lines(path, num_parts, part_index):
    """``(line number, line)`` of the lines of part ``part_index`` of ``num_parts``, split
    by bytes as dmlc's InputSplit does (a line belongs to the part where it starts)."""
    lines = list(_lines_with_offsets(path))
    if num_parts == 1:
        return [(n, line) for n, _, line in lines]
    with open(path, "rb") as f:
        text = f.read()
    step = -(-len(text) // num_parts)
    lo = _record_start(text, step * part_index)
    hi = _record_start(text, step * (part_index + 1))
    return [(n, line) for n, start, line in lines if lo <= start < hi]


def _lines_with_offsets(path):
    """``(line number, start byte, line)`` of the non-blank lines of ``path``."""
    try:
        f = open(path, "rb")
    except OSError as e:
        raise MXNetError(f"LibSVMIter: cannot open {path!r}: {e.strerror}") from None
    with f:
        start = 0
        for lineno, raw in enumerate(f, 1):
            line = raw.decode()
            if line.strip():
                yield lineno, start, line
            start += len(raw)


def _load_libsvm(path, width, dtype, num_parts=1, part_index=0):
    """``(first numbers, HostCsr rows)`` of part ``part_index`` of a LibSVM file.

    Raises:
        MXNetError: unreadable file, a malformed entry, an index outside ``[0, width)``
            or repeated in a line.
    """
    heads, indices, values, lengths = [], [], [], []
    for lineno, line in _part_lines(path, num_parts, part_index):
        head, idx, val = _parse_line(path, lineno, line, width)
        heads.append(head)
        indices.append(idx)
        values.append(val)
        lengths.append(idx.size)
    indptr = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).astype(np.int64)
    rows = HostCsr(
        np.concatenate(values or [np.zeros(0)]).astype(dtype),
        np.concatenate(indices or [np.zeros(0, np.int64)]),
        indptr,
        (len(lengths), width),
    )
    return np.asarray(heads, dtype), rows


def _one_dim(what, shape):
    if len(shape) != 1:
        raise MXNetError(
            f"LibSVMIter: dimension of {what} is expected to be 1, got {tuple(shape)} "
            f"(give the number of features, e.g. {what}=({int(np.prod(shape))},))"
        )
    return int(shape[0])


class LibSVMIter(CSVIter):
    """Iterate over a LibSVM file with csr batches, as ``mx.io.LibSVMIter`` (see the
    module docstring). Keyword arguments only; MXNet's parameter names.

    Raises:
        TypeError: positional arguments.
        MXNetError: a missing required parameter, a ``data_shape`` that is not 1-D, a
            ``label_shape`` that does not fit ``label_libsvm``, ``round_batch=False``, a
            malformed line, an index outside the shape, data/label files of different
            lengths, a bad part, or no rows.
    """

    def __init__(self, *args, **kwargs):
        dtype = self._keyword_params("LibSVMIter", args, kwargs, _PARAMS)
        p = self.p
        width = _one_dim("data_shape", p["data_shape"])
        label_size = int(np.prod(p["label_shape"]))
        if p["label_libsvm"] != "NULL" and label_size <= 1:
            raise MXNetError(
                f"LibSVMIter: label_shape is not expected to be (1,) when label_libsvm is set; "
                f"give label_shape=(number of label columns,) for {p['label_libsvm']}"
            )
        if p["label_libsvm"] == "NULL" and label_size != 1:
            raise MXNetError(
                f"LibSVMIter: label_shape is expected to be (1,) when label_libsvm is NULL "
                f"(got {tuple(p['label_shape'])}); label_shape {tuple(p['label_shape'])} needs "
                "label_libsvm (without it each line's first number is a scalar label)"
            )
        if not p["round_batch"]:
            raise MXNetError(
                "LibSVMIter: sparse batch loader doesn't support round_batch == false yet "
                "(MXNet 1.9.1); leave round_batch=True"
            )
        parts, k = p["num_parts"], p["part_index"]
        if not 0 <= k < parts:
            raise MXNetError(f"LibSVMIter: part_index {k} must be in [0, {parts})")
        heads, data = _load_libsvm(p["data_libsvm"], width, dtype, parts, k)
        if p["label_libsvm"] != "NULL":  # split by its own bytes, as MXNet
            lwidth = _one_dim("label_shape", p["label_shape"])
            _, label = _load_libsvm(p["label_libsvm"], lwidth, dtype, parts, k)
            if len(label) != len(data):
                raise MXNetError(
                    f"LibSVMIter: {p['data_libsvm']} has {len(data)} rows but "
                    f"{p['label_libsvm']} has {len(label)}"
                )
        else:
            label = heads
        if not len(data):
            raise MXNetError(f"LibSVMIter: part {k} of {p['data_libsvm']} holds no rows")
        self._data, self._label = data, label
        self._setup(dtype)

    def _batch(self, idx, pad):
        def part(rows, name):
            if isinstance(rows, HostCsr):
                return rows.to_ndarray(idx, current_context())
            return NDArray(self.placement.put(name, rows[idx]))

        return DataBatch(
            [part(self._data, self.provide_data[0].name)],
            [part(self._label, self.provide_label[0].name)],
            pad=pad,
            index=idx,
            provide_data=self.provide_data,
            provide_label=self.provide_label,
        )
