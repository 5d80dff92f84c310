"""The sweep's store: an append-only JSON-lines file, one row per (schedule, configuration,
level) point, each row written, flushed and fsynced as soon as its task returns; read back with a
torn last line dropped (see :mod:`ppverify.sweep.grid` for what a point's hash covers). One sweep
writes a store at a time (:func:`store_lock`), and a store holds one sweep's rows
(:func:`check_owner`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..compare.stored_rows import lock_path, row_problem
from ..core.errors import ParameterError, ScheduleFileError


def read_store(path: str | Path, repair: bool = True) -> list[dict]:
    """Intact rows of a store, each point once; a torn last line (a kill while writing) is dropped
    and, when ``repair`` (only the sweep holding :func:`store_lock` may: a rewrite under a running
    sweep would lose the rows it appends), the file rewritten without it (atomically). Any other
    damaged line (not UTF-8, not JSON, NaN or Infinity, not a row object with its ``point``, or a
    row whose cells ``report --from`` refuses: :func:`~ppverify.compare.stored_rows.row_problem`)
    is refused naming the line: rows are never silently lost, nor resumed where a report of the
    same store would refuse them. Blank lines hold no row and are skipped.

    Example:
        >>> import tempfile, os
        >>> d = tempfile.mkdtemp(); f = os.path.join(d, "s.jsonl")
        >>> _ = open(f, "w").write('{"point": "a"}\\n{"point": "b"}\\n{"poi')
        >>> [r["point"] for r in read_store(f)], open(f).read().count("\\n")
        (['a', 'b'], 2)
        >>> _ = open(f, "a").write('5\\n{"point": "c"}\\n')
        >>> read_store(f)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: ...s.jsonl:3: damaged store line (a JSON number, not a row object); delete the line to recompute its point
        >>> _ = open(f, "w").write('{"point": "a"}\\n{"point": "b", "makespan": NaN}\\n')
        >>> read_store(f)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: ...s.jsonl:2: damaged store line (NaN is not valid JSON: numbers must be finite); delete the line to recompute its point
    """
    from ..core.files import atomic_write, output_target, read_bytes

    p = Path(path)
    _, status = output_target(p, "--store")  # empty, a folder, a FIFO, a device: refused
    if status is None:
        return []
    raw = read_bytes(p, max_bytes=None)  # a store grows with its sweep: no size limit
    lines = raw.split(b"\n")
    tail = lines.pop()  # the text after the last newline: empty unless a write was cut short
    torn = tail != b""
    if torn and not _torn_row(tail):
        # other text (a config or notes given as --store by mistake, with no final newline) is
        # checked as a line, so refused: the repair must never drop it
        lines.append(tail)
        torn = False
    rows: list[dict] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():  # a blank line (an editor's final newline) holds no row: nothing lost
            continue
        why = damage = ""
        try:
            row = json.loads(line.decode("utf-8"), parse_constant=_no_constant)
            if not isinstance(row, dict) or not isinstance(row.get("point"), str):
                why = (
                    f"a JSON {_json_kind(row)}, not a row object"
                    if not isinstance(row, dict)
                    else "a row without its point"
                )
            else:  # the row check report --from makes; a row without a column is superseded, not damaged
                damage = row_problem(row, complete=False) or ""
        except UnicodeDecodeError:
            why = "not UTF-8"
        except _Constant as exc:
            damage = f"{exc} is not valid JSON: numbers must be finite"
        except (ValueError, RecursionError):
            why = "not JSON"
        if why and not rows:  # not even a first row: another kind of file
            raise ScheduleFileError(
                f"{path}:{n}",
                "",
                f"not a sweep store (line {n} is {why}, a store holds one JSON row a line); give --store "
                "the store of this sweep or a new file name",
            )
        if why or damage:
            raise ScheduleFileError(
                f"{path}:{n}", "", f"damaged store line ({why or damage}); delete the line to recompute its point"
            )
        rows.append(row)
    if torn and repair:
        atomic_write(p, "".join(json.dumps(r) + "\n" for r in rows), "--store")
    seen: set[str] = set()
    unique = []
    for r in rows:
        if r["point"] not in seen:
            seen.add(r["point"])
            unique.append(r)
    return unique


class _Constant(ValueError):
    """``NaN``, ``Infinity`` or ``-Infinity`` in a store line: Python's JSON reads them, JSON has none."""


def _no_constant(name: str) -> float:
    raise _Constant(name)


def _torn_row(tail: bytes) -> bool:
    """Whether the text after a store's last newline is a row cut short (it starts as every row
    does and is not whole JSON) or a whole row whose newline was not written: either is dropped
    and its point computed again."""
    try:
        row = json.loads(tail.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return b'{"'.startswith(tail[:2])
    return isinstance(row, dict) and isinstance(row.get("point"), str)


def check_owner(rows: list[dict], name: str, path: str | Path) -> None:
    """Refuse a store holding rows of another sweep (rows carry their sweep's ``sweep`` name;
    rows written before they did carry none and are taken as this sweep's): one store, one sweep,
    so that resuming never mixes two grids' rows in the store that ``report --from`` reads.

    Example:
        >>> check_owner([{"point": "a", "sweep": "grid"}, {"point": "b"}], "grid", "s.jsonl")
        >>> check_owner([{"point": "a", "sweep": "grid"}], "other", "s.jsonl")
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: s.jsonl: holds 1 row of sweep 'grid', not of 'other': one store holds one sweep; give this run its own --store (a sweep config named 'grid' extends that sweep)
    """
    others: dict[str, int] = {}
    for r in rows:
        owner = r.get("sweep")
        if owner is not None and owner != name:
            others[str(owner)] = others.get(str(owner), 0) + 1
    if others:
        owner, n = max(others.items(), key=lambda kv: kv[1])
        raise ScheduleFileError(
            str(path),
            "",
            f"holds {n} row{'s' if n > 1 else ''} of sweep {owner!r}, not of {name!r}: one store holds one sweep; "
            f"give this run its own --store (a sweep config named {owner!r} extends that sweep)",
        )


@contextmanager
def store_lock(path: str | Path) -> Iterator[None]:
    """Hold ``STORE.lock`` exclusively while a sweep reads, repairs and appends to ``STORE``: a
    second sweep on the same store is refused at once, in one line, rather than computing every
    point again beside the first and appending each row twice (or rewriting a torn line under it,
    losing the rows it appends). The lock is the kernel's (``flock``), so a killed sweep leaves no
    stale lock; a file system without locks runs unlocked.

    Example:
        >>> import tempfile, os
        >>> f = os.path.join(tempfile.mkdtemp(), "s.jsonl")
        >>> with store_lock(f):  # doctest: +ELLIPSIS
        ...     with store_lock(f):
        ...         pass
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ParameterError: parameter --store=...: another sweep (pid ...) is writing this store; wait for it to finish, or give another --store
        >>> os.path.exists(f + ".lock")  # removed on release
        False
    """
    from ..core.files import check_output_path

    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        yield
        return
    # beside the file the store resolves to: two sweeps naming one store through a symbolic link
    # (or a linked folder) take the same lock, instead of both appending every row
    lock = lock_path(path)
    while True:
        # as every output: a typo'd folder (--store reslts/s.jsonl) is refused, never created
        check_output_path(path, "--store")
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise ParameterError("--store", str(path), f"cannot write there: {exc.strerror or exc}") from None
        try:
            _flock_soon(fd, fcntl.LOCK_EX)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            os.close(fd)
            raise ParameterError(
                "--store",
                str(path),
                f"another sweep (pid {holder}) is writing this store; wait for it to finish, or give another --store",
            ) from None
        except OSError:  # no locks on this file system (ENOLCK, EINVAL): run unlocked
            os.close(fd)
            fd = -1
            break
        try:
            same = os.stat(lock).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the holder removed the file as we opened it: lock the one there now
    if fd < 0:
        yield
        return
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        try:
            os.unlink(lock)  # still locked: a sweep starting now opens a new file, and retries
        except OSError:
            pass
        os.close(fd)


def _flock_soon(fd: int, how: int, tries: int = 5, every: float = 0.02) -> None:
    """``flock(fd, how)`` without blocking, tried ``tries`` times ``every`` seconds apart before
    its BlockingIOError is raised: ``report --from`` holds a shared lock for the instant it asks
    whether a sweep is writing (:func:`~ppverify.compare.stored_rows.store_writer`); a sweep
    starting in that instant waits it out instead of taking the report for another sweep."""
    import fcntl
    import time

    for n in range(tries):
        try:
            fcntl.flock(fd, how | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if n == tries - 1:
                raise
            time.sleep(every)


def _json_kind(value: Any) -> str:
    return {list: "list", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")


class Store:
    """Append-only JSON-lines store; every row is flushed and fsynced when written."""

    def __init__(self, path: str | Path) -> None:
        from ..core.files import check_output_path

        self.path = Path(path)
        # a missing folder, a folder, a FIFO or a device is refused (never appended to or blocked
        # on); an existing store file is appended to
        check_output_path(path, "--store")
        try:
            self._fh = self.path.open("a", encoding="utf-8")
        except OSError as exc:
            raise ParameterError("--store", str(path), f"cannot write there: {exc.strerror or exc}") from None

    def write(self, rows: Iterable[dict]) -> None:
        """Append rows (one line each) durably."""
        self._fh.write("".join(json.dumps(r, default=_jsonable) + "\n" for r in rows))
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        """Close the file."""
        self._fh.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _jsonable(o: Any) -> Any:
    if hasattr(o, "item"):
        return o.item()
    return str(o)
