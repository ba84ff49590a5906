"""Line-by-line reading of the text inputs of the native iterators (CSV, LibSVM, .idx, .lst)."""

from __future__ import annotations

from ..base import MXNetError


def numbered_lines(path: str, cannot_open: str):
    """Yield ``(line number, line)`` for each non-blank line of the text file ``path``.

    Raises:
        MXNetError: ``f"{cannot_open} {path!r}: <reason>"`` when the file cannot be opened.
    """
    try:
        f = open(path)
    except OSError as e:
        raise MXNetError(f"{cannot_open} {path!r}: {e.strerror}") from None
    with f:
        for lineno, line in enumerate(f, 1):
            if line.strip():
                yield lineno, line
