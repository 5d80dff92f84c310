"""A damaged row of a sweep store is refused by ``sweep`` as ``report --from`` refuses it (one check,
:func:`ppverify.compare.stored_rows.row_problem`), naming ``STORE:LINE`` and how to repair it, never
resumed and ranked; and rows of an earlier grid dropped on resume are counted, not lost silently
(docs/comparison.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from ppverify.cli import main
from ppverify.sweep import read_store

# 2 schedules x 1 configuration x 1 level = 2 rows; by hand both are (m + p - 1)(tF + tB) = 3 x 3 = 9
GRID = {"name": "g", "schedules": ["gpipe", "1f1b"], "p": [2], "m": [2], "costs": {"F": 1, "B": 2}, "levels": ["slot"]}


def _sweep(tmp_path: Path, capsys, grid: dict = GRID, *extra: str) -> tuple[int, str, str]:
    config = tmp_path / "g.yaml"
    config.write_text(yaml.safe_dump(grid))
    capsys.readouterr()
    code = main(["sweep", str(config), "--store", str(tmp_path / "s.jsonl"), "--workers", "1", "--no-progress", *extra])
    out, err = capsys.readouterr()
    return code, out, err.strip()


@pytest.fixture()
def store(tmp_path, capsys) -> Path:
    code, _, _ = _sweep(tmp_path, capsys)
    assert code == 0
    rows = read_store(tmp_path / "s.jsonl")
    assert [(r["schedule"], r["makespan"]) for r in rows] == [("gpipe", 9.0), ("1f1b", 9.0)]
    return tmp_path / "s.jsonl"


def _damage(store: Path, pattern: str, text: str) -> None:
    lines = store.read_text().splitlines(keepends=True)
    new = re.sub(pattern, text, lines[0], count=1)
    assert new != lines[0]
    store.write_text("".join([new, *lines[1:]]))


DAMAGE = [
    # (pattern in line 1, replacement, what both readers say of it)
    (r'"makespan": 9\.0', '"makespan": "abc"', "makespan='abc' is not a number"),
    (r'"makespan": 9\.0', '"makespan": 1e400', "makespan=inf is not a finite number"),  # json reads 1e400 as inf
    (r'"p": 2', '"p": "x"', "p='x' is not an integer in 1..1e+12"),
    (r'"params": "\{\}"', '"params": "{bad"', "params='{bad' is not a JSON object"),
    (r'"peak_activation": [0-9.]+', '"peak_activation": "x"', "peak_activation='x' is not a number"),
    (r'"level": "slot"', '"level": "slot-v2"', "level='slot-v2' is not a level of this ppverify"),
    (r'"level": "slot"', '"level": 5', "level=5 is not text"),
    (r'"config": "[^"]*"', '"config": [1]', "config=[1] is not text"),
    (r'"schedule": "gpipe"', '"schedule": {"a": 1}', "schedule={'a': 1} is not text"),
]


@pytest.mark.parametrize("pattern,text,rule", DAMAGE)
def test_a_damaged_row_is_refused_by_sweep_as_by_report(tmp_path, store, capsys, pattern, text, rule) -> None:
    _damage(store, pattern, text)
    code, out, err = _sweep(tmp_path, capsys)
    assert code == 2 and out == "" and len(err.splitlines()) == 1, err
    assert f"s.jsonl:1: damaged store line ({rule}" in err and err.endswith("delete the line to recompute its point")
    code, _, dry = _sweep(tmp_path, capsys, GRID, "--dry-run")  # it counts what the run would do: refused alike
    assert code == 2 and dry == err
    assert main(["report", "--from", str(store), "-o", str(tmp_path / "r.html")]) == 2
    assert f"s.jsonl: row 1: {rule}" in capsys.readouterr().err


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_a_json_constant_is_refused_not_ranked(tmp_path, store, capsys, constant) -> None:
    # before: resumed as status ok, makespan inf, ranked 1st beside 1F1B's 9 ("inf - 9 > 1e-9 * inf" is False: a tie)
    _damage(store, r'"makespan": 9\.0', f'"makespan": {constant}')
    code, out, err = _sweep(tmp_path, capsys, GRID, "--out", str(tmp_path / "t.csv"))
    assert code == 2 and out == "" and not (tmp_path / "t.csv").exists()
    assert f"s.jsonl:1: damaged store line ({constant} is not valid JSON: numbers must be finite)" in err


def test_deleting_the_line_recomputes_its_point(tmp_path, store, capsys) -> None:
    _damage(store, r'"makespan": 9\.0', '"makespan": "abc"')
    assert _sweep(tmp_path, capsys)[0] == 2
    store.write_text("".join(store.read_text().splitlines(keepends=True)[1:]))  # as the message says
    code, out, _ = _sweep(tmp_path, capsys)
    assert code == 0 and "(1 resumed from" in out and ", 1 computed" in out
    assert sorted(r["makespan"] for r in read_store(store)) == [9.0, 9.0]


def test_a_row_without_a_newer_column_is_superseded_not_refused(tmp_path, store, capsys) -> None:
    # a row stored by a ppverify before the `verified` column: computed again, as before, and counted
    lines = store.read_text().splitlines(keepends=True)
    row = json.loads(lines[0])
    del row["verified"]
    store.write_text(json.dumps(row) + "\n" + "".join(lines[1:]))
    code, out, err = _sweep(tmp_path, capsys)
    assert code == 0 and "(1 resumed from" in out
    assert "sweep g: 1 row of an earlier grid dropped from" in err


def test_rows_of_an_earlier_grid_dropped_are_counted(tmp_path, store, capsys) -> None:
    # B = 3: both rows of B = 2 leave the store (docs/comparison.md), and stderr says how many
    code, out, err = _sweep(tmp_path, capsys, {**GRID, "costs": {"F": 1, "B": 3}})
    assert code == 0 and "(0 resumed from" in out
    assert err.splitlines() == [
        f"ppverify: note: sweep g: 2 rows of an earlier grid dropped from {store} (points this grid no longer "
        "holds, or whose files, solver budget or ppverify changed since: those it holds are computed again)"
    ]
    # (m + p - 1)(tF + tB) = 3 x 4 = 12 each now
    assert [r["makespan"] for r in read_store(store)] == [12.0, 12.0]
    code, out, err = _sweep(tmp_path, capsys, {**GRID, "costs": {"F": 1, "B": 3}})
    assert code == 0 and err == ""  # nothing dropped: nothing said
