"""Size-checked reading of container formats (split from ``fileio``, which re-exports it).

:func:`read_npz` and :func:`check_pickle_stream` check every size a container claims
against the bytes present before anything is allocated, and raise ``MXNetFileError``
naming the file and the place for any malformed input.
"""

from __future__ import annotations

import io
import math
import zipfile
import zlib
from struct import error as struct_error

from .base import MXNetFileError

__all__ = ["read_npz", "check_pickle_stream"]

_NPZ_MAX_MEMBERS = 100_000
_NPZ_MAX_RATIO = 1024  # a deflated member may expand this much (zip bombs beyond)


def _npz_fail(source: str, where: str, problem: str, expected: str) -> Exception:
    return MXNetFileError(
        f"{source}: {where}: {problem} (expected {expected}); the file is truncated or corrupted",
        source,
        where,
        expected,
    )


def read_npz(data: bytes, source: str) -> dict:
    """Members of an ``.npz`` blob as numpy arrays, every size checked before allocating.

    mxmod addition for readers of NPZ-based files (optimizer states). Unlike ``np.load``
    it never allocates what a header merely claims: each member's ``.npy`` header must
    describe exactly the bytes the member holds, which the zip directory bounds by the
    blob's size. Object dtypes (pickles) are refused.

    Args:
        data: the blob.
        source: how messages name it (e.g. ``"optimizer states 'm.states'"``).

    Returns:
        ``{member name without '.npy': array}``.

    Raises:
        MXNetFileError: for any malformed blob, naming ``source``, the member and field.
    """
    import numpy as np
    from numpy.lib import format as npy

    try:
        archive = zipfile.ZipFile(io.BytesIO(bytes(data)))
        infos = archive.infolist()
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        ValueError,
        OSError,
        EOFError,
        NotImplementedError,
        RuntimeError,
    ) as e:
        raise _npz_fail(
            source,
            "zip directory",
            f"not a readable zip archive ({e})",
            "an NPZ archive (numpy.savez)",
        ) from None
    if len(infos) > _NPZ_MAX_MEMBERS:
        raise _npz_fail(
            source, "zip directory", f"{len(infos)} members", f"at most {_NPZ_MAX_MEMBERS}"
        )
    out = {}
    for info in infos:
        where = f"member {info.filename!r}"
        if not info.filename.endswith(".npy"):
            raise _npz_fail(source, where, "not an .npy member", "only '<name>.npy' members")
        limit = len(data) * (1 if info.compress_type == zipfile.ZIP_STORED else _NPZ_MAX_RATIO)
        if info.file_size > limit:
            raise _npz_fail(
                source,
                where,
                f"claims {info.file_size} bytes",
                f"at most {limit} for a {len(data)}-byte file",
            )
        try:
            raw = archive.read(info)
            member = io.BytesIO(raw)
            version = npy.read_magic(member)
            reader = {(1, 0): npy.read_array_header_1_0, (2, 0): npy.read_array_header_2_0}.get(
                version
            )
            if reader is None:
                raise ValueError(f"npy format version {version}")
            shape, fortran, dtype = reader(member)
        except (
            zipfile.BadZipFile,
            ValueError,
            OSError,
            EOFError,
            NotImplementedError,
            RuntimeError,
            zlib.error,
            TypeError,
            SyntaxError,
        ) as e:
            raise _npz_fail(
                source,
                where,
                f"unreadable ({type(e).__name__}: {e})",
                "an .npy array (format 1.0 or 2.0)",
            ) from None
        if dtype.hasobject or dtype.itemsize == 0:
            raise _npz_fail(source, where, f"dtype {dtype}", "a numeric dtype (no pickles)")
        if len(shape) > 32 or any(not isinstance(d, int) or d < 0 for d in shape):
            raise _npz_fail(source, f"{where} header", f"shape {shape}", "up to 32 sizes >= 0")
        body = len(raw) - member.tell()
        need = math.prod(shape) * dtype.itemsize
        if need != body:
            raise _npz_fail(
                source,
                f"{where} header",
                f"shape {shape} of {dtype} needs {need} bytes but the member holds {body}",
                "matching sizes",
            )
        flat = np.frombuffer(raw, dtype, count=math.prod(shape), offset=member.tell())
        arr = flat.reshape(shape[::-1]).T if fortran else flat.reshape(shape)
        out[info.filename[:-4]] = arr.copy()
    return out


_MEMO_OPS = {"PUT", "BINPUT", "LONG_BINPUT"}


def check_pickle_stream(data: bytes, source: str) -> int:
    """Walk a pickle's opcodes without running them; returns the number of opcodes.

    mxmod addition, run before a (restricted) unpickler sees untrusted bytes. Refuses
    truncated or garbled streams, ``FRAME`` lengths beyond the data, and memo indices
    beyond the number of opcodes (the C unpickler sizes its memo by the largest index, so
    ``LONG_BINPUT 0xffffffff`` alone would allocate 32 GiB). It does not judge what the
    opcodes build: the unpickler's allowed globals do that.

    Raises:
        MXNetFileError: naming ``source``, the byte offset and opcode.
    """
    import pickletools

    n_ops = 0
    pos, name = 0, "start"
    try:
        for op, arg, pos in pickletools.genops(io.BytesIO(bytes(data))):
            name = op.name
            n_ops += 1
            if name == "FRAME" and arg > len(data) - pos:
                raise _npz_fail(
                    source,
                    f"offset {pos} (FRAME)",
                    f"frame of {arg} bytes",
                    f"at most the {len(data) - pos} bytes left",
                )
            if name in _MEMO_OPS and (not isinstance(arg, int) or not 0 <= arg <= n_ops):
                raise _npz_fail(
                    source,
                    f"offset {pos} ({name})",
                    f"memo index {arg}",
                    f"an index up to the opcode count {n_ops}",
                )
            if name == "STOP":
                break
        else:
            raise _npz_fail(source, f"offset {pos} ({name})", "no STOP opcode", "a complete pickle")
    except (ValueError, struct_error, EOFError, OverflowError, UnicodeDecodeError) as e:
        raise _npz_fail(
            source,
            f"offset {pos} (after {name})",
            f"unreadable ({type(e).__name__}: {e})",
            "a complete pickle",
        ) from None
    return n_ops
