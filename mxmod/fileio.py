"""Crash-safe file writing, and size-checked reading of container formats.

Writing: nothing a user saved is lost or torn by a crash.

MXNet writes its files in place (``dmlc::Stream``), so a crash mid-write leaves a torn
file. mxmod writes every file to a temp file in the same folder, fsyncs it and renames it
over the target, and commits a checkpoint's files (symbol, params, optimizer states) as
one unit: :func:`write_checkpoint` renames the ``.params`` file last, so a crash at any
moment leaves the previous complete checkpoint and never a params file whose states are
missing or from another run.

Temp files are named ``.tmp-<pid>-<host tag>-<random>-<target name>``; every write first
removes the temp files in its folder that a crashed writer left behind (its process is
gone on this host, or the file is over a day old). Files get the permissions an ordinary
``open(fname, 'wb')`` would give: those of the file being replaced, else ``0o666`` less
the umask (``tempfile.mkstemp`` alone would give ``0o600``).

Reading: :func:`read_npz` and :func:`check_pickle_stream` check every size a container
claims against the bytes present before anything is allocated, and raise
``MXNetFileError`` naming the file and the place for any malformed input.
"""

from __future__ import annotations

import io
import math
import os
import re
import secrets
import socket
import threading
import time
import zipfile
import zlib
from struct import error as struct_error

from .base import MXNetFileError

__all__ = [
    "atomic_write",
    "write_checkpoint",
    "remove_stale_temps",
    "latest_checkpoint",
    "checkpoint_paths",
    "read_npz",
    "check_pickle_stream",
]

_HOST_TAG = "%06x" % (zlib.crc32(socket.gethostname().encode("utf-8")) & 0xFFFFFF)
_TEMP_RE = re.compile(r"^\.tmp-(\d+)-([0-9a-f]{6})-[0-9a-f]{8}-(.+)$")
# mkstemp names of older mxmod versions, limited to MXNet file kinds (never a stranger's file)
_LEGACY_TEMP_RE = re.compile(r"^\.tmp-.+\.(params|states|json|nd|buckets)-[a-z0-9_]{8}$")
_STALE_AGE_S = 24 * 3600.0
_active: set[str] = set()  # temp files this process is writing right now
_lock = threading.Lock()


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    except OSError:
        return True
    return True


def _is_stale(folder: str, name: str, now: float) -> bool:
    path = os.path.join(folder, name)
    with _lock:
        if path in _active:
            return False
    m = _TEMP_RE.match(name)
    if m is None and not _LEGACY_TEMP_RE.match(name):
        return False
    try:
        age = now - os.lstat(path).st_mtime
    except OSError:
        return False
    if age > _STALE_AGE_S:
        return True
    if m is None:
        return False
    pid, host = int(m.group(1)), m.group(2)
    return host == _HOST_TAG and pid != os.getpid() and not _pid_alive(pid)


def remove_stale_temps(folder: str) -> list[str]:
    """Delete temp files of interrupted writes in ``folder``; returns the removed paths.

    A temp file is stale when the process that made it no longer runs on this host, or
    when it is more than a day old (writers on other hosts of a shared file system).
    Called by every :func:`atomic_write`; safe to call at any time.
    """
    removed = []
    now = time.time()
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        if name.startswith(".tmp-") and _is_stale(folder, name, now):
            path = os.path.join(folder, name)
            try:
                os.unlink(path)
                removed.append(path)
            except OSError:
                continue  # another process removed it first, or it is not ours to remove
    return removed


def _mode_for(fname: str) -> int:
    """The mode an ordinary write gives: the replaced file's, else 0o666 less the umask."""
    try:
        return os.stat(fname).st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def _fsync_dir(folder: str) -> None:
    try:
        dfd = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # platforms without directory handles
    try:
        os.fsync(dfd)
    except OSError:
        return  # file systems that cannot fsync a folder
    finally:
        os.close(dfd)


def _write_temp(fname: str, data: bytes) -> str:
    """Write ``data`` to a fresh temp file beside ``fname`` (fsynced); returns its path."""
    folder = os.path.dirname(os.path.abspath(fname))
    tmp = os.path.join(
        folder, f".tmp-{os.getpid()}-{_HOST_TAG}-{secrets.token_hex(4)}-{os.path.basename(fname)}"
    )
    with _lock:
        _active.add(tmp)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            os.chmod(tmp, _mode_for(fname))
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        _discard(tmp)
        raise
    return tmp


def _discard(tmp: str) -> None:
    with _lock:
        _active.discard(tmp)
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        return


def _check_bytes(data, what: str) -> bytes:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"{what} must be bytes, got {type(data).__name__}")
    return bytes(data)


def atomic_write(fname: str, data: bytes) -> None:
    """Write ``data`` to ``fname`` via a temp file in the same folder, fsync, then rename,
    so a crash leaves either the old file or the new one, never a torn file.

    Stale temp files of crashed writes in that folder are removed first.

    Raises:
        TypeError: ``data`` is not bytes.
        OSError: the folder is missing or not writable.
    """
    data = _check_bytes(data, "atomic_write data")
    folder = os.path.dirname(os.path.abspath(fname))
    remove_stale_temps(folder)
    tmp = _write_temp(fname, data)
    try:
        os.replace(tmp, fname)
    except BaseException:
        _discard(tmp)
        raise
    with _lock:
        _active.discard(tmp)
    _fsync_dir(folder)


def checkpoint_paths(prefix: str, epoch: int) -> dict[str, str]:
    """MXNet's checkpoint file names: ``symbol``, ``params`` and ``states`` paths."""
    return {
        "symbol": "%s-symbol.json" % prefix,
        "params": "%s-%04d.params" % (prefix, epoch),
        "states": "%s-%04d.states" % (prefix, epoch),
    }


def write_checkpoint(
    prefix: str, epoch: int, symbol_json: bytes | None, params: bytes, states: bytes | None = None
) -> dict[str, str]:
    """Commit a checkpoint's files as one unit (mxmod's form of MXNet's checkpoint writes).

    Writes ``<prefix>-symbol.json`` (when ``symbol_json`` is given),
    ``<prefix>-<epoch:04d>.states`` (when ``states`` is given) and
    ``<prefix>-<epoch:04d>.params``. All temp files are written and fsynced first; an
    existing params file of this epoch is removed before anything is renamed, and the new
    params file is renamed into place last. So the presence of ``.params`` marks a
    complete checkpoint: after a crash at any moment, each epoch's params file is either
    absent or goes with the symbol and states written with it.

    Args:
        prefix: path prefix, as ``save_checkpoint``'s.
        epoch: epoch number (zero-padded to 4 digits in the names).
        symbol_json: the bytes of ``Symbol.tojson()``, or None to leave the symbol file.
        params: the bytes of the ``.params`` file (``mx.nd.save`` format).
        states: the bytes of the ``.states`` file, or None to write none.

    Returns:
        ``{'symbol': path, 'params': path, 'states': path}`` of the files written.

    Raises:
        TypeError: a payload is not bytes or ``epoch`` is not an int.
        ValueError: ``epoch`` is negative.
    """
    if isinstance(epoch, bool) or not isinstance(epoch, int):
        raise TypeError(f"checkpoint epoch must be an int, got {type(epoch).__name__}")
    if epoch < 0:
        raise ValueError(f"checkpoint epoch must be >= 0, got {epoch}")
    paths = checkpoint_paths(os.fspath(prefix), epoch)
    payloads = {"params": _check_bytes(params, "checkpoint params")}
    if symbol_json is not None:
        payloads["symbol"] = _check_bytes(symbol_json, "checkpoint symbol_json")
    if states is not None:
        payloads["states"] = _check_bytes(states, "checkpoint states")
    folder = os.path.dirname(os.path.abspath(paths["params"]))
    remove_stale_temps(folder)
    temps: dict[str, str] = {}
    try:
        for kind, data in payloads.items():
            temps[kind] = _write_temp(paths[kind], data)
        if os.path.exists(paths["params"]):  # un-commit this epoch before changing its files
            os.unlink(paths["params"])
            _fsync_dir(folder)
        for kind in ("states", "symbol", "params"):
            if kind == "params":
                _fsync_dir(folder)  # states and symbol are durable before the commit
            if kind in temps:
                os.replace(temps[kind], paths[kind])
                with _lock:
                    _active.discard(temps.pop(kind))
    finally:
        for tmp in temps.values():
            _discard(tmp)
    _fsync_dir(folder)
    return {k: paths[k] for k in payloads}


def latest_checkpoint(prefix: str) -> int | None:
    """The highest epoch with a ``<prefix>-<epoch>.params`` file, or None (mxmod addition).

    With checkpoints written by :func:`write_checkpoint` this is the latest complete one.
    """
    folder = os.path.dirname(os.path.abspath(prefix)) or "."
    pattern = re.compile(re.escape(os.path.basename(prefix)) + r"-(\d{4,})\.params$")
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    epochs = [int(m.group(1)) for n in names if (m := pattern.match(n))]
    return max(epochs) if epochs else None


# ----------------------------------------------------------------------------- reading
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
