"""A hand-drawn table whose times break a dependency: ``show`` says where, instead of asking for
``--costs`` (no cost model reproduces a drawing that starts an op before its input ends).

Every expected value below is read off the drawing by hand (ticks count cells from 0; an op drawn
over cells t..u-1 ends at tick u).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ppverify.io.json_format import ScheduleDocument
from ppverify.io.table_text import read_text_table, schedule_from_programs
from ppverify.views.table_cells import drawn_break
from ppverify.views.table_report import table_text, time_table

# 1F1B-like order p=2 m=2, F over 1 cell and B over 2, but device 1 drawn from tick 0
EARLY = "tick 0 1 2 3 4 5\ndev 0 0F0 0F1 0B0 0B0 0B1 0B1\ndev 1 1F0 1F1 1B0 1B0 1B1 1B1\n"
# the same order drawn as the slot engine runs it at F=1, B=2: (m + p - 1)(F + B) = 9 ticks
GOOD = "tick 0 1 2 3 4 5 6 7 8\ndev 0 0F0 0F1 . . . 0B0 0B0 0B1 0B1\ndev 1 . 1F0 1F1 1B0 1B0 1B1 1B1 . .\n"


def _doc(text: str) -> ScheduleDocument:
    programs, grid = read_text_table(text)
    return ScheduleDocument(schedule_from_programs(programs), table=grid)


def test_the_first_broken_dependency_by_its_drawn_start():
    doc = _doc(EARLY)
    assert doc.table is not None
    # drawn: 0F0 [0,1) 0F1 [1,2) 0B0 [2,4) 0B1 [4,6) on device 0, the same ticks on device 1.
    # broken: 1F0 (starts 0) needs 0F0 (ends 1); 1F1 (1) needs 0F1 (2); 0B0 (2) needs 1B0 (4);
    # 0B1 (4) needs 1B1 (6). Held: 1B0 (2) after 1F0 (1), 1B1 (4) after 1F1 (2): 4 broken
    assert drawn_break(doc.schedule, doc.table) == (
        "the drawn times break a dependency: 1F0 at tick 0 needs 0F0, which ends at tick 1 (3 more broken)"
    )


def test_a_possible_drawing_breaks_nothing():
    doc = _doc(GOOD)
    assert doc.table is not None
    assert drawn_break(doc.schedule, doc.table) is None


def test_an_overlapped_slot_counts_for_each_of_its_ops():
    # the slot 0F1&0B0 at tick 1 holds 0B0, which needs 1B0, drawn over [2,3): ends at tick 3.
    # Held: 1F0 (1) after 0F0 (ends 1), 1B0 (2) after 1F0 (ends 2), 0B0 (1) after 0F0 (ends 1);
    # 1F1 and 1B1 are not drawn (missing ops: nothing to time), so 0B1 breaks nothing
    doc = _doc("tick 0 1 2 3\ndev 0 0F0 0F1&0B0 . 0B1\ndev 1 . 1F0 1B0 .\n")
    assert doc.table is not None
    assert drawn_break(doc.schedule, doc.table) == (
        "the drawn times break a dependency: 0B0 at tick 1 needs 1B0, which ends at tick 3"
    )


def test_show_says_it_instead_of_asking_for_costs():
    res = time_table(_doc(EARLY), text_table=True)
    last = table_text(res, table=False).splitlines()[-1]
    assert "DIFFERS" in last and "give --costs" not in last
    assert last.endswith("1F0 at tick 0 needs 0F0, which ends at tick 1 (3 more broken)")
    # under given costs too: the drawn times are no cost's doing
    res = time_table(_doc(EARLY), "F=1,B=2", text_table=True)
    assert "give --costs" not in table_text(res, table=False)
    assert "the drawn times break a dependency" in table_text(res, table=False)


def test_a_drawn_table_that_is_the_engines_is_still_identical(tmp_path: Path):
    (tmp_path / "good.txt").write_text(GOOD)
    out = subprocess.run(
        [sys.executable, "-m", "ppverify", "show", "good.txt", "--no-table"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.rstrip().endswith("table in the file: identical to the slot engine's table")
