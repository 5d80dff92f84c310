"""The library behind ``show`` (:mod:`ppverify.views.table_report`): a table against its family's
closed form, a file's stored table, and the costs a formula takes; values derived by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppverify.core.costs import CostModel
from ppverify.core.errors import ScheduleFileError
from ppverify.core.placement import linear
from ppverify.engines import run
from ppverify.io.json_format import ScheduleDocument, TableGrid
from ppverify.schedules import build
from ppverify.views.table_report import (
    UNKNOWN_COSTS,
    embedded_check,
    formula_contradicted,
    formula_report,
    placement_text,
    table_costs,
    table_json,
    table_text,
    time_table,
)


def test_gpipe_formula_against_the_table():
    # GPipe, p=4 m=4, F=1 B=2: (m+p-1)(F+B) = 21, bubble (p-1)/(m+p-1) = 3/7
    res = time_table(ScheduleDocument(build("gpipe", p=4, m=4)), "F=1,B=2")
    f = res.formula
    assert f["makespan"] == 21.0 and res.timeline.makespan == 21.0
    assert f["bubble_ratio"] == pytest.approx(3 / 7)
    assert f["agrees"] == {"makespan": True, "bubble_ratio": True, "peak_activations": True}
    assert not formula_contradicted(res)


@settings(max_examples=20, deadline=None)
@given(family=st.sampled_from(["gpipe", "1f1b", "zb-h1"]), p=st.integers(2, 5), extra=st.integers(0, 4))
def test_registered_formulas_are_never_contradicted_by_their_tables(family, p, extra):
    res = time_table(ScheduleDocument(build(family, p=p, m=p + extra)))
    assert res.formula is not None and "agrees" in res.formula
    assert not formula_contradicted(res)


def test_a_schedule_without_family_has_no_formula():
    s = build("gpipe", p=2, m=1)
    assert formula_report(s.__class__(s.placement, s.m, s.programs, s.pipe_of_mb), None, run(s)) is None


def test_costs_a_formula_takes():
    s = build("gpipe", p=2, m=2)
    unit = CostModel.unit(s.placement)
    assert table_costs(None, ScheduleDocument(s, costs=unit)) == (unit, None)
    abstract = CostModel.abstract(s.placement, F=1, B=3)
    costs, given = table_costs(None, ScheduleDocument(s, costs=abstract))
    assert costs == abstract and given["F"] == 1 and given["B"] == 3
    # hand-made costs whose label does not describe them: no formula can take them
    odd = replace(CostModel.abstract(s.placement, F=2, B=3), label="F=1,B=3")
    assert table_costs(None, ScheduleDocument(s, costs=odd))[1] == UNKNOWN_COSTS
    three = CostModel.unit(linear(3))
    with pytest.raises(ScheduleFileError, match="describes 3 stages; the placement has 2"):
        table_costs(None, ScheduleDocument(s, costs=three), "x.json")


def test_embedded_table_checks():
    s = build("gpipe", p=2, m=1)
    grid = TableGrid(1.0, (("0F0", None, None, "0B0"), (None, "1F0", "1B0", None)))
    assert embedded_check(ScheduleDocument(s), grid, True) is None
    same = ScheduleDocument(s, table=grid)
    assert embedded_check(same, grid, True) == {"checked": True, "matches": True}
    assert embedded_check(same, grid, False)["checked"] is False
    longer = TableGrid(2.0, grid.cells)
    assert embedded_check(same, longer, True)["first_difference"] == {"tick_length": [1.0, 2.0]}
    assert embedded_check(same, longer, True, text_table=True)["matches"] is True  # text tables: cells only


def test_json_and_text_of_a_timed_table():
    res = time_table(ScheduleDocument(build("gpipe", p=2, m=1)), "F=1,B=1", comm_delay=0.5)
    out = table_json(res)
    # each of the 4 ops has a cross-device input or output: 1 + 0.5 per column
    assert out["makespan"] == 6.0 and out["comm_delay_per_column"] == 0.5
    assert out["formula"] == {"unavailable": "communication is charged in the table; the formulas model none"}
    text = table_text(res, table=False)
    assert "communication 0.5 charged per column" in text
    assert placement_text(build("chimera", p=2, m=2)).startswith("bidirectional, 2 pipes, 2 stages on 2 devices")
    assert (out["tick"], out["ticks"]) == (1.5, 4)  # one column per op, 1 + 0.5 long
