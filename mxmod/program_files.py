"""The files of ``program_store``: one serialized executable per program, written
atomically, read back with a restricted unpickler, pruned by size, and loaded ahead.

Loading ahead: each process records, per environment, the programs it used in the order
it first used them (``recent-<environment>``). The next process with that environment
starts deserializing those files in a background thread as soon as it makes its first
program key (a Module bind, an ``mx.nd`` operator), while its main thread goes on with
shape inference, binding and running; a program then asked for is usually ready.
Deserialization releases the GIL, so on two cores it costs the main thread nothing.
"""

from __future__ import annotations

import concurrent.futures
import io
import os
import pickle
import tempfile
import time
import threading
from typing import Optional

import jax
from jax.experimental import serialize_executable

from . import compile_cache

RECENT_MAX = 128  # programs remembered (and loaded ahead) per environment
AHEAD_MAX_BYTES = 256 << 20  # files loaded ahead, in total
STALE_TMP_S = 3600  # a temporary file this old was left by a process that ended mid-write


class _TreeUnpickler(pickle.Unpickler):
    """Reads back only what ``save`` wrote: bytes, ids and pytree structures (JAX's
    ``PyTreeDef`` over mxmod's registered node types), nothing else."""

    def find_class(self, module: str, name: str):
        allowed = (module, name) in (
            ("jaxlib._jax.pytree", "PyTreeDef"),
            ("jax._src.tree_util", "default_registry"),
            ("jax._src.tree_util", "tracing_registry"),
        ) or (module.split(".")[0] == "mxmod" and name[:1].isupper())
        if not allowed:
            raise pickle.UnpicklingError(f"{module}.{name} is not part of a stored program")
        return super().find_class(module, name)


def load(path: str):
    """The executable stored at ``path``, or None (missing, torn, foreign, other devices)."""
    try:
        with open(path, "rb") as f:
            blob = f.read()
        payload, in_tree, out_tree, device_ids = _TreeUnpickler(io.BytesIO(blob)).load()
        by_id = {d.id: d for d in jax.devices()}
        devices = [by_id[i] for i in device_ids]  # KeyError: not this machine's
        exe = serialize_executable.deserialize_and_load(
            payload, in_tree, out_tree, execution_devices=devices
        )
        os.utime(path)  # least recently used is pruned first
        return exe
    except FileNotFoundError:
        return None
    except Exception:  # a torn or foreign file: rebuild and overwrite it
        return None


def save(path: str, exe) -> bool:
    """Write ``exe`` at ``path`` atomically; False when it cannot be serialized, written
    or kept (``MXMOD_CACHE_MAX_MB``)."""
    try:
        # the devices it runs on, in order (XLA aborts the process on a wrong count)
        device_ids = [d.id for d in exe._executable._unloaded_executable.device_list]
        blob = pickle.dumps((*serialize_executable.serialize(exe), device_ids))
    except Exception:  # host callbacks, constants, another JAX: not stored, kept in memory
        return False
    if not write_atomic(path, blob):
        return False
    prune(os.path.dirname(path))
    return os.path.exists(path)  # False when the budget had no room for it


def write_atomic(path: str, blob: bytes) -> bool:
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
        os.replace(tmp, path)
        return True
    except OSError:
        return False


def prune(folder: str) -> None:
    """Delete the least recently used programs beyond ``MXMOD_CACHE_MAX_MB``."""
    limit = compile_cache.max_bytes()
    entries = []
    stale = time.time() - STALE_TMP_S
    with os.scandir(folder) as it:
        for e in it:
            if not e.is_file():
                continue
            st = e.stat()
            if not e.name.startswith(".tmp-"):
                entries.append((st.st_mtime, st.st_size, e.path))
            elif st.st_mtime < stale:  # a write its process never finished (it ended)
                _remove(e.path)
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries):
        if total <= limit:
            break
        _remove(path)
        total -= size


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


class Ahead:
    """This process's record of the programs it uses, and the loads started ahead from
    the previous process's record (one per environment and folder)."""

    def __init__(self, folder: str, environment_digest: str):
        self._folder = folder
        self._record = os.path.join(folder, f"recent-{environment_digest[:24]}")
        self._lock = threading.Lock()
        self._used: list = []  # digests this process used, first use first
        self._earlier = _read_record(self._record)
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="mxmod-load")
        self._pending: dict = {}
        budget = AHEAD_MAX_BYTES
        for digest in self._earlier:
            path = os.path.join(folder, digest)
            try:
                budget -= os.path.getsize(path)
            except OSError:
                continue
            if budget < 0:
                break
            self._pending[digest] = self._pool.submit(load, path)

    def take(self, digest: str):
        """The executable loaded ahead for ``digest``: waits when its load is under way;
        None when none was started (or it failed): the caller loads or builds it."""
        with self._lock:
            future = self._pending.pop(digest, None)
        if future is None or future.cancel():  # not started yet: the caller is quicker
            return None
        return future.result()

    def note_used(self, digest: str) -> None:
        """Record ``digest`` as used (rewrites the record: this process's programs first)."""
        with self._lock:
            if digest in self._used:
                return
            self._used.append(digest)
            seen = set(self._used)
            order = self._used + [d for d in self._earlier if d not in seen]
        write_atomic(self._record, "\n".join(order[:RECENT_MAX]).encode())


def _read_record(path: str) -> list:
    try:
        with open(path, "rb") as f:
            lines = f.read().decode("ascii", "replace").split()
    except OSError:
        return []
    hexdigits = set("0123456789abcdef")
    return [d for d in lines if len(d) == 64 and set(d) <= hexdigits][:RECENT_MAX]


_AHEAD: dict = {}


def ahead(folder: str, environment_digest: str) -> Optional[Ahead]:
    """The :class:`Ahead` of this folder and environment, started on first use."""
    key = (folder, environment_digest)
    if key not in _AHEAD:
        _AHEAD[key] = Ahead(folder, environment_digest)
    return _AHEAD[key]
