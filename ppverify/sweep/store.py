"""The sweep's store: an append-only JSON-lines file, one row per (schedule, configuration,
level) point, each row written, flushed and fsynced as soon as its task returns; read back with a
torn last line dropped (see :mod:`ppverify.sweep.grid` for what a point's hash covers).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..core.errors import ParameterError, ScheduleFileError


def read_store(path: str | Path) -> list[dict]:
    """Intact rows of a store, each point once; a torn last line (a kill while writing) is dropped
    and the file rewritten without it (atomically). Any other damaged line (not UTF-8, not JSON,
    not a row object with its ``point``) is refused naming the line: rows are never silently lost.

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
    """
    from ..core.files import atomic_write, output_target, read_bytes

    p = Path(path)
    _, status = output_target(p, "--store")  # empty, a folder, a FIFO, a device: refused
    if status is None:
        return []
    raw = read_bytes(p, max_bytes=None)  # a store grows with its sweep: no size limit
    lines = raw.split(b"\n")
    torn = lines.pop() != b""  # the text after the last newline: empty unless a write was cut short
    rows = []
    for n, line in enumerate(lines, 1):
        why = ""
        try:
            row = json.loads(line.decode("utf-8"))
            if not isinstance(row, dict) or not isinstance(row.get("point"), str):
                why = (
                    f"a JSON {_json_kind(row)}, not a row object"
                    if not isinstance(row, dict)
                    else "a row without its point"
                )
        except UnicodeDecodeError:
            why = "not UTF-8"
        except (ValueError, RecursionError):
            why = "not JSON"
        if why:
            raise ScheduleFileError(
                f"{path}:{n}", "", f"damaged store line ({why}); delete the line to recompute its point"
            )
        rows.append(row)
    if torn:
        atomic_write(p, "".join(json.dumps(r) + "\n" for r in rows), "--store")
    seen: set[str] = set()
    unique = []
    for r in rows:
        if r["point"] not in seen:
            seen.add(r["point"])
            unique.append(r)
    return unique


def _json_kind(value: Any) -> str:
    return {list: "list", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")


class Store:
    """Append-only JSON-lines store; every row is flushed and fsynced when written."""

    def __init__(self, path: str | Path) -> None:
        from ..core.files import output_target

        self.path = Path(path)
        output_target(self.path, "--store")  # a FIFO or a device is never appended to (or blocked on)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = self.path.open("a", encoding="utf-8")
        except OSError as exc:
            raise ParameterError("store", str(path), f"cannot write there: {exc.strerror or exc}") from None

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
