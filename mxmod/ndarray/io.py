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
* Sparse records (row_sparse/csr) load as ``CSRNDArray``/``RowSparseNDArray`` and save as
  MXNet writes them (V2 records, int64 aux arrays even while JAX keeps int32 indices inside,
  storage shape first); MXNet cannot write them beside 0-d arrays (V3). A wrong, truncated or
  corrupted file raises :class:`~mxmod.base.MXNetFileError` (an ``MXNetError``) naming the
  file, the byte offset and field, and what was expected there. Every size read from the
  file is checked against the bytes that remain before anything is allocated.
"""

from __future__ import annotations

import os
import struct
import warnings
from typing import Any

import jax
import numpy as np

from ..base import MXNetFileError
from ..context import cpu
from ..fileio import atomic_write
from .ndarray import NDArray
from .sparse import BaseSparseNDArray, CSRNDArray, RowSparseNDArray
from .records import (
    DEV_TYPES,
    DTYPE_TO_FLAG,
    LIST_MAGIC,
    V1_MAGIC,  # noqa: F401  (tests read the record magics here)
    V2_MAGIC,
    V3_MAGIC,
    FileMissing,
    SparseRecord,
    parse_list,
    record_from_bytes,
)

__all__ = [
    "save",
    "load",
    "load_frombuffer",
    "load_numpy",
    "to_bytes",
    "record_from_bytes",
]


def _read_file(fname: Any) -> tuple[bytes, str]:
    if not isinstance(fname, (str, os.PathLike)):
        raise TypeError(f"fname required to be a string, got {type(fname).__name__}")
    fname = os.fspath(fname)
    source = f"file {fname!r}"
    if not os.path.exists(fname):
        raise FileMissing(
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
        values = host.data if isinstance(host, SparseRecord) else host
        if want != host.dtype:
            narrowed.append(f"{names[i] if names else i}: {host.dtype.name}->{np.dtype(want).name}")
            with np.errstate(over="ignore", invalid="ignore"):
                values = values.astype(want)
        if isinstance(host, SparseRecord):
            cls = CSRNDArray if host.stype == "csr" else RowSparseNDArray
            out.append(cls._from_parts(host.shape, values, host.aux, ctx))
        else:
            out.append(NDArray(values, ctx))
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
        NotImplementedError: the file holds empty-handle (none) arrays.
    """
    buf, source = _read_file(fname)
    return _to_ndarrays(*parse_list(buf, source), source)


def load_frombuffer(buf: bytes | bytearray | memoryview) -> list | dict:
    """Like :func:`load` but from the file's bytes (``mx.nd.load_frombuffer``).

    Raises:
        TypeError: ``buf`` is not bytes-like. Otherwise as :func:`load`.
    """
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise TypeError(f"buf required to be bytes, got {type(buf).__name__}")
    return _to_ndarrays(*parse_list(bytes(buf), "buffer"), "buffer")


def load_numpy(fname: str) -> list | dict:
    """mxmod addition: :func:`load` returning numpy arrays with the exact stored dtypes.

    bfloat16 arrays use ``jnp.bfloat16`` (ml_dtypes). Errors as :func:`load`.
    """
    buf, source = _read_file(fname)
    return _as_result(*parse_list(buf, source))


# ------------------------------------------------------------------- writer
_BAD_DATA = "save only accept dict str->NDArray or list of NDArray (numpy arrays are accepted too)"


def _host(value: Any, label: str) -> tuple[Any, int, int]:
    """(C-ordered little-endian numpy data or a SparseRecord, dev_type, dev_id) for one value."""
    if isinstance(value, BaseSparseNDArray):
        ctx = value.context
        dev = (ctx.device_typeid, ctx.device_id) if ctx.device_typeid in DEV_TYPES else (1, 0)
        data, aux = value._host_parts()
        return SparseRecord(value.stype, value.shape, data, aux, dev), *dev
    if isinstance(value, NDArray):
        ctx = value.context
        dev = (ctx.device_typeid, ctx.device_id) if ctx.device_typeid in DEV_TYPES else (1, 0)
        host = np.asarray(value._data)
    elif isinstance(value, (np.ndarray, np.generic, jax.Array)):
        dev, host = (1, 0), np.asarray(value)
    else:
        raise TypeError(f"{_BAD_DATA}; {label} is a {type(value).__name__}")
    dtype = host.dtype.newbyteorder("<") if host.dtype.byteorder == ">" else host.dtype
    if dtype not in DTYPE_TO_FLAG:
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


_STYPE_CODES = {"row_sparse": 1, "csr": 2}


def _sparse_record(rec: SparseRecord, dev_type: int, dev_id: int) -> bytes:
    """One csr / row_sparse record as MXNet's NDArray::Save writes it (V2, int64 aux)."""

    def tshape(shape: tuple) -> bytes:
        return struct.pack(f"<i{len(shape)}q", len(shape), *shape)

    aux = [np.ascontiguousarray(a, dtype="<i8") for a in rec.aux]
    out = [struct.pack("<Ii", V2_MAGIC, _STYPE_CODES[rec.stype]), tshape(rec.data.shape)]
    out += [tshape(rec.shape), struct.pack("<iii", dev_type, dev_id, DTYPE_TO_FLAG[rec.dtype])]
    out += [struct.pack("<i", DTYPE_TO_FLAG[np.dtype("<i8")]) + tshape(a.shape) for a in aux]
    return b"".join(out + [rec.data.tobytes()] + [a.tobytes() for a in aux])


def _encode(data: Any) -> bytes:
    names, items = _normalise(data)
    sparse = [h for h, _, _ in items if isinstance(h, SparseRecord)]
    dense = [h for h, _, _ in items if not isinstance(h, SparseRecord)]
    magic = V3_MAGIC if any(h.ndim == 0 for h in dense) else V2_MAGIC
    if sparse and magic == V3_MAGIC:
        raise ValueError(
            "MXNet cannot save sparse arrays in one file with 0-d arrays (those need its "
            "np_shape records, which only allow dense storage); save them in separate files"
        )
    parts = [struct.pack("<QQQ", LIST_MAGIC, 0, len(items))]
    for host, dev_type, dev_id in items:
        if isinstance(host, SparseRecord):
            parts.append(_sparse_record(host, dev_type, dev_id))
            continue
        parts.append(struct.pack(f"<Iii{host.ndim}q", magic, 0, host.ndim, *host.shape))
        parts.append(struct.pack("<iii", dev_type, dev_id, DTYPE_TO_FLAG[host.dtype]))
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
