"""Read the long-format result rows a report is built from: ``compare --out`` (.csv, .parquet),
``compare --json`` (.json) and the ``sweep`` store (.jsonl).

A file written by another ppverify version (columns missing, a level this one does not know) or
cut short (a torn last line, a row with too few fields), or a cell that is not what compare writes
(a makespan that is no finite number, a config that is no text), is refused with one line naming
the file and the row: the check of :func:`ppverify.compare.stored_rows.row_problem`, which a
resumed sweep applies to its store too. A store that a sweep is still writing is read as far as
it is written, and one line on stderr says so.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import pandas as pd

from ..compare.outcome import row_cells
from ..compare.stored_rows import NUMERIC, REQUIRED, row_problem, store_writer
from ..compare.table import COLUMNS
from ..core.errors import ScheduleFileError
from ..core.files import check_input_file, read_text
from ..core.limits import check_json_text

SUFFIXES: tuple[str, ...] = (".csv", ".jsonl", ".json", ".parquet")


def load_results(path: str | Path) -> pd.DataFrame:
    """The rows of a results file as the comparison frame (ranks recomputed when the file has none).

    Example:
        >>> import tempfile, os
        >>> from ppverify.compare import run_comparison, abstract_configs, ScheduleEntry
        >>> df = run_comparison(abstract_configs({"F": 1, "B": 2}, (0.0,), (2,), (2,)), (ScheduleEntry("gpipe", "gpipe"),), ("slot",))
        >>> f = os.path.join(tempfile.mkdtemp(), "r.csv"); df.to_csv(f, index=False)
        >>> load_results(f)[["schedule", "level", "makespan", "rank"]].values.tolist()
        [['gpipe', 'slot', 9.0, 1]]
        >>> _ = open(f, "w").write("config,p\\n1,2\\n")
        >>> load_results(f)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ppverify.core.errors.ScheduleFileError: ...r.csv: row 1 (header): missing column(s) m, system, model, schedule, family, params, level, status, makespan, time_unit, memory_unit: not a ppverify results file, or one written by another version
    """
    p = Path(path)
    suffix = p.suffix.lower()
    writer = None
    if suffix not in SUFFIXES:
        raise ScheduleFileError(str(p), "", f"expected a results file ending in {', '.join(SUFFIXES)}")
    check_input_file(p)  # missing, a folder, a FIFO or a device: refused before it is opened
    if suffix == ".parquet":
        rows = _parquet_rows(p)
        header_row = "row 1 (header)"
    elif suffix == ".csv":
        rows = _csv_rows(p)
        header_row = "row 1 (header)"
    elif suffix == ".json":
        rows = [row_cells(r) for r in _json_rows(p)]  # compare --json's lists and objects as the frame's text
        header_row = "row 1"
    else:
        writer = store_writer(p)  # a sweep still appending: its rows so far, said so below
        rows = _jsonl_rows(p, writing=writer is not None)
        header_row = "row 1"
    if not rows:
        raise ScheduleFileError(str(p), "", "no result rows")
    missing = [c for c in REQUIRED if c not in rows[0]]
    if missing:
        raise ScheduleFileError(
            str(p),
            header_row,
            f"missing column(s) {', '.join(missing)}: not a ppverify results file, or one written by another version",
        )
    for n, r in enumerate(rows, start=2 if suffix in (".csv", ".parquet") else 1):
        _check_row(str(p), n, r)
    df = pd.DataFrame(rows)
    for c in NUMERIC:
        if c in df:
            df[c] = pd.to_numeric(df[c], errors="coerce")
    for c in COLUMNS:
        if c not in df:
            df[c] = None
    df["p"], df["m"], df["rank"] = df["p"].astype(int), df["m"].astype(int), df["rank"].astype("Int64")
    for c in ("note", "verified", "rank_change", "semantics"):
        # (an all-empty column reads as float: to text before the blanks are filled)
        df[c] = df[c].astype(object).where(df[c].notna(), "").astype(str)
    if df["rank"].isna().all():  # a sweep store keeps raw rows: rank them over the whole file
        from ..compare.ranks import add_ranks
        from ..compare.table import DERIVED

        extra = [c for c in df.columns if c not in COLUMNS]
        df = add_ranks(df[[c for c in COLUMNS if c not in DERIVED]]).join(df[extra])
    if writer is not None:  # not refused: the rows so far are a fine page, but not the sweep's whole grid
        print(
            f"ppverify: note: a sweep (pid {writer}) is still writing {p}: the page holds the {len(df)} rows "
            "done so far (rerun once it has finished for all of them)",
            file=sys.stderr,
        )
    return df


def _check_row(path: str, n: int, r: dict) -> None:
    why = row_problem(r)  # the check a resumed sweep applies to its store's rows too
    if why is not None:
        raise ScheduleFileError(path, f"row {n}", why)


def _parquet_rows(p: Path) -> list[dict]:
    """The rows of a Parquet file; a NaN or infinite number in a numeric column (a value, not a
    null: what pandas writes for a missing one) is refused naming its row, as in CSV and JSON."""
    try:
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        table = pq.read_table(p)
        for c in NUMERIC:
            if c in table.column_names and _is_float_type(table.schema.field(c).type):
                bad = pc.invert(pc.is_finite(table[c])).to_pylist()  # null stays null, NaN is True
                row = next((i for i, b in enumerate(bad) if b), None)
                if row is not None:
                    raise ScheduleFileError(
                        str(p), f"row {row + 2}", f"{c}={table[c][row].as_py()!r} is not a finite number"
                    )
        return table.to_pandas().to_dict(orient="records")
    except ScheduleFileError:
        raise
    except Exception as exc:
        raise ScheduleFileError(str(p), "", f"not a readable Parquet file ({type(exc).__name__})") from None


def _is_float_type(kind: object) -> bool:
    import pyarrow.types as pt

    return bool(pt.is_floating(kind))


def _csv_rows(p: Path) -> list[dict]:
    text = read_text(p)  # size limit, UTF-8 (naming the first bad byte's line)
    reader = csv.reader(io.StringIO(text))
    try:
        lines = list(reader)
    except csv.Error as exc:  # a field over the csv module's limit, a NUL byte ...
        raise ScheduleFileError(str(p), f"line {reader.line_num}", f"malformed CSV: {exc}") from None
    if not lines:
        return []
    header = lines[0]
    rows = []
    for n, fields in enumerate(lines[1:], start=2):
        if len(fields) != len(header):
            raise ScheduleFileError(
                str(p),
                f"row {n}",
                f"{len(fields)} fields, the header has {len(header)}: truncated, or written by another version",
            )
        rows.append(dict(zip(header, (None if f == "" else f for f in fields))))
    if not text.endswith("\n"):
        raise ScheduleFileError(str(p), f"row {len(lines)}", "the last row has no line end: the file is truncated")
    return rows


def _jsonl_rows(p: Path, writing: bool = False) -> list[dict]:
    """The rows of a sweep store; ``writing``: a sweep holds its lock, so a last line without its
    line end is the row it is writing now, left out (else the store is cut short: refused)."""
    rows = []
    text = read_text(p)
    if writing and not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
    check_json_text(text, str(p))  # nesting and number sizes, before json.loads sees them
    with io.StringIO(text, newline=None) as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            if not line.endswith("\n"):  # cut short: a sweep killed while writing
                raise ScheduleFileError(
                    str(p),
                    f"row {n}",
                    "the last row has no line end: the file is truncated (a sweep store is repaired by "
                    "rerunning its sweep, and complete once the sweep has finished)",
                )
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                raise ScheduleFileError(
                    str(p), f"row {n}", "not a JSON object: the file is truncated or corrupt"
                ) from None
            if not isinstance(r, dict):
                raise ScheduleFileError(str(p), f"row {n}", "not a JSON object")
            rows.append(r)
    seen, unique = set(), []
    for r in rows:  # a resumed sweep may hold a point twice
        key = r.get("point") if isinstance(r.get("point"), str) else None
        if key is None or key not in seen:
            seen.add(key)
            unique.append(r)
    return unique


def _json_rows(p: Path) -> list[dict]:
    text = read_text(p)
    check_json_text(text, str(p))  # nesting and number sizes, before json.loads sees them
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScheduleFileError(
            str(p), f"line {exc.lineno}", "not valid JSON: the file is truncated or corrupt"
        ) from None
    rows = doc.get("rows") if isinstance(doc, dict) else doc
    if isinstance(doc, dict) and "programs" in doc and "rows" not in doc:  # a saved schedule
        raise ScheduleFileError(
            str(p),
            "rows",
            "a schedule file, not results: a report reads the rows of `compare --json`/`--out`, a sweep store "
            "or a design result; `ppverify report --schedules FILE` runs a comparison of this schedule and writes its page",
        )
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ScheduleFileError(
            str(p), "rows", "expected the output of `ppverify compare --json` (an object with rows)"
        )
    return rows
