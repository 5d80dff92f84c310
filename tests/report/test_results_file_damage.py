"""``report --from`` on results whose cells the ranks cannot read (a level this ppverify does not
know, a config, schedule or level that is no text): refused in one line naming the file and the
row, exit 2, as for the other bad cells (``report/results_file.py``: "A file written by another
ppverify version ... is refused with one line naming the file and the row"), never an internal
error in ``compare/ranks.add_ranks``. And a store a sweep is still writing: read as far as it is
written, with one line on stderr saying so."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from ppverify.cli import main
from ppverify.compare import ScheduleEntry, abstract_configs, run_comparison
from ppverify.core.errors import ScheduleFileError
from ppverify.report.results_file import load_results
from ppverify.sweep.store import store_lock


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    # gpipe and 1f1b at p = 2, m = 2, F = 1, B = 2 in the slot table: (m + p - 1)(tF + tB) = 9 each
    df = run_comparison(
        abstract_configs({"F": 1, "B": 2}, (0.0,), (2,), (2,)),
        (ScheduleEntry("gpipe", "gpipe"), ScheduleEntry("1f1b", "1f1b")),
        ("slot",),
    )
    assert df["makespan"].tolist() == [9.0, 9.0]
    return df


def _store(path: Path, frame: pd.DataFrame, **cells: object) -> Path:
    """The frame's rows as a sweep store's lines (raw rows: no ranks), row 1's cells replaced."""
    rows = [{k: (None if pd.isna(v) else v) for k, v in r.items()} for r in frame.to_dict(orient="records")]
    for r in rows:
        r["rank"] = None
    rows[0].update(cells)
    path.write_text("".join(json.dumps(r, default=str) + "\n" for r in rows))
    return path


BAD = [
    ({"level": "slot-v2"}, "level='slot-v2' is not a level of this ppverify"),
    ({"level": 5}, "level=5 is not text"),
    ({"config": [1]}, "config=[1] is not text"),
    ({"schedule": ["gpipe"]}, "schedule=['gpipe'] is not text"),
]


@pytest.mark.parametrize("cells,rule", BAD)
def test_a_store_row_the_ranks_cannot_read_is_refused(tmp_path, frame, capsys, cells, rule) -> None:
    # before: KeyError 'slot-v2' / KeyError 5 / unhashable list in add_ranks: exit 3
    store = _store(tmp_path / "s.jsonl", frame, **cells)
    assert main(["report", "--from", str(store), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "internal error" not in err
    assert f"s.jsonl: row 1: {rule}" in err


def test_a_csv_level_of_another_version_is_refused(tmp_path, frame) -> None:
    df = frame.copy()
    df.loc[1, "level"] = "slot-v2"
    df.to_csv(tmp_path / "r.csv", index=False)
    with pytest.raises(ScheduleFileError, match=r"r\.csv: row 3: level='slot-v2' is not a level of this ppverify"):
        load_results(tmp_path / "r.csv")  # row 1 is the header, row 3 the second result


def test_a_parquet_config_that_is_no_text_is_refused(tmp_path, frame) -> None:
    df = frame.copy()
    df["config"] = [1, 2]  # an integer column: no configuration label
    df.to_parquet(tmp_path / "r.parquet", index=False)
    with pytest.raises(ScheduleFileError, match=r"r\.parquet: row 2: config=1 is not text"):
        load_results(tmp_path / "r.parquet")


def test_a_store_a_sweep_is_writing_is_read_so_far_and_said(tmp_path, frame, capsys) -> None:
    store = _store(tmp_path / "s.jsonl", frame)
    with open(store, "a") as f:
        f.write('{"config": "p=2 m=2')  # the row being written now: no line end yet
    with pytest.raises(ScheduleFileError, match="the last row has no line end"):
        load_results(store)  # no sweep holds the store: cut short, refused as before
    with store_lock(store):  # this process as the sweep
        df = load_results(store)
        err = capsys.readouterr().err.strip()
    assert len(df) == 2  # the two whole rows; the torn one is the sweep's next
    assert err == (
        f"ppverify: note: a sweep (pid {os.getpid()}) is still writing {store}: the page holds the 2 rows done "
        "so far (rerun once it has finished for all of them)"
    )
    assert not Path(f"{store}.lock").exists()  # the sweep's lock removed at its end; report made none
    store.write_text(store.read_text().rsplit("\n", 1)[0] + "\n")  # the sweep done: its last line whole
    load_results(store)
    assert capsys.readouterr().err == ""


def test_report_from_a_store_being_written_exits_0_with_one_note(tmp_path, frame, capsys) -> None:
    store = _store(tmp_path / "s.jsonl", frame)
    with store_lock(store):
        capsys.readouterr()
        assert main(["report", "--from", str(store), "-o", str(tmp_path / "r.html")]) == 0
        out, err = capsys.readouterr()
    assert "(2 rows," in out
    assert err.count("\n") == 1 and "is still writing" in err and "the page holds the 2 rows done so far" in err


def test_report_leaves_no_lock_file_behind(tmp_path, frame) -> None:
    store = _store(tmp_path / "s.jsonl", frame)
    load_results(store)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]
