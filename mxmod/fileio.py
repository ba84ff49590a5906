"""Crash-safe file writing, and size-checked reading of container formats.

Writing: nothing a user saved is lost or torn by a crash.

MXNet writes its files in place (``dmlc::Stream``), so a crash mid-write leaves a torn
file. mxmod writes every file to a temp file in the same folder, fsyncs it and renames it
over the target, and commits a checkpoint's files (symbol, params, optimizer states) as
one unit: :func:`write_checkpoint` renames the ``.params`` file last, so a crash at any
moment leaves the previous complete checkpoint and never a params file whose states are
missing or from another run.

On Linux the data is written to an unnamed file (``O_TMPFILE``) that gets a name only for
the instant of its rename, so a killed writer leaves nothing. Elsewhere, and in that instant,
temp files are named ``.tmp-<pid>-<host tag>-<random>-<target name>``; every write, and
every checkpoint load, first removes the temp files in its folder that a crashed writer
left behind (its process is gone on this host, or the file is over a day old). Files get
the permissions an ordinary ``open(fname, 'wb')`` would give: those of the file being
replaced, else ``0o666`` less the umask (``tempfile.mkstemp`` alone would give ``0o600``).

Reading: :func:`read_npz` and :func:`check_pickle_stream` (defined in ``fileread``) check
every size a container claims against the bytes present before anything is allocated.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import socket
import threading
import time
import zlib

from .fileread import check_pickle_stream, read_npz

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


def _temp_name(fname: str) -> str:
    folder = os.path.dirname(os.path.abspath(fname))
    return os.path.join(
        folder, f".tmp-{os.getpid()}-{_HOST_TAG}-{secrets.token_hex(4)}-{os.path.basename(fname)}"
    )


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)


_unnamed_ok = [True]  # False once naming an O_TMPFILE failed in this process


class _Pending:
    """A written, fsynced file awaiting its rename onto ``fname``.

    Where the OS allows (Linux ``O_TMPFILE``), the data sits in an unnamed file until
    :meth:`commit`, which names it and renames it at once: a process killed while writing
    leaves nothing behind. Elsewhere it is a named temp file from the start (removed by the
    next write or load in the folder if the writer is killed).
    """

    def __init__(self, fname: str, data: bytes) -> None:
        self.fname, self.fd, self.tmp, self.data = fname, None, None, None
        folder = os.path.dirname(os.path.abspath(fname))
        mode = _mode_for(fname)
        flag = getattr(os, "O_TMPFILE", 0)
        if flag and _unnamed_ok[0] and os.path.isdir("/proc/self/fd"):
            try:
                self.fd = os.open(folder, flag | os.O_WRONLY, 0o600)
            except OSError:  # a file system without unnamed files: a named temp file
                self.fd = None
        try:
            if self.fd is not None:
                os.fchmod(self.fd, mode)
                _write_all(self.fd, data)
                self.data = data  # to write a named file if naming this one fails
            else:
                self._write_named(data, mode)
        except BaseException:
            self.discard()
            raise

    def _write_named(self, data: bytes, mode: int) -> None:
        self._name()
        fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.fchmod(fd, mode)
            _write_all(fd, data)
        finally:
            os.close(fd)

    def _name(self) -> None:
        self.tmp = _temp_name(self.fname)
        with _lock:
            _active.add(self.tmp)

    def commit(self) -> None:
        """Put the data at ``fname`` atomically (readers see the old file or the new). An
        unnamed file is linked to a temp name renamed over ``fname`` at once (the only
        moment a kill can leave a temp file; the next write or load removes it)."""
        if self.fd is not None and not self._link_unnamed():
            mode = os.fstat(self.fd).st_mode & 0o7777
            self.discard()
            self._write_named(self.data, mode)
        self.data = None
        if self.tmp is not None:
            os.replace(self.tmp, self.fname)
            with _lock:
                _active.discard(self.tmp)
            self.tmp = None
        self.discard()

    def _link_unnamed(self) -> bool:
        """Link the unnamed file to a temp name; False when this system cannot link
        ``/proc`` fds (named temp files from then on)."""
        folder_fd = os.open(os.path.dirname(os.path.abspath(self.fname)), os.O_RDONLY)
        src = f"/proc/self/fd/{self.fd}"
        self._name()
        try:  # a dir fd makes CPython call linkat, which follows the /proc link
            os.link(src, os.path.basename(self.tmp), dst_dir_fd=folder_fd)
            return True
        except OSError:
            _unnamed_ok[0] = False
            if self.tmp is not None:
                _discard(self.tmp)
                self.tmp = None
            return False
        finally:
            os.close(folder_fd)

    def discard(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        if self.tmp is not None:
            _discard(self.tmp)
            self.tmp = None


def _check_folder(fname: str, what: str) -> str:
    """The folder of ``fname``; FileNotFoundError naming it when it does not exist (the
    temp file's name in ``open``'s own error would hide what is missing)."""
    folder = os.path.dirname(os.path.abspath(fname))
    if not os.path.isdir(folder):
        missing = folder
        while not os.path.isdir(os.path.dirname(missing)) and os.path.dirname(missing) != missing:
            missing = os.path.dirname(missing)
        raise FileNotFoundError(
            errno.ENOENT,
            f"cannot write {what} {fname!r}: the folder {missing!r} does not exist; create "
            f"it first (os.makedirs({folder!r}, exist_ok=True))",
        )
    return folder


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
    folder = _check_folder(fname, "file")
    remove_stale_temps(folder)
    pending = _Pending(fname, data)
    try:
        pending.commit()
    finally:
        pending.discard()
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
    folder = _check_folder(paths["params"], "checkpoint")
    remove_stale_temps(folder)
    pending: dict[str, _Pending] = {}
    try:
        for kind, data in payloads.items():
            pending[kind] = _Pending(paths[kind], data)
        if os.path.exists(paths["params"]):  # un-commit this epoch before changing its files
            os.unlink(paths["params"])
            _fsync_dir(folder)
        for kind in ("states", "symbol", "params"):
            if kind == "params":
                _fsync_dir(folder)  # states and symbol are durable before the commit
            if kind in pending:
                pending[kind].commit()
    finally:
        for p in pending.values():
            p.discard()
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
