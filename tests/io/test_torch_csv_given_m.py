"""A PyTorch CSV read with ``-m`` (:func:`ppverify.io.torch_csv.parse_file_rows`, what a command
that takes a schedule file reads) looks at ``-m`` before any gap in the file's microbatches, as a
text table does: the file naming microbatches 0, 1 and 3 read with ``-m 4`` used to be refused for
its gap ("no cell names microbatch 2: a typo? ... give m: -m 4"), the very ``-m`` it was given."""

from __future__ import annotations

import pytest

from ppverify.core.dag import structural_problems
from ppverify.core.errors import ParameterError, ScheduleFileError
from ppverify.io.table_schedule import schedule_from_programs
from ppverify.io.table_text import programs_from_cells
from ppverify.io.torch_csv import MicrobatchesBeyondFile, parse_file_rows, parse_rows

# one rank, one stage: microbatches 0, 1 and 3; nothing names microbatch 2
GAP = [["0F0", "0F1", "0F3", "0B0", "0B1", "0B3"]]
# microbatches 0..3 and 5; nothing names microbatch 4
FIVE = [["0F0", "0F1", "0F2", "0F3", "0F5", "0B0", "0B1", "0B2", "0B3", "0B5"]]
# microbatches 0..5, no gap
SIX = [[f"0F{k}" for k in range(6)] + [f"0B{k}" for k in range(6)]]


def _refusal(rows, m, source="s.csv"):
    with pytest.raises(ScheduleFileError) as exc:
        parse_file_rows(rows, source, m)
    return exc.value


def test_m_as_large_as_the_file_reads_a_gap_as_missing_ops():
    # -m 4 over microbatches 0, 1, 3: the step has microbatches 0..3, and microbatch 2's F and B
    # (one stage) are its only missing ops
    s = parse_file_rows(GAP, "gap.csv", 4)
    assert s.m == 4
    problems = structural_problems(s)
    assert len(problems) == 2, problems
    assert any("0F2 is missing" in p for p in problems) and any("0B2 is missing" in p for p in problems)


def test_without_m_the_gap_is_still_refused_as_a_typo():
    err = _refusal(GAP, None, "gap.csv")
    assert err.location == "row 1 (rank 0), column 3"  # 0F3, the first action beyond the gap
    assert "but no cell names microbatch 2: a typo?" in err.rule


def test_m_below_the_file_names_the_first_cell_beyond_it_not_the_gap():
    # -m 3 over microbatches 0, 1, 3: 0F3 (column 3) is beyond microbatches 0..2; read whole the
    # file has a gap, which leaving -m out would refuse, so no "leave -m out" advice
    err = _refusal(GAP, 3)
    assert (err.location, err.rule) == (
        "row 1 (rank 0), column 3",
        "0F3 names microbatch 3, outside the m=3 given (microbatches 0..2)",
    )


def test_a_microbatch_beyond_m_past_a_gap_is_named_as_beyond_m():
    # -m 4 over microbatches 0..3 and 5: 0F5 (column 5) is beyond microbatches 0..3; the gap at 4
    # is not what is reported
    err = _refusal(FIVE, 4)
    assert (err.location, err.rule) == (
        "row 1 (rank 0), column 5",
        "0F5 names microbatch 5, outside the m=4 given (microbatches 0..3)",
    )


def test_m_below_a_file_without_gap_says_it_holds_more():
    # -m 4 over microbatches 0..5: 0F4 (column 5) first; read whole it holds 6 microbatches
    err = _refusal(SIX, 4)
    assert err.location == "row 1 (rank 0), column 5"
    assert err.rule == (
        "0F4 names microbatch 4, outside the m=4 given (microbatches 0..3); "
        "read whole, the file holds m=6: leave -m out to take it so"
    )


def test_a_stage_gap_drops_the_leave_m_out_advice():
    # microbatches 0..2 without gap, but stages 0 and 5 only: read whole, the stage gap is refused,
    # so leaving -m out would not take the file either
    rows = [["0F0", "0F1", "0F2", "0B0", "0B1", "0B2"], ["5F0"]]
    err = _refusal(rows, 2)
    assert err.rule == "0F2 names microbatch 2, outside the m=2 given (microbatches 0..1)"


@pytest.mark.parametrize("rows, m", [(GAP, 3), (FIVE, 4), (SIX, 4)])
def test_the_wording_is_the_text_tables(rows, m):
    # the same cells as a table with -m: the same rule, "the file" where a table says "the table"
    with pytest.raises(ScheduleFileError) as table:
        schedule_from_programs(programs_from_cells(rows), m=m, path="t.txt")
    assert _refusal(rows, m).rule == table.value.rule.replace("the table holds", "the file holds")


def test_m_above_the_file_is_read_at_that_m_for_verify_and_refused_for_the_rest():
    # was: read at the file's own 4 (so that a caller refused -m 6 as one the file ignores), which
    # made verify refuse an -m that import reads (missing ops reported, INVALID). Now the file read
    # at m=6 travels in the refusal: verify reports it, a command that runs the step refuses it.
    # GAP names microbatches 0, 1, 3 on one stage: at m=6, microbatches 2, 4, 5 have no op, so their
    # F and B are missing: 3 x 2 = 6 problems
    with pytest.raises(MicrobatchesBeyondFile) as exc:
        parse_file_rows(GAP, "gap.csv", 6)
    assert exc.value.schedule is not None and exc.value.schedule.m == 6
    missing = sorted(p.split()[1] for p in structural_problems(exc.value.schedule))
    assert missing == ["0B2", "0B4", "0B5", "0F2", "0F4", "0F5"]
    # the refusal keeps the old advice and names the verify command that reports the ops
    assert "gap.csv holds a schedule of m=4: leave -m out" in str(exc.value)
    assert "no cell names microbatches 4..5" in str(exc.value)
    assert "`ppverify verify gap.csv -m 6` names its missing ops" in str(exc.value)
    # an -m equal to the file's count reads it as before
    assert parse_file_rows(SIX, "six.csv", 6).m == 6


@pytest.mark.parametrize("m", [0, -1, True])
def test_m_below_one_is_refused_before_the_cells(m):
    # not "0F0 names microbatch 0, outside the m=0 given (microbatches 0..-1)"
    for read in (lambda: parse_file_rows(SIX, "s.csv", m), lambda: parse_rows(SIX, "s.csv", m=m, strict=True)):
        with pytest.raises(ParameterError, match="must be an integer >= 1"):
            read()


def test_import_says_what_verify_says_of_an_m_below_the_file(tmp_path, capsys):
    # import reads through load_csv (strict parse_rows), verify through parse_file_rows: -m 3 over
    # microbatches 0..3 (no gap) is refused at 0F3 by both, and both add that the file holds m=4
    from ppverify.cli import main

    path = tmp_path / "four.csv"
    path.write_text("0F0,0F1,0F2,0F3,0B0,0B1,0B2,0B3\n")
    lines = []
    for command in ("import", "verify"):
        assert main([command, str(path), "-m", "3"]) == 2
        lines.append(capsys.readouterr().err.strip().split(": error: ", 1)[1])
    expected = (
        f"{path}: row 1 (rank 0), column 4: 0F3 names microbatch 3, outside the m=3 given "
        "(microbatches 0..2); read whole, the file holds m=4: leave -m out to take it so"
    )
    assert lines == [expected, expected]
