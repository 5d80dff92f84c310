"""A sweep resumed after its ``memory_cap`` changed recomputes the optimum rows: the optimum's cap
is part of its point (docs/comparison.md: ``memory_cap`` is "the optimum's cap"; sweep/grid.py's
``point_hash``: "rows solved at another cap ... are recomputed"), and the async row's gap to bound
follows the new optimum. Found by mutation testing: with the cap left out of the point key, the
resumed sweep kept the uncapped optimum and no test failed.

By hand, GPipe p=2, m=4, F=1, B=2, no transfer time:
- unlimited memory (``memory_cap: none``): device 1 starts at 1 (after 0F0), runs its 4·(1+2) = 12
  of work, and the last 0B3 follows its 1B3 (2 more): at least 1 + 12 + 2 = 15, which GPipe meets
  ((m+p-1)·(F+B) = 5·3 = 15): optimum 15, async 15, gap (15-15)/15 = 0;
- a cap of 1 activation per device: device 0 holds microbatch k from 0Fk until 0Bk ends, so 0F(k+1)
  waits for 0Bk, which waits for 1Bk, 1Fk, 0Fk: each microbatch runs 1 + 1 + 2 + 2 = 6 with
  nothing beside it: optimum 4·6 = 24; GPipe's own peak (4 activations on device 0) is over the cap,
  so the async row gets no gap (docs/memory.md: "the family, which does not fit, gets no gap").
"""

from __future__ import annotations

import csv
from pathlib import Path

import yaml

from ppverify.cli import main

GRID = {
    "schedules": ["gpipe"],
    "p": [2],
    "m": [4],
    "costs": {"F": 1, "B": 2},
    "comm_delays": [0],
    "levels": ["async", "optimum"],
    "time_limit": 5,
}


def _sweep(tmp_path: Path, cap: str, capsys) -> tuple[str, dict[str, dict[str, str]]]:
    """Sweep the grid with the optimum's ``memory_cap`` into one store; the summary line with the
    store's path cut out, and the written table's rows by level."""
    config, store, out = tmp_path / "grid.yaml", tmp_path / "s.jsonl", tmp_path / "out.csv"
    config.write_text(yaml.safe_dump({**GRID, "memory_cap": cap}))
    argv = ["sweep", str(config), "--store", str(store), "--workers", "1", "--no-progress"]
    assert main([*argv, "--out", str(out)]) == 0
    with out.open() as fh:
        rows = {r["level"]: r for r in csv.DictReader(fh)}
    return capsys.readouterr().out.replace(str(store), "s.jsonl"), rows


def test_changing_the_cap_recomputes_the_optimum(tmp_path: Path, capsys) -> None:
    text, rows = _sweep(tmp_path, "none", capsys)
    assert "2 rows (0 resumed from s.jsonl, 2 computed" in text
    assert float(rows["optimum"]["makespan"]) == 15 and float(rows["async"]["makespan"]) == 15
    assert float(rows["async"]["gap_to_bound"]) == 0.0  # (15 - 15) / 15

    # the same grid with the optimum capped at 1: the async row resumes, the optimum is solved anew
    text, rows = _sweep(tmp_path, "1", capsys)
    assert rows["optimum"]["status"] == "optimal" and float(rows["optimum"]["makespan"]) == 24
    assert float(rows["optimum"]["memory_cap"]) == 1
    assert float(rows["async"]["makespan"]) == 15
    assert rows["async"]["gap_to_bound"] == ""  # GPipe's peak 4 is over the cap 1: no gap
    assert "2 rows (1 resumed from s.jsonl, 1 computed" in text


def test_going_back_to_unlimited_solves_it_again(tmp_path: Path, capsys) -> None:
    # the store holds the current grid only (docs/comparison.md), so the uncapped optimum left it
    # when the cap was 1: back at none it is solved again (15), not resumed from the capped row (24)
    _sweep(tmp_path, "1", capsys)
    text, rows = _sweep(tmp_path, "none", capsys)
    assert float(rows["optimum"]["makespan"]) == 15 and rows["optimum"]["memory_cap"] == ""
    assert float(rows["async"]["gap_to_bound"]) == 0.0
    assert "2 rows (1 resumed from s.jsonl, 1 computed" in text
