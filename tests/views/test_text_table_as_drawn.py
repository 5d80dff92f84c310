"""A text table is timed as drawn, one tick per cell: ``show`` reads each kind's length from the
cells it spans, and a differing cell is named in words."""

from __future__ import annotations

import json

from ppverify.cli import main
from ppverify.io.table_text import read_text_table, schedule_from_programs
from ppverify.views.table_cells import difference_text, drawn_costs, drawn_widths


def drawn(capsys, tmp_path, *costs: str):
    path = tmp_path / "t.txt"
    assert main(["show", "1f1b", "-p", "4", "-m", "4", *costs, "--width", "0"]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("tick"))
    path.write_text("\n".join(lines[start : start + 5]) + "\n")
    return path


def test_a_table_drawn_with_b_over_two_cells_reads_back_as_drawn(capsys, tmp_path):
    path = drawn(capsys, tmp_path, "--costs", "F=1,B=2")
    assert main(["show", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # 1F1B at F = 1, B = 2: (m + p - 1)(tF + tB) = 7 * 3 = 21, one tick per cell
    assert out["makespan"] == 21 and out["costs"] == "F=1,B=2 (cells as drawn)"
    assert out["embedded_table"]["matches"] is True
    assert main(["show", str(path), "--no-table"]) == 0
    assert "costs         F=1,B=2 (cells as drawn)" in capsys.readouterr().out


def test_a_unit_table_stays_unit(capsys, tmp_path):
    path = drawn(capsys, tmp_path, "--costs", "F=1,B=1")
    assert main(["show", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # unit-cost 1F1B: (m + p - 1) * 2 = 14
    assert out["makespan"] == 14 and out["costs"] == "unit"


def test_a_kind_drawn_over_varying_widths_is_said_to_be_assumed():
    progs, grid = read_text_table("tick 0 1 2 3 4\ndev 0 0F0 0F1 0B0 0B1 0B1")
    schedule = schedule_from_programs(progs)
    assert drawn_widths(schedule, grid) is None  # 0B0 one cell, 0B1 two
    assert drawn_costs(schedule, grid).label.startswith("unit, assumed")


def test_the_first_difference_is_printed_in_words(capsys, tmp_path):
    path = drawn(capsys, tmp_path, "--costs", "F=1,B=2")
    assert main(["show", str(path), "--costs", "F=1,B=1", "--no-table"]) == 0
    out = capsys.readouterr().out
    # device 0's drawn row: 4 forwards (ticks 0-3), six idle cells (4-9), 0B0 over ticks 10-11; with
    # B = 1 (and its inputs earlier still) 0B0 starts after the six idle slots at 10 and ends there,
    # so tick 11, 0B0's second drawn cell, is idle in the engine's table
    assert "device 0, tick 11: the file has 0B0, the slot engine an idle cell" in out
    assert "{'device'" not in out
    assert difference_text({"tick_length": [1.0, 2.0]}) == "the file's tick is 1, the slot engine's 2"
