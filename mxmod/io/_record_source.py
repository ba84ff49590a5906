"""Record sources for the native-style iterators: where each image record of a ``.rec``
lies, which ones belong to a part, and the labels of an image list.

Partitioning follows dmlc-core's input splits, as MXNet's ``ImageRecordIter`` does:
without an index the file is cut into ``num_parts`` equal byte ranges (4-byte aligned)
and a record belongs to the range holding its first byte; with an index the records,
in file order, are cut into ``ceil(n / num_parts)``-sized runs. Records are read through
a read-only ``mmap`` (thread safe, no seek state), so several decoder threads share one
file.
"""

from __future__ import annotations

import mmap
import os
import struct

import numpy as np

from ..base import MXNetError
from ._text_files import numbered_lines

_MAGIC = 0xCED7230A
_HDR = struct.Struct("<II")
_LEN_MASK = (1 << 29) - 1
_IR = struct.Struct("<IfQQ")


def _open_map(path: str):
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            return (mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""), size
    except OSError as e:
        raise MXNetError(f"cannot open RecordIO file {path!r}: {e.strerror}") from None


class RecordFile:
    """A ``.rec`` opened for random access: record start offsets (scanned, or from an
    ``.idx``) and payload reads by record number."""

    def __init__(self, path_imgrec: str, path_imgidx: str = ""):
        self.path = path_imgrec
        self.map, self.size = _open_map(path_imgrec)
        if path_imgidx:
            self.offsets = self._read_index(path_imgidx)
        else:
            self.offsets = self._scan()

    def _read_index(self, path: str) -> np.ndarray:
        offs = []
        for lineno, line in numbered_lines(path, "cannot open index file"):
            try:
                offs.append(int(line.split()[1]))
            except (ValueError, IndexError):
                raise MXNetError(
                    f"{path}:{lineno}: malformed index line {line!r}; expected 'key<TAB>offset'"
                ) from None
        offs = np.unique(np.asarray(offs, dtype=np.int64))  # file order, as dmlc sorts them
        if offs.size and offs[-1] >= self.size:
            raise MXNetError(
                f"{path}: offset {int(offs[-1])} is past the end of {self.path} "
                f"({self.size} bytes): the .idx does not belong to this .rec"
            )
        return offs

    def _header(self, pos: int, rec: int, cause: str) -> tuple[int, int]:
        """``(cflag, length)`` of the record header at byte ``pos`` (record number ``rec``);
        ``cause`` ends the error raised when the RecordIO magic number is missing."""
        magic, lrec = _HDR.unpack_from(self.map, pos)
        if magic != _MAGIC:
            raise MXNetError(
                f"{self.path}: record {rec} does not start with the RecordIO magic number "
                f"at byte {pos}: {cause}"
            )
        return lrec >> 29, lrec & _LEN_MASK

    def _scan(self) -> np.ndarray:
        """Start offsets of every record, walking the headers (checks the whole file)."""
        size, pos, starts, inside = self.size, 0, [], False
        while pos < size:
            if pos + 8 > size:
                raise MXNetError(
                    f"{self.path}: record {len(starts)} is truncated: "
                    f"{size - pos} header bytes at the end of the file"
                )
            cflag, length = self._header(pos, len(starts), "not a .rec file")
            if cflag in (0, 1):
                starts.append(pos)
            inside = cflag in (1, 2)
            pos += 8 + ((length + 3) & ~3)
            if pos > size:
                raise MXNetError(
                    f"{self.path}: record {len(starts) - 1} is truncated: it needs "
                    f"{length} bytes past byte {pos - length} but the file ends at "
                    f"{size} (a .rec cut short; rewrite it)"
                )
        if inside:
            raise MXNetError(
                f"{self.path}: the last record is truncated (multi-part record without its end)"
            )
        return np.asarray(starts, dtype=np.int64)

    def part(self, num_parts: int, part_index: int, indexed: bool) -> np.ndarray:
        """Record numbers (into ``offsets``) of one part, in file order."""
        n = len(self.offsets)
        if num_parts == 1:
            return np.arange(n)
        if indexed:
            step = (n + num_parts - 1) // num_parts
            return np.arange(min(part_index * step, n), min((part_index + 1) * step, n))
        step = (self.size + num_parts - 1) // num_parts
        step = (step + 3) // 4 * 4
        lo, hi = min(step * part_index, self.size), min(step * (part_index + 1), self.size)
        return np.nonzero((self.offsets >= lo) & (self.offsets < hi))[0]

    def payload(self, i: int) -> bytes | memoryview:
        """Payload of record number ``i`` (multi-part records joined with the magic)."""
        mm, pos = self.map, int(self.offsets[i])
        parts = []
        while True:
            if pos + 8 > self.size:
                raise MXNetError(f"{self.path}: record {i} (byte {self.offsets[i]}) is truncated")
            cflag, length = self._header(pos, i, "a stale .idx offset or a corrupt file")
            if pos + 8 + length > self.size:
                raise MXNetError(
                    f"{self.path}: record {i} (byte {self.offsets[i]}) is truncated: "
                    "the file ends inside it (a .rec cut short; rewrite it)"
                )
            if cflag == 0 and not parts:
                return memoryview(mm)[pos + 8 : pos + 8 + length]
            parts.append(bytes(mm[pos + 8 : pos + 8 + length]))
            pos += 8 + ((length + 3) & ~3)
            if cflag == 3:
                return struct.pack("<I", _MAGIC).join(parts)

    def close(self):
        if isinstance(self.map, mmap.mmap):
            self.map.close()


def split_image_record(buf, path: str, i: int):
    """``(id, label array or None, scalar label, image bytes)`` of an image record."""
    if len(buf) < _IR.size:
        raise MXNetError(
            f"{path}: record {i} holds {len(buf)} bytes, less than an image-record "
            "header: was the .rec written with mx.recordio.pack/im2rec?"
        )
    flag, label, rid, _ = _IR.unpack_from(buf, 0)
    if flag > 0:
        end = _IR.size + 4 * flag
        if len(buf) < end:
            raise MXNetError(f"{path}: record {i} declares {flag} labels but is too short")
        return rid, np.frombuffer(buf[_IR.size : end], np.float32), label, buf[end:]
    return rid, None, label, buf[_IR.size :]


def read_label_list(path: str, label_width: int) -> dict:
    """``{image index: float32 labels}`` from an image list (``.lst``): index, then
    ``label_width`` labels, then the path, tab separated.

    Raises:
        MXNetError: a missing file or a line with too few labels.
    """
    out = {}
    for lineno, line in numbered_lines(path, "cannot open image list"):
        parts = line.strip().split("\t")
        if len(parts) < label_width + 2:
            raise MXNetError(
                f"{path}:{lineno}: {len(parts) - 2} label(s) but label_width is {label_width}; "
                "set label_width to the number of labels in the list"
            )
        try:
            key = int(float(parts[0]))
            labels = [float(x) for x in parts[1 : 1 + label_width]]
        except ValueError:
            raise MXNetError(f"{path}:{lineno}: malformed line {line!r}") from None
        out[key] = np.asarray(labels, np.float32)
    return out
