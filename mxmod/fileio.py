"""Crash-safe file writing: nothing a user saved is lost or torn by a crash."""
from __future__ import annotations

import os
import tempfile


def atomic_write(fname: str, data: bytes) -> None:
    """Write ``data`` to ``fname`` via a temp file in the same folder, fsync, then rename,
    so a crash leaves either the old file or the new one, never a torn file."""
    folder = os.path.dirname(os.path.abspath(fname))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-" + os.path.basename(fname) + "-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, fname)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    try:
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass
