"""One store, one sweep (docs/comparison.md): after a sweep's grid changes, its store holds the new
grid only, so ``report --from`` never shows the old configurations beside the new ones; and an
interrupted sweep's "N rows are safe" counts the current grid's rows."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import ppverify.sweep.executor as ex
from ppverify.cli import main
from ppverify.sweep import read_store

# 2 schedules x (2 p x 2 m) configurations x 2 levels = 16 rows
GRID = {"name": "g", "schedules": ["gpipe", "1f1b"], "p": [2, 4], "m": [4, 8], "costs": {"F": 1, "B": 2}}
GRID["levels"] = ["slot", "async"]


def _sweep(tmp_path: Path, grid: dict, capsys) -> str:
    config = tmp_path / "g.yaml"
    config.write_text(yaml.safe_dump(grid))
    code = main(["sweep", str(config), "--store", str(tmp_path / "s.jsonl"), "--no-progress"])
    assert code == 0
    return capsys.readouterr().out


def test_changed_costs_replace_the_old_grid_rather_than_join_it(tmp_path, capsys):
    _sweep(tmp_path, GRID, capsys)
    _sweep(tmp_path, {**GRID, "costs": {"F": 1, "B": 3}}, capsys)
    rows = read_store(tmp_path / "s.jsonl")
    assert len(rows) == 16  # the 16 of B=3, not 32
    assert all("B=3" in r["config"] for r in rows)
    # gpipe p=2 m=4 slot, by hand: (m + p - 1)(tF + tB) = (4 + 2 - 1)(1 + 3) = 20
    (g,) = [r for r in rows if r["schedule"] == "gpipe" and r["level"] == "slot" and r["config"].startswith("p=2 m=4")]
    assert g["makespan"] == 20.0
    assert main(["report", "--from", str(tmp_path / "s.jsonl"), "-o", str(tmp_path / "r.html")]) == 0
    assert "(16 rows," in capsys.readouterr().out


def test_a_shrunk_grid_keeps_its_rows_and_drops_the_others(tmp_path, capsys):
    _sweep(tmp_path, GRID, capsys)
    out = _sweep(tmp_path, {**GRID, "m": [4], "levels": ["slot"]}, capsys)
    # 2 schedules x 2 p x 1 m x 1 level = 4 rows, all resumed
    assert "g: 4 rows (4 resumed" in out
    assert len(read_store(tmp_path / "s.jsonl")) == 4


def test_the_safe_count_of_an_interrupted_sweep_is_the_current_grids(tmp_path, capsys, monkeypatch):
    _sweep(tmp_path, GRID, capsys)  # 16 rows of B=2 in the store

    def stop(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(ex, "run_sweep", stop)
    config = tmp_path / "g.yaml"
    config.write_text(yaml.safe_dump({**GRID, "costs": {"F": 1, "B": 3}}))
    assert main(["sweep", str(config), "--store", str(tmp_path / "s.jsonl"), "--no-progress"]) == 130
    # none of the 16 stored rows is of the B=3 grid: none will be resumed
    assert "interrupted: 0 rows are safe in" in capsys.readouterr().err


@pytest.mark.parametrize("keep", [["gpipe"], ["gpipe", "1f1b"]])
def test_dry_run_counts_only_the_current_grid(tmp_path, capsys, keep):
    _sweep(tmp_path, GRID, capsys)
    config = tmp_path / "g.yaml"
    config.write_text(yaml.safe_dump({**GRID, "schedules": keep}))
    assert main(["sweep", str(config), "--store", str(tmp_path / "s.jsonl"), "--dry-run"]) == 0
    n = 4 * 2 * len(keep)  # configurations x levels x schedules, all stored: nothing to run
    assert f"{n} rows = {len(keep)} schedules x 4 configurations x 2 levels; {n} already in" in capsys.readouterr().out
