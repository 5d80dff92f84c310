"""Comparison rows read back from a file, as every reader checks them: one row of a results file
or of a sweep store (:func:`row_problem`: the columns a report needs, numbers that are finite
numbers, text that is text, a level this ppverify knows), and whether a sweep is writing a store
now (:func:`store_writer`: the lock ``STORE.lock`` a running sweep holds, :func:`lock_path`).

``report --from`` (:mod:`ppverify.report.results_file`) and a resumed sweep
(:mod:`ppverify.sweep.store`) read rows through these, so the two never disagree on whether a
store is damaged, and neither hands the ranks (:mod:`.ranks`) a level or a cell they cannot read.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path

from .config import ALL_LEVELS

#: the columns a report needs in every row
REQUIRED: tuple[str, ...] = (
    "config",
    "p",
    "m",
    "system",
    "model",
    "schedule",
    "family",
    "params",
    "level",
    "status",
    "makespan",
    "time_unit",
    "memory_unit",
)
#: the columns that must hold a number when present (empty allowed)
NUMERIC: tuple[str, ...] = (
    "p",
    "m",
    "makespan",
    "bubble_ratio",
    "peak_activation",
    "lower_bound",
    "seconds",
    "rank",
    "gap_to_bound",
    "optimum_peak",
    "memory_cap",
)
#: the columns that must hold text: what the ranks group and order rows by
TEXT: tuple[str, ...] = ("config", "schedule", "level")
#: the largest p, m or rank a results file may hold (a 64-bit integer column holds every one exactly)
MAX_COUNT = 10**12


def _blank(v: object) -> bool:
    """An empty cell: missing, empty text, or a Parquet null (read as NaN, or as pandas' NA)."""
    if v is None or isinstance(v, str):
        return not v
    try:
        return bool(v != v)  # NaN is the one number unequal to itself
    except TypeError:  # pandas' NA is neither equal nor unequal to anything
        return True
    except ValueError:  # an array (a Parquet list cell): a value, and no number
        return False


def row_problem(r: Mapping, complete: bool = True) -> str | None:
    """What is wrong with one stored row, in words (None: nothing). With ``complete`` every
    column of :data:`REQUIRED` must be there (``report --from``); without, only the cells present
    are checked (a sweep drops a row without a column every row now carries, and computes it
    again: :func:`ppverify.sweep.executor.superseded`).

    Example:
        >>> row = {"config": "k", "p": 2, "m": 4, "system": "s", "model": "x", "schedule": "gpipe", "family": "gpipe",
        ...        "params": "{}", "level": "slot", "status": "ok", "makespan": 15.0, "time_unit": "units",
        ...        "memory_unit": "activations"}
        >>> row_problem(row) is None
        True
        >>> row_problem({**row, "makespan": float("inf")}), row_problem({**row, "level": "slot-v2"})
        ('makespan=inf is not a finite number', "level='slot-v2' is not a level of this ppverify (formula, slot, async, contention, optimum, measured): written by another version")
        >>> row_problem({"point": "a", "p": "x"}, complete=False), row_problem({"point": "a"}, complete=False)
        ("p='x' is not an integer in 1..1e+12", None)
    """
    for c in REQUIRED:
        if c not in r and complete:
            return f"missing field {c!r}: truncated, or written by another version"
    counts = ("p", "m", "rank") if not _blank(r.get("rank")) else ("p", "m")  # ranks: 1, 2 ... when given
    for c in counts:
        if c not in r:
            continue
        try:
            ok = float(r[c]).is_integer() and 1 <= float(r[c]) <= MAX_COUNT
        except (TypeError, ValueError, OverflowError):
            ok = False
        if not ok:
            return f"{c}={r[c]!r} is not an integer in 1..{MAX_COUNT:g}"
    for c in NUMERIC:
        v = r.get(c)
        if not _blank(v):
            if isinstance(v, bool):  # JSON true is no number, though Python's float() takes it
                return f"{c}={v!r} is not a number"
            try:
                x = float(v)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                return f"{c}={v!r} is not a number"
            if not math.isfinite(x):  # CSV text 'nan' or 'inf', JSON 1e400: refused, as JSON refuses NaN
                return f"{c}={v!r} is not a finite number"
    for c in TEXT:
        v = r.get(c)
        if c in r and v is not None and not isinstance(v, str):  # a list, a number: no label
            shown = repr(v)
            return f"{c}={shown if len(shown) <= 40 else shown[:37] + '...'} is not text"
    if any(c in r and not str(r[c] or "").strip() for c in ("level", "schedule")):
        return "empty level or schedule"
    level = r.get("level")
    if level is not None and level not in ALL_LEVELS:  # ranks order a point's rows by the levels this ppverify knows
        return f"level={level!r} is not a level of this ppverify ({', '.join(ALL_LEVELS)}): written by another version"
    params = r.get("params")
    if not _blank(params):  # the family's parameters, as compare writes them: '{"v": 2}'
        try:
            ok = isinstance(params, str) and isinstance(json.loads(params), dict)
        except (ValueError, RecursionError):
            ok = False
        if not ok:
            return f"params={str(params)[:40]!r} is not a JSON object"
    return None


def lock_path(store: str | Path) -> Path:
    """The lock a sweep holds while it writes ``store``: ``STORE.lock`` beside the file the store
    resolves to (two sweeps naming one store through a symbolic link take the same lock).

    Example:
        >>> lock_path("/tmp/s.jsonl").name
        's.jsonl.lock'
    """
    return Path(str(Path(store).resolve()) + ".lock")


def store_writer(store: str | Path) -> str | None:
    """The pid (as the lock file holds it, ``?`` if it holds none) of the sweep writing ``store``
    now, None when no sweep holds its lock (:func:`lock_path`). It reads only: the lock file is
    never created, and a shared lock is held for the instant of the test (a sweep starting then
    waits it out: :func:`ppverify.sweep.store.store_lock`).

    Example:
        >>> import tempfile, os
        >>> store_writer(os.path.join(tempfile.mkdtemp(), "s.jsonl")) is None  # no lock file: no sweep
        True
    """
    try:
        import fcntl
    except ImportError:  # not POSIX: sweeps run unlocked, nothing to ask
        return None
    try:
        fd = os.open(lock_path(store), os.O_RDONLY)
    except OSError:  # no lock file (no sweep since the last ended), or none we may read
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:  # a sweep holds it exclusively
            return os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
        except OSError:  # no locks on this file system: sweeps run unlocked there
            return None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None  # a killed sweep's file, or one ending now: nobody writes
    finally:
        os.close(fd)


__all__ = ["MAX_COUNT", "NUMERIC", "REQUIRED", "TEXT", "lock_path", "row_problem", "store_writer"]
