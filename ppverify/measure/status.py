"""Status files: each worker publishes what it is doing in a small memory-mapped file (one per
rank), which the parent reads when the workers do not finish in time (:mod:`.workers`).

A write is about a microsecond, so a worker can call :func:`set_status` before every action of
a schedule. The file holds the phase the worker last entered (8 bytes), the text's length (2
bytes) and the text.
"""

from __future__ import annotations

import mmap
from pathlib import Path

#: size of one status file
STATUS_BYTES = 256

_status_map: mmap.mmap | None = None  # this worker's own status file (one per process)


def set_status(text: str, phase: int | None = None) -> None:
    """Publish what this worker does now (shown if it hangs); cheap enough to call per action.

    ``phase`` (when given) also marks entry into phase ``phase`` (see :mod:`.workers`). A no-op
    outside a worker started by :func:`~ppverify.measure.workers.run_workers`.

    Example:
        >>> set_status("0F1")
    """
    m = _status_map
    if m is None:
        return
    if phase is not None:
        m[0:8] = int(phase).to_bytes(8, "little", signed=True)
    data = text.encode("utf-8", "replace")[: STATUS_BYTES - 10]
    m[8:10] = len(data).to_bytes(2, "little")
    m[10 : 10 + len(data)] = data


def blank_status() -> bytes:
    """The contents of a status file before its worker writes: phase -1, no text.

    Example:
        >>> read_status_bytes(blank_status())
        (-1, 'starting')
    """
    return b"\xff" * 8 + b"\0" * (STATUS_BYTES - 8)


def read_status_bytes(raw: bytes) -> tuple[int, str]:
    """``(phase, text)`` of a status file's contents (``(-1, "not started")`` when too short).

    Example:
        >>> read_status_bytes(b"")
        (-1, 'not started')
    """
    if len(raw) < 10:
        return -1, "not started"
    phase = int.from_bytes(raw[0:8], "little", signed=True)
    n = min(int.from_bytes(raw[8:10], "little"), len(raw) - 10)
    return phase, raw[10 : 10 + n].decode("utf-8", "replace") or "starting"


def read_status(path: Path) -> tuple[int, str]:
    """``(phase, text)`` of the status file at ``path`` (the parent's side).

    Example:
        >>> read_status(Path("/nonexistent/status"))
        (-1, 'not started')
    """
    try:
        raw = path.read_bytes()
    except OSError:
        return -1, "not started"
    return read_status_bytes(raw)


def open_status(path: Path) -> None:
    """Map the status file at ``path`` (created by the parent) as this process's own: the
    worker's first step, after which :func:`set_status` writes there.

    Example:
        >>> open_status(Path("status-0"))  # doctest: +SKIP
    """
    global _status_map
    with open(path, "r+b") as fh:
        _status_map = mmap.mmap(fh.fileno(), STATUS_BYTES)
