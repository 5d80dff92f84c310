"""The grid writer of the text-table format (``ppverify.io.table_text.format_grid``), which needs
no engine: a grid written in either layout reads back as the same grid, and for a ``slot``
timeline the writer's own notion of where an action starts (its text changes) agrees with the
engine's op start ticks."""

from __future__ import annotations

import pytest

from ppverify.core.costs import CostModel
from ppverify.engines import run
from ppverify.engines.table import format_table, timeline_table
from ppverify.io.table_text import TableGrid, format_grid, read_text_table
from ppverify.schedules import families


def trimmed(grid: TableGrid) -> tuple[tuple[str | None, ...], ...]:
    out = []
    for row in grid.cells:
        row = list(row)
        while row and row[-1] is None:
            row.pop()
        out.append(tuple(row))
    return tuple(out)


def test_hand_written_grid_in_both_layouts():
    # one device: F for a tick, B for two; another: idle, then F, B for a tick each
    g = TableGrid(1.0, (("0F0", "0B0", "0B0"), (None, "1F0", "1B0")))
    assert format_grid(g).splitlines() == ["tick    0   1   2", "dev 0 0F0 0B0 0B0", "dev 1   . 1F0 1B0"]
    assert format_grid(g, "torch").splitlines() == [
        "        Rank 0 Rank 1",
        "Step 0: 0F0",
        "Step 1: 0B0    1F0",
        "Step 2: ~      1B0",
    ]
    with pytest.raises(ValueError, match="unknown table style 'wide'"):
        format_grid(g, "wide")


@pytest.mark.parametrize("style", ["paper", "torch"])
def test_every_family_grid_reads_back_and_matches_the_engine(style, buildable):
    n = 0
    for fam in families():
        for _p, _m, s in buildable(fam.name, ((2, 2), (4, 8))):
            tl = run(s, CostModel.abstract(s.placement, F=1, B=2), semantics="slot")
            grid = timeline_table(tl)
            text = format_grid(grid, style)
            assert text == format_table(tl, style)  # the engine's starts change nothing here
            _, back = read_text_table(text, "t.txt")
            assert back.cells == trimmed(grid)
            n += 1
    assert n >= len(families())


def test_the_slot_tick_takes_one_fraction_per_distinct_duration(monkeypatch):
    # issue 22 item 6: made per op, the fractions took minutes for show hanayo --waves 100000;
    # counted, not timed: hanayo with 50 waves has 800 ops and two durations (F, B)
    from ppverify.core.costs import CostModel
    from ppverify.engines import table
    from ppverify.schedules import build

    made: list[float] = []
    original = table._as_fraction
    monkeypatch.setattr(table, "_as_fraction", lambda x, kind="op": made.append(x) or original(x, kind))
    s = build("hanayo", p=2, m=2, waves=50)
    tl = table.slot_timeline(s, CostModel.abstract(s.placement, F=1, B=2))
    assert len(made) == len(set(made)) == 2
    # by hand: F and B of a stage are 1/100 and 2/100 of a device share (100 stages per device),
    # so the tick is 1/100
    assert tl.info.tick == pytest.approx(0.01)
