"""MXNet's binary NDArray record and list format (spec 10.1), read into numpy arrays
(csr / row_sparse records into :class:`SparseRecord`, their parts as stored).

The reader checks every size against the bytes that remain before allocating, and names
the source, byte offset and field of any problem. ``mxmod.ndarray.io`` builds ``mx.nd.save``
/ ``mx.nd.load`` on it; ``NDArray.__setstate__`` reads MXNet's pickled records with it.
"""

from __future__ import annotations

import math
import struct

import jax.numpy as jnp
import numpy as np

from ..base import MXNetFileError

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
DTYPE_TO_FLAG = {dt: flag for flag, dt in _FLAG_TO_DTYPE.items()}
_SPARSE = {1: ("row_sparse", 1), 2: ("csr", 2)}  # stype -> (name, number of aux arrays)
DEV_TYPES = (1, 2, 3, 5)  # cpu, gpu, cpu_pinned, cpu_shared
_MAX_LEGACY_NDIM = 32  # pre-V1 records start with ndim; anything larger is not a record
_MAX_NDIM = 32  # numpy 1.x's limit; no MXNet array has more axes
_MAX_DIM = 2**31 - 1  # larger axes cannot be real (or even empty) arrays in XLA


class FileMissing(MXNetFileError, FileNotFoundError):
    """Missing file: caught by ``except MXNetError`` and by ``except FileNotFoundError``."""


class Skipped:
    """Placeholder for a record mxmod cannot represent (an empty-handle array)."""

    def __init__(self, what: str, fix: str):
        self.what, self.fix = what, fix


# ------------------------------------------------------------------- reader
class Reader:
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


def _tshape(r: Reader, what: str, v3: bool) -> tuple | None:
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


def _ctx_and_dtype(r: Reader, label: str) -> np.dtype:
    dev_type, dev_id, flag = r.unpack("<iii", f"{label} context and dtype")
    if dev_type not in DEV_TYPES or dev_id < 0:
        raise r.fail(
            f"{label} names an invalid context (dev_type {dev_type}, dev_id {dev_id})",
            f"dev_type in {DEV_TYPES}, dev_id >= 0",
        )
    return _dtype_of_flag(r, flag, label)


def _dtype_of_flag(r: Reader, flag: int, label: str) -> np.dtype:
    if flag not in _FLAG_TO_DTYPE:
        raise r.fail(f"{label} has an unknown dtype flag {flag} (known: 0-12)")
    return _FLAG_TO_DTYPE[flag]


def _data(r: Reader, dtype: np.dtype, shape: tuple, label: str) -> np.ndarray:
    count = math.prod(shape)
    raw = r.take(count * dtype.itemsize, f"{label} data ({count} x {dtype.name})")
    if any(d > _MAX_DIM for d in shape):  # only empty arrays get here with such axes
        raise r.fail(f"{label} shape {shape} has an axis over {_MAX_DIM}", "real axis sizes")
    if dtype == np.bool_:
        return (np.frombuffer(raw, np.uint8) != 0).reshape(shape)
    return np.frombuffer(raw, dtype).reshape(shape).copy()


class SparseRecord:
    """A csr / row_sparse record: the stored values, aux arrays (MXNet's order) and shapes."""

    def __init__(self, stype: str, shape: tuple, data: np.ndarray, aux: list, dev: tuple):
        self.stype, self.shape, self.data, self.aux, self.dev = stype, shape, data, aux, dev

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype


def _read_sparse(r: Reader, stype: int, sshape: tuple, shape: tuple, label: str) -> SparseRecord:
    name, naux = _SPARSE[stype]
    dev_type, dev_id, flag = r.unpack("<iii", f"{label} context and dtype")
    if dev_type not in DEV_TYPES or dev_id < 0:
        raise r.fail(f"{label} names an invalid context (dev_type {dev_type}, dev_id {dev_id})")
    dtype = _dtype_of_flag(r, flag, label)
    aux = []
    for k in range(naux):
        (aflag,) = r.unpack("<i", f"{label} aux {k} dtype")
        adt = _dtype_of_flag(r, aflag, label)
        aux.append((adt, _tshape(r, f"{label} aux {k} shape", False)))
    _check_sparse_shapes(r, name, shape, sshape, [a for _, a in aux], label)
    data = _data(r, dtype, sshape, f"{label} {name} values")
    aux_data = [
        _data(r, adt, ashape, f"{label} {name} aux {k}") for k, (adt, ashape) in enumerate(aux)
    ]
    return SparseRecord(name, shape, data, aux_data, (dev_type, dev_id))


def _check_sparse_shapes(r: Reader, name: str, shape, sshape, aux_shapes, label: str) -> None:
    """The parts must fit the logical shape, as MXNet's own arrays always do."""
    if any(d > _MAX_DIM for d in shape):
        raise r.fail(f"{label} shape {shape} has an axis over {_MAX_DIM}", "real axis sizes")
    if name == "row_sparse":  # values (rows, *shape[1:]); indices (rows,)
        ok = (
            len(shape) >= 1
            and tuple(sshape[1:]) == tuple(shape[1:])
            and len(aux_shapes[0]) == 1
            and aux_shapes[0][0] == sshape[0] <= shape[0]
        )
        want = "values (rows, *shape[1:]) and one index per stored row"
    else:  # csr: values (nnz,); indptr (rows + 1,); indices (nnz,)
        ok = (
            len(shape) == 2
            and len(sshape) == 1
            and tuple(aux_shapes[0]) == (shape[0] + 1,)
            and tuple(aux_shapes[1]) == (sshape[0],)
        )
        want = "a 2-D shape, values (nnz,), indptr (rows + 1,) and indices (nnz,)"
    if not ok:
        parts = ", ".join(str(tuple(a)) for a in aux_shapes)
        raise r.fail(
            f"{label} {name} parts (values {tuple(sshape)}, aux {parts}) do not fit its "
            f"shape {tuple(shape)}",
            want,
        )


_NONE = (
    "is an empty-handle (none) NDArray with no shape, which mxmod cannot represent",
    "drop it from the saved list/dict in MXNet and save again",
)


def read_record(r: Reader, label: str) -> np.ndarray | SparseRecord | Skipped:
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
            return Skipped(*_NONE)
        if stype:
            return _read_sparse(r, stype, sshape, shape, label)
    elif magic == V1_MAGIC:
        shape = _tshape(r, f"{label} shape", False)
        if not shape:
            return Skipped(*_NONE)
    elif magic <= _MAX_LEGACY_NDIM:  # pre-V1: the u32 is ndim, dims are u32
        shape = r.unpack(f"<{magic}I", f"{label} legacy shape")
        if not shape:
            return Skipped(*_NONE)
    else:
        raise r.fail(
            f"{label} starts with 0x{magic:08x}, not an NDArray record magic "
            f"(0x{V2_MAGIC:08x} expected)"
        )
    return _data(r, _ctx_and_dtype(r, label), shape, label)


def record_from_bytes(buf: bytes) -> np.ndarray:
    """The array of one raw NDArray record (MXNet's ``NDArray.__getstate__`` bytes)."""
    arr = read_record(Reader(buf, "pickled NDArray"), "NDArray")
    if isinstance(arr, (Skipped, SparseRecord)):
        raise MXNetFileError("pickled NDArray: the record holds no dense array", "pickle", "", "")
    return arr


def parse_list(buf: bytes, source: str) -> tuple[list, list | None]:
    """Decode a whole file: (numpy arrays, names or None for a list file)."""
    r = Reader(buf, source)
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
    arrays = [read_record(r, f"array {i}") for i in range(count)]
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
        if isinstance(arr, Skipped):
            label = f"array {i}" + (f" ({names[i]!r})" if names else "")
            raise NotImplementedError(f"{source}: {label} {arr.what}; {arr.fix}")
    return arrays, (names or None)
