"""``mx.nd.save`` / ``mx.nd.load``: MXNet's binary NDArray-list files (``*.params``, ``*.nd``).

Byte-compatible with MXNet 1.9.1 (spec 10.1): a ``0x112`` list header, one dense record per
array and an optional list of names. Differences from MXNet, all deliberate:

* ``save`` also takes numpy and jax arrays (written with their exact dtype, so a numpy
  float64 array stays float64 even while ``jax_enable_x64`` is off).
* A file holding a 0-d array is written with V3 records, as MXNet writes under
  ``mx.util.np_shape(True)`` (MXNet 1.x can read it back only in that mode); files without
  0-d arrays use the V2 records MXNet writes by default.
* ``load`` places every array on ``cpu(0)`` whatever context the file names. With
  ``jax_enable_x64`` off, float64/int64/uint64 arrays become 32-bit inside JAX (a
  ``UserWarning`` says which); :func:`load_numpy` returns the exact stored dtypes.
* Sparse records (row_sparse/csr) raise ``NotImplementedError``; a wrong, truncated or
  corrupted file raises :class:`~mxmod.base.MXNetFileError` (an ``MXNetError``) naming the
  file, the byte offset and field, and what was expected there. Every size read from the
  file is checked against the bytes that remain before anything is allocated.
"""

from __future__ import annotations

import math
import os
import struct
import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..base import MXNetFileError
from ..context import cpu
from ..fileio import atomic_write
from .ndarray import NDArray

__all__ = ["save", "load", "load_frombuffer", "load_numpy", "to_bytes"]

LIST_MAGIC = 0x112
V1_MAGIC, V2_MAGIC, V3_MAGIC = 0xF993FAC8, 0xF993FAC9, 0xF993FACA
_FLAG_TO_DTYPE = {
    0: np.dtype("<f4"),
    1: np.dtype("<f8"),
    2: np.dtype("<f2"),
    3: np.dtype("u1"),
    4: np.dtype("<i4"),
    5: np.dtype("i1"),
    6: np.dtype("<i8"),
    7: np.dtype("bool"),
    8: np.dtype("<i2"),
    9: np.dtype("<u2"),
    10: np.dtype("<u4"),
    11: np.dtype("<u8"),
    12: np.dtype(jnp.bfloat16),
}
_DTYPE_TO_FLAG = {dt: flag for flag, dt in _FLAG_TO_DTYPE.items()}
_SPARSE = {1: ("row_sparse", 1), 2: ("csr", 2)}  # stype -> (name, number of aux arrays)
_DEV_TYPES = (1, 2, 3, 5)  # cpu, gpu, cpu_pinned, cpu_shared
_MAX_LEGACY_NDIM = 32  # pre-V1 records start with ndim; anything larger is not a record
_MAX_NDIM = 32  # numpy 1.x's limit; no MXNet array has more axes
_MAX_DIM = 2**31 - 1  # larger axes cannot be real (or even empty) arrays in XLA


class _FileMissing(MXNetFileError, FileNotFoundError):
    """Missing file: caught by ``except MXNetError`` and by ``except FileNotFoundError``."""


class _Skipped:
    """Placeholder for a record mxmod cannot represent (sparse or empty-handle)."""

    def __init__(self, what: str, fix: str):
        self.what, self.fix = what, fix


# ------------------------------------------------------------------- reader
class _Reader:
    def __init__(self, buf: bytes, source: str):
        self.buf, self.pos, self.source = memoryview(buf), 0, source
        self.field_at, self.field = 0, "start"  # the field being read, for messages

    def fail(self, what: str, expected: str = "") -> MXNetFileError:
        where = f"offset {self.field_at} ({self.field})"
        exp = f", expected {expected}" if expected else ""
        return MXNetFileError(
            f"Invalid NDArray file format: {self.source}: {what} (at {where}{exp}). The file "
            f"is truncated or corrupted, or was not written by mx.nd.save / save_checkpoint; "
            f"re-create it",
            self.source,
            where,
            expected,
        )

    def take(self, n: int, what: str) -> memoryview:
        self.field_at, self.field = self.pos, what
        left = len(self.buf) - self.pos
        if n > left:
            raise self.fail(
                f"{what} needs {n} bytes but only {left} remain",
                f"a file of at least {self.pos + n} bytes, got {len(self.buf)}",
            )
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str, what: str) -> tuple:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))

    def left(self) -> int:
        return len(self.buf) - self.pos


def _tshape(r: _Reader, what: str, v3: bool) -> tuple | None:
    """TShape (i32 ndim, ndim x i64); None for an unknown shape (V3 ndim or dim == -1)."""
    at = r.pos
    (ndim,) = r.unpack("<i", f"{what} ndim")
    if v3 and ndim == -1:
        return None
    if ndim < 0:
        raise r.fail(f"{what} has a negative ndim {ndim}", "-1 (V3 only) or 0..32")
    dims = r.unpack(f"<{ndim}q", f"{what} ({ndim} dims)")  # size checked before reading
    if ndim > _MAX_NDIM:
        r.field_at, r.field = at, f"{what} ndim"
        raise r.fail(f"{what} has {ndim} dims", f"at most {_MAX_NDIM}")
    if v3 and -1 in dims:
        return None
    if any(d < 0 for d in dims):
        raise r.fail(f"{what} has a negative dimension: {dims}", "dims >= 0")
    return tuple(dims)


def _ctx_and_dtype(r: _Reader, label: str) -> np.dtype:
    dev_type, dev_id, flag = r.unpack("<iii", f"{label} context and dtype")
    if dev_type not in _DEV_TYPES or dev_id < 0:
        raise r.fail(
            f"{label} names an invalid context (dev_type {dev_type}, dev_id {dev_id})",
            f"dev_type in {_DEV_TYPES}, dev_id >= 0",
        )
    return _dtype_of_flag(r, flag, label)


def _dtype_of_flag(r: _Reader, flag: int, label: str) -> np.dtype:
    if flag not in _FLAG_TO_DTYPE:
        raise r.fail(f"{label} has an unknown dtype flag {flag} (known: 0-12)")
    return _FLAG_TO_DTYPE[flag]


def _data(r: _Reader, dtype: np.dtype, shape: tuple, label: str) -> np.ndarray:
    count = math.prod(shape)
    raw = r.take(count * dtype.itemsize, f"{label} data ({count} x {dtype.name})")
    if any(d > _MAX_DIM for d in shape):  # only empty arrays get here with such axes
        raise r.fail(f"{label} shape {shape} has an axis over {_MAX_DIM}", "real axis sizes")
    if dtype == np.bool_:
        return (np.frombuffer(raw, np.uint8) != 0).reshape(shape)
    return np.frombuffer(raw, dtype).reshape(shape).copy()


def _skip_sparse(r: _Reader, stype: int, sshape: tuple, shape: tuple, label: str) -> _Skipped:
    name, naux = _SPARSE[stype]
    dtype = _ctx_and_dtype(r, label)
    aux = []
    for k in range(naux):
        (flag,) = r.unpack("<i", f"{label} aux {k} dtype")
        aux.append((_dtype_of_flag(r, flag, label), _tshape(r, f"{label} aux {k} shape", False)))
    r.take(math.prod(sshape) * dtype.itemsize, f"{label} {name} values")
    for k, (adt, ashape) in enumerate(aux):
        r.take(math.prod(ashape) * adt.itemsize, f"{label} {name} aux {k}")
    return _Skipped(
        f"uses {name} storage (shape {shape}), which mxmod does not support",
        "convert it in MXNet with arr.tostype('default') and save again",
    )


_NONE = (
    "is an empty-handle (none) NDArray with no shape, which mxmod cannot represent",
    "drop it from the saved list/dict in MXNet and save again",
)


def _record(r: _Reader, label: str) -> np.ndarray | _Skipped:
    (magic,) = r.unpack("<I", f"{label} header")
    if magic in (V2_MAGIC, V3_MAGIC):
        v3 = magic == V3_MAGIC
        (stype,) = r.unpack("<i", f"{label} storage type")
        if stype != 0 and (v3 or stype not in _SPARSE):
            raise r.fail(
                f"{label} has an invalid storage type {stype}",
                "0 (dense)" + ("" if v3 else ", 1 (row_sparse) or 2 (csr)"),
            )
        sshape = _tshape(r, f"{label} storage shape", False) if stype else None
        shape = _tshape(r, f"{label} shape", v3)
        if shape is None or (not v3 and not shape):
            return _Skipped(*_NONE)
        if stype:
            return _skip_sparse(r, stype, sshape, shape, label)
    elif magic == V1_MAGIC:
        shape = _tshape(r, f"{label} shape", False)
        if not shape:
            return _Skipped(*_NONE)
    elif magic <= _MAX_LEGACY_NDIM:  # pre-V1: the u32 is ndim, dims are u32
        shape = r.unpack(f"<{magic}I", f"{label} legacy shape")
        if not shape:
            return _Skipped(*_NONE)
    else:
        raise r.fail(
            f"{label} starts with 0x{magic:08x}, not an NDArray record magic "
            f"(0x{V2_MAGIC:08x} expected)"
        )
    return _data(r, _ctx_and_dtype(r, label), shape, label)


def record_from_bytes(buf: bytes) -> np.ndarray:
    """The array of one raw NDArray record (MXNet's ``NDArray.__getstate__`` bytes)."""
    arr = _record(_Reader(buf, "pickled NDArray"), "NDArray")
    if isinstance(arr, _Skipped):
        raise MXNetFileError("pickled NDArray: the record holds no dense array", "pickle", "", "")
    return arr


def _parse(buf: bytes, source: str) -> tuple[list, list | None]:
    """Decode a whole file: (numpy arrays, names or None for a list file)."""
    r = _Reader(buf, source)
    if len(buf) < 8:
        raise r.fail(f"only {len(buf)} bytes, too short for the 0x112 list header")
    (magic,) = r.unpack("<Q", "list header")
    if magic != LIST_MAGIC:
        raise r.fail(
            f"wrong magic number 0x{magic:x} at offset 0 (an NDArray list file "
            f"starts with 0x{LIST_MAGIC:x})"
        )
    r.unpack("<Q", "reserved field")
    (count,) = r.unpack("<Q", "array count")
    if count * 4 > r.left():  # a record takes 4 bytes or more
        raise r.fail(
            f"header claims {count} arrays but only {r.left()} bytes follow",
            "at least 4 bytes per array",
        )
    arrays = [_record(r, f"array {i}") for i in range(count)]
    (n_names,) = r.unpack("<Q", "name count")
    if n_names not in (0, count):
        raise r.fail(f"it holds {count} arrays but {n_names} names", f"0 or {count} names")
    names = []
    for i in range(n_names):
        (size,) = r.unpack("<Q", f"name {i} length")
        raw = bytes(r.take(size, f"name {i}"))
        try:
            names.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise r.fail(f"name {i} is not valid UTF-8 ({raw[:40]!r})", "UTF-8 text") from None
    for i, arr in enumerate(arrays):
        if isinstance(arr, _Skipped):
            label = f"array {i}" + (f" ({names[i]!r})" if names else "")
            raise NotImplementedError(f"{source}: {label} {arr.what}; {arr.fix}")
    return arrays, (names or None)


def _read_file(fname: Any) -> tuple[bytes, str]:
    if not isinstance(fname, (str, os.PathLike)):
        raise TypeError(f"fname required to be a string, got {type(fname).__name__}")
    fname = os.fspath(fname)
    source = f"file {fname!r}"
    if not os.path.exists(fname):
        raise _FileMissing(
            f"NDArray file {fname!r} does not exist; check the path (files are "
            f"written by mx.nd.save or save_checkpoint)",
            source,
            "path",
        )
    if os.path.isdir(fname):
        raise MXNetFileError(
            f"{fname!r} is a folder, not an NDArray file; pass the file path", source, "path"
        )
    try:
        with open(fname, "rb") as f:
            return f.read(), source
    except OSError as e:
        raise MXNetFileError(
            f"NDArray file {fname!r} cannot be read ({e.strerror or e})", source, "open"
        ) from None


def _as_result(arrays: list, names: list | None) -> list | dict:
    return dict(zip(names, arrays)) if names is not None else list(arrays)


def _to_ndarrays(arrays: list, names: list | None, source: str) -> list | dict:
    ctx = cpu(0)
    narrowed = []
    out = []
    for i, host in enumerate(arrays):
        want = jax.dtypes.canonicalize_dtype(host.dtype)
        if want != host.dtype:
            narrowed.append(f"{names[i] if names else i}: {host.dtype.name}->{np.dtype(want).name}")
            with np.errstate(over="ignore", invalid="ignore"):
                host = host.astype(want)
        out.append(NDArray(host, ctx))
    if narrowed:
        warnings.warn(
            f"{source}: 64-bit arrays were loaded as 32-bit because jax_enable_x64 is off "
            f"({', '.join(narrowed[:5])}{', ...' if len(narrowed) > 5 else ''}); call "
            f"jax.config.update('jax_enable_x64', True) first to keep them, or use "
            f"mxmod.ndarray.io.load_numpy for the exact values",
            stacklevel=3,
        )
    return _as_result(out, names)


def load(fname: str) -> list | dict:
    """Load an NDArray list file, as ``mx.nd.load``.

    Args:
        fname: path of a file written by ``mx.nd.save`` (MXNet's or mxmod's).

    Returns:
        A list of NDArray if the file stores no names, else a dict name -> NDArray
        (file order). Arrays are on ``cpu(0)``.

    Raises:
        TypeError: ``fname`` is not a path.
        MXNetFileError: missing file, wrong magic, truncated or corrupted content.
        NotImplementedError: the file holds sparse (row_sparse/csr) or empty-handle arrays.
    """
    buf, source = _read_file(fname)
    return _to_ndarrays(*_parse(buf, source), source)


def load_frombuffer(buf: bytes | bytearray | memoryview) -> list | dict:
    """Like :func:`load` but from the file's bytes (``mx.nd.load_frombuffer``).

    Raises:
        TypeError: ``buf`` is not bytes-like. Otherwise as :func:`load`.
    """
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise TypeError(f"buf required to be bytes, got {type(buf).__name__}")
    return _to_ndarrays(*_parse(bytes(buf), "buffer"), "buffer")


def load_numpy(fname: str) -> list | dict:
    """mxmod addition: :func:`load` returning numpy arrays with the exact stored dtypes.

    bfloat16 arrays use ``jnp.bfloat16`` (ml_dtypes). Errors as :func:`load`.
    """
    buf, source = _read_file(fname)
    return _as_result(*_parse(buf, source))


# ------------------------------------------------------------------- writer
_BAD_DATA = "save only accept dict str->NDArray or list of NDArray (numpy arrays are accepted too)"


def _host(value: Any, label: str) -> tuple[np.ndarray, int, int]:
    """(C-ordered little-endian numpy data, dev_type, dev_id) for one value to save."""
    if isinstance(value, NDArray):
        ctx = value.context
        dev = (ctx.device_typeid, ctx.device_id) if ctx.device_typeid in _DEV_TYPES else (1, 0)
        host = np.asarray(value._data)
    elif isinstance(value, (np.ndarray, np.generic, jax.Array)):
        dev, host = (1, 0), np.asarray(value)
    else:
        raise TypeError(f"{_BAD_DATA}; {label} is a {type(value).__name__}")
    dtype = host.dtype.newbyteorder("<") if host.dtype.byteorder == ">" else host.dtype
    if dtype not in _DTYPE_TO_FLAG:
        raise TypeError(
            f"{label} has dtype {host.dtype}, which MXNet files cannot store; cast "
            f"it to one of float32, float64, float16, bfloat16, uint8, int8, "
            f"int32, int64, bool"
        )
    return host.astype(dtype, order="C", copy=False), *dev


def _normalise(data: Any) -> tuple[list, list]:
    if isinstance(data, (NDArray, np.ndarray, jax.Array)):
        return [], [_host(data, "the array")]
    if isinstance(data, dict):
        bad = [k for k in data if not isinstance(k, str)]
        if bad:
            raise TypeError(f"{_BAD_DATA}; key {bad[0]!r} is not a str")
        return list(data), [_host(v, f"value {k!r}") for k, v in data.items()]
    if isinstance(data, list):
        return [], [_host(v, f"item {i}") for i, v in enumerate(data)]
    raise ValueError(
        f"data needs to either be a NDArray, dict of str, NDArray pairs or a list of "
        f"NDarrays; got {type(data).__name__}"
    )


def _encode(data: Any) -> bytes:
    names, items = _normalise(data)
    magic = V3_MAGIC if any(h.ndim == 0 for h, _, _ in items) else V2_MAGIC
    parts = [struct.pack("<QQQ", LIST_MAGIC, 0, len(items))]
    for host, dev_type, dev_id in items:
        parts.append(struct.pack(f"<Iii{host.ndim}q", magic, 0, host.ndim, *host.shape))
        parts.append(struct.pack("<iii", dev_type, dev_id, _DTYPE_TO_FLAG[host.dtype]))
        parts.append(host.tobytes())
    parts.append(struct.pack("<Q", len(names)))
    for name in names:
        raw = name.encode("utf-8")
        parts.append(struct.pack("<Q", len(raw)) + raw)
    return b"".join(parts)


def to_bytes(data: Any) -> bytes:
    """mxmod addition: the exact bytes :func:`save` writes for ``data`` (for callers that
    commit several files as one unit, e.g. ``mxmod.fileio.write_checkpoint``).

    Raises:
        TypeError, ValueError: as :func:`save`.
    """
    return _encode(data)


def save(fname: str, data: Any) -> None:
    """Save arrays in MXNet's NDArray list format, as ``mx.nd.save`` (atomic write).

    Args:
        fname: target path (``str`` or path-like).
        data: an NDArray (saved as a list of one), a list of NDArrays, or a dict
            str -> NDArray (names kept in dict order). numpy/jax arrays are accepted too.

    Raises:
        TypeError: ``fname`` is not a path, a key is not a str, a value is not an array, or a
            dtype MXNet cannot store (e.g. complex).
        ValueError: ``data`` is none of the forms above (e.g. a tuple).
    """
    if not isinstance(fname, (str, os.PathLike)):
        raise TypeError(f"fname required to be a string, got {type(fname).__name__}")
    atomic_write(os.fspath(fname), _encode(data))
