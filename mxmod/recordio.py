"""RecordIO files, as ``mxnet.recordio`` (MXNet 1.9.1): MXRecordIO, MXIndexedRecordIO,
IRHeader, pack/unpack and pack_img/unpack_img.

The format is dmlc-core's: every record part starts with the magic ``0xced7230a`` and a
``uint32`` holding ``cflag << 29 | length``, then the bytes, zero-padded to 4. A payload
that contains the magic at a 4-byte boundary is split into parts there (cflag 1 begin,
2 middle, 3 end; 0 a whole record) and the reader puts the magic back. Files written here
are byte-identical with MXNet's, and MXNet's read back here. Pure Python file I/O: no
native library; images go through OpenCV (``cv2``) as in MXNet.
"""

from __future__ import annotations

import numbers
import os
import struct
from collections import namedtuple
from multiprocessing import current_process

import numpy as np

from .base import MXNetError, MXNetFileError, require_cv2

__all__ = [
    "MXRecordIO",
    "MXIndexedRecordIO",
    "IRHeader",
    "pack",
    "unpack",
    "pack_img",
    "unpack_img",
]

_MAGIC = 0xCED7230A
_MAGIC_BYTES = struct.pack("<I", _MAGIC)
_LEN_MASK = (1 << 29) - 1


def _pad4(n: int) -> int:
    return (n + 3) & ~3


def _bad(path: str, what: str, at: int, problem: str, expected: str) -> MXNetFileError:
    where = f"{what} at byte {at}"
    return MXNetFileError(
        f"{path}: {what} {problem} (at byte {at}; expected {expected})", path, where, expected
    )


def read_record_at(f, path: str, what: str):
    """Read one (possibly multi-part) record from file object ``f`` at its position.

    Returns the payload bytes, or None at a clean end of file. ``what`` names the record
    in error messages (``'record 3'``, ``'key 7'``). A length is checked against the bytes
    left in the file before anything is read.

    Raises:
        MXNetFileError: a bad magic number or a record cut short (truncated file), naming
            the file, the record and the byte offset.
    """
    parts = []
    size = os.fstat(f.fileno()).st_size
    while True:
        at = f.tell()
        head = f.read(8)
        if not head:
            if parts:
                raise _bad(
                    path,
                    what,
                    at,
                    "is truncated: the file ends inside a multi-part record",
                    "its end part; a .rec cut short, rewrite it",
                )
            return None
        if len(head) != 8:
            raise _bad(
                path,
                what,
                at,
                f"is truncated: {len(head)} header bytes at the end of the file",
                "an 8-byte record header; a .rec cut short, rewrite it",
            )
        magic, lrec = struct.unpack("<II", head)
        if magic != _MAGIC:
            raise _bad(
                path,
                what,
                at,
                f"does not start with the RecordIO magic number (found {magic:#010x})",
                f"{_MAGIC:#010x}; not a .rec file, or a stale .idx offset",
            )
        cflag, length = lrec >> 29, lrec & _LEN_MASK
        left = size - at - 8
        if _pad4(length) > left:
            raise _bad(
                path,
                what,
                at,
                f"is truncated: it needs {length} bytes but the file has {left} left",
                "a length within the file; a .rec cut short or corrupted, rewrite it",
            )
        body = f.read(_pad4(length))
        if len(body) != _pad4(length):  # the file shrank while being read
            raise _bad(
                path,
                what,
                at,
                f"is truncated: {len(body)} of {length} bytes read",
                "the whole record; a .rec cut short, rewrite it",
            )
        parts.append(body[:length])
        if cflag in (0, 3):
            return _MAGIC_BYTES.join(parts)


def _encode_record(buf: bytes) -> bytes:
    """The bytes dmlc's RecordIOWriter writes for one payload."""
    if len(buf) >= 1 << 29:
        raise ValueError(f"RecordIO records must be under 2**29 bytes, got {len(buf)}")
    out = []
    start = 0
    n4 = len(buf) & ~3
    pos = buf.find(_MAGIC_BYTES)
    while 0 <= pos < n4:
        if pos % 4 == 0:
            out.append(struct.pack("<II", _MAGIC, ((1 if start == 0 else 2) << 29) | (pos - start)))
            out.append(buf[start:pos])
            start = pos + 4
            pos = buf.find(_MAGIC_BYTES, start)
        else:
            pos = buf.find(_MAGIC_BYTES, pos + 1)
    tail = len(buf) - start
    out.append(struct.pack("<II", _MAGIC, ((3 if start else 0) << 29) | tail))
    out.append(buf[start:])
    out.append(b"\0" * (_pad4(len(buf)) - len(buf)))
    return b"".join(out)


class MXRecordIO:
    """Sequential RecordIO reader/writer, as ``mx.recordio.MXRecordIO``.

    Pickling closes the file and the copy reopens it (for worker processes); a handle
    inherited by a forked process raises instead of sharing the file position.

    Args:
        uri: path of the ``.rec`` file.
        flag: ``'r'`` to read, ``'w'`` to write (truncates).

    Raises:
        ValueError: a flag other than ``'r'``/``'w'``.
        MXNetError: the file cannot be opened.
    """

    def __init__(self, uri, flag):
        self.uri = os.fspath(uri)
        self.flag = flag
        self.pid = None
        self.is_open = False
        self._f = None
        self._count = 0
        self.open()

    def open(self):
        """Open the file (``reset`` and unpickling call this)."""
        if self.flag not in ("r", "w"):
            raise ValueError(f"Invalid flag {self.flag!r}: use 'r' to read or 'w' to write")
        try:
            self._f = open(self.uri, "rb" if self.flag == "r" else "wb")
        except OSError as e:
            raise MXNetError(
                f"cannot open RecordIO file {self.uri!r} for "
                f"{'reading' if self.flag == 'r' else 'writing'}: {e.strerror}"
            ) from None
        self.writable = self.flag == "w"
        self._count = 0
        self.pid = current_process().pid
        self.is_open = True

    def __del__(self):
        if getattr(self, "is_open", False):
            self.close()

    def __getstate__(self):
        is_open = self.is_open
        self.close()
        d = dict(self.__dict__)
        d["is_open"] = is_open
        d["_f"] = None
        return d

    def __setstate__(self, d):
        was_open = d["is_open"]  # read first: the next lines write into d
        self.__dict__ = d
        self.is_open = False
        if was_open:
            self.open()

    def _check_pid(self, allow_reset=False):
        if self.pid != current_process().pid:
            if allow_reset:
                self.reset()
            else:
                raise RuntimeError(
                    "Forbidden operation in multiple processes: this RecordIO "
                    "handle was opened by another process; pickle it (or reopen "
                    "the file) in the worker instead"
                )

    def _need_open(self, op):
        if not self.is_open:
            raise MXNetError(f"{op} on a closed RecordIO file {self.uri!r}: call open() first")

    def close(self):
        """Close the file."""
        if not self.is_open:
            return
        self._f.close()
        self._f = None
        self.is_open = False
        self.pid = None

    def reset(self):
        """Go back to the first record (in ``'w'`` mode: truncate the file)."""
        self.close()
        self.open()

    def write(self, buf):
        """Append one record.

        Raises:
            TypeError: ``buf`` is not bytes-like.
            MXNetError: the file was opened for reading.
        """
        self._need_open("write")
        if not self.writable:
            raise MXNetError(f"write on {self.uri!r}, which is opened with flag 'r'")
        self._check_pid(allow_reset=False)
        if not isinstance(buf, (bytes, bytearray, memoryview)):
            raise TypeError(
                f"MXRecordIO.write takes bytes, got {type(buf).__name__} "
                "(encode strings first, e.g. s.encode())"
            )
        self._f.write(_encode_record(bytes(buf)))
        self._count += 1

    def read(self):
        """The next record as bytes, or None after the last one.

        Raises:
            MXNetError: the file is truncated or not RecordIO (names file and record).
        """
        self._need_open("read")
        if self.writable:
            raise MXNetError(f"read on {self.uri!r}, which is opened with flag 'w'")
        self._check_pid(allow_reset=False)
        rec = read_record_at(self._f, self.uri, f"record {self._count}")
        if rec is not None:
            self._count += 1
        return rec


class MXIndexedRecordIO(MXRecordIO):
    """RecordIO with random access through a ``.idx`` file, as ``mx.recordio.MXIndexedRecordIO``.

    The index is text, one ``key\\tbyte_offset`` line per record.

    Args:
        idx_path: path of the ``.idx`` file.
        uri: path of the ``.rec`` file.
        flag: ``'r'`` or ``'w'``.
        key_type: type of the keys (default int).

    Raises:
        MXNetError: a missing file or a malformed ``.idx`` line (names file and line).
    """

    def __init__(self, idx_path, uri, flag, key_type=int):
        self.idx_path = os.fspath(idx_path)
        self.idx = {}
        self.keys = []
        self.key_type = key_type
        self.fidx = None
        super().__init__(uri, flag)

    def open(self):
        super().open()
        self.idx = {}
        self.keys = []
        try:
            self.fidx = open(self.idx_path, self.flag)
        except OSError as e:
            super().close()
            raise MXNetError(f"cannot open index file {self.idx_path!r}: {e.strerror}") from None
        if self.writable:
            return
        for lineno, line in enumerate(iter(self.fidx.readline, ""), 1):
            parts = line.strip().split("\t")
            if parts == [""]:
                continue
            try:
                key, pos = self.key_type(parts[0]), int(parts[1])
            except (ValueError, IndexError, TypeError):
                pos = -1
            if pos < 0:
                raise MXNetFileError(
                    f"{self.idx_path}:{lineno}: malformed index line {line!r}; "
                    "expected 'key<TAB>offset' with an offset >= 0",
                    self.idx_path,
                    f"line {lineno}",
                    "key<TAB>offset",
                )
            self.idx[key] = pos
            self.keys.append(key)

    def close(self):
        if not self.is_open:
            return
        super().close()
        self.fidx.close()

    def __getstate__(self):
        d = super().__getstate__()
        d["fidx"] = None
        return d

    def seek(self, idx):
        """Move the read position to the record of key ``idx``.

        Raises:
            KeyError: ``idx`` is not in the index.
        """
        if self.flag == "w":
            raise MXNetError(f"seek on {self.uri!r}, which is opened with flag 'w'")
        self._check_pid(allow_reset=True)  # reopens a closed or pickled-away handle (as MXNet)
        if idx not in self.idx:
            raise KeyError(
                f"key {idx!r} is not in the index {self.idx_path!r} ({len(self.keys)} keys)"
            )
        self._f.seek(self.idx[idx])

    def tell(self):
        """Byte position of the write head."""
        self._need_open("tell")
        if not self.writable:
            raise MXNetError(f"tell on {self.uri!r}, which is opened with flag 'r'")
        return self._f.tell()

    def read_idx(self, idx):
        """The record of key ``idx`` (bytes)."""
        self.seek(idx)
        rec = read_record_at(self._f, self.uri, f"key {idx!r} (from {self.idx_path})")
        if rec is None:
            raise MXNetFileError(
                f"{self.uri}: key {idx!r} of {self.idx_path} points past the "
                "end of the file: the .idx does not belong to this .rec (or "
                "it was cut)",
                self.uri,
                f"key {idx!r}",
                "an offset in the file",
            )
        return rec

    def write_idx(self, idx, buf):
        """Append ``buf`` as the record of key ``idx`` and index it."""
        key = self.key_type(idx)
        pos = self.tell()
        self.write(buf)
        self.fidx.write("%s\t%d\n" % (str(key), pos))
        self.idx[key] = pos
        self.keys.append(key)


IRHeader = namedtuple("HEADER", ["flag", "label", "id", "id2"])
IRHeader.__doc__ = """Image record header, as ``mx.recordio.IRHeader``: ``flag`` (number of
float labels stored before the payload, 0 for a scalar label), ``label`` (float or array),
``id`` and ``id2`` (64-bit ids)."""

_IR_FORMAT = "IfQQ"
_IR_SIZE = struct.calcsize(_IR_FORMAT)


def pack(header, s):
    """Prepend an image-record header (and an array label) to bytes ``s``, as
    ``mx.recordio.pack``: an array label is stored as float32 after the header and
    ``flag`` becomes its length."""
    header = IRHeader(*header)
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = np.asarray(header.label, dtype=np.float32)
        header = header._replace(flag=label.size, label=0)
        s = label.tobytes() + s
    return struct.pack(_IR_FORMAT, *header) + s


def unpack(s):
    """Split a record into ``(IRHeader, payload bytes)``, as ``mx.recordio.unpack``.

    Raises:
        MXNetFileError: the record is shorter than its header says (``source`` is
            ``'image record'``: the bytes do not know their file; callers reading a file
            name it).
    """
    if len(s) < _IR_SIZE:
        raise MXNetFileError(
            f"image record of {len(s)} bytes is shorter than the {_IR_SIZE}-byte"
            " header: not an image record (was it written with pack?)",
            "image record",
            "header",
            f"{_IR_SIZE} bytes",
        )
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        if len(s) < header.flag * 4:
            raise MXNetFileError(
                f"image record declares {header.flag} labels but holds only "
                f"{len(s)} bytes after the header (expected {header.flag * 4}"
                " bytes of float32 labels)",
                "image record",
                "flag",
                "labels within the record",
            )
        header = header._replace(label=np.frombuffer(s, np.float32, header.flag))
        s = s[header.flag * 4 :]
    return header, s


def _cv2():
    return require_cv2("mx.recordio.pack_img/unpack_img")


def unpack_img(s, iscolor=-1):
    """Unpack a record and decode its image with ``cv2.imdecode(.., iscolor)`` (BGR, HWC
    uint8), as ``mx.recordio.unpack_img``.

    Raises:
        MXNetError: the payload is not a decodable image.
    """
    header, s = unpack(s)
    img = _cv2().imdecode(np.frombuffer(s, dtype=np.uint8), iscolor)
    if img is None:
        raise MXNetError(
            f"record id {header.id}: its {len(s)}-byte payload is not a decodable image"
        )
    return header, img


def pack_img(header, img, quality=95, img_fmt=".jpg"):
    """Encode ``img`` (BGR, HWC uint8) with OpenCV and pack it, as ``mx.recordio.pack_img``.

    Args:
        header: an IRHeader (or 4-tuple).
        img: the image.
        quality: JPEG quality 1-100, or PNG compression 0-9.
        img_fmt: ``'.jpg'`` or ``'.png'``.

    Raises:
        ValueError: another format, or OpenCV could not encode the image.
    """
    cv2 = _cv2()
    fmt = img_fmt.upper()
    if fmt in (".JPG", ".JPEG"):
        params = [cv2.IMWRITE_JPEG_QUALITY, quality]
    elif fmt == ".PNG":
        params = [cv2.IMWRITE_PNG_COMPRESSION, quality]
    else:
        raise ValueError(f"pack_img img_fmt {img_fmt!r}: use '.jpg' or '.png'")
    ok, buf = cv2.imencode(img_fmt, np.asarray(img), params)
    if not ok:
        raise ValueError(f"OpenCV failed to encode an image of shape {np.shape(img)} as {img_fmt}")
    return pack(header, buf.tobytes())
