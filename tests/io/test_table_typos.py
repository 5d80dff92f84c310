"""A mistyped number in a text table is named at its cell, as a PyTorch CSV's is: the text line, the
cell's rank (PyTorch's grid, one line per step) or tick (paper layout, one line per device), the
action and the gap it opens, for stages and microbatches, inferred or given (``-m``,
``--placement``). A ``5F1`` typo used to read as six stages ("stage 3: no row holds an action of
stage 3") and a ``0F9`` as ten microbatches, seven of them missing.

Every expected message below is derived by hand from the table the test writes: line numbers count
the header as line 1; stages and microbatches seen are listed in the comments."""

from __future__ import annotations

import pickle

import pytest

from ppverify.cli import main
from ppverify.core.errors import ScheduleFileError
from ppverify.core.ops import compute_ops
from ppverify.io.table_text import parse_table, programs_from_cells, read_text_table, schedule_from_programs
from tests.io.test_table_text import TORCH_1F1B

# GPipe p=3 m=1 in PyTorch's grid; line 4 (Step 2) holds, under Rank 2, 5F0 where 2F0 belongs:
# stages seen 0, 1, 2 (2B0), 5, so 3..4 is the gap the 5F0 opens
STAGE_TYPO = """\
        Rank 0 Rank 1 Rank 2
Step 0: 0F0
Step 1:        1F0
Step 2:               5F0
Step 3:               2B0
Step 4:        1B0
Step 5: 0B0
"""

# GPipe p=2 m=3 in the paper layout (F = B = 1 tick); line 2 (dev 0), tick 2 holds 0F9 where 0F2
# belongs: microbatches seen 0, 1, 2 (1F2, 0B2...), 9, so 3..8 is the gap and m would be 10
MB_TYPO = """\
tick    0   1   2   3   4   5   6   7
dev 0 0F0 0F1 0F9   .   . 0B0 0B1 0B2
dev 1   . 1F0 1F1 1F2 1B0 1B1 1B2   .
"""

# 1F1B p=2 m=2, a valid grid: microbatches 0 and 1, the first 0F1 on line 3 (Step 1) under Rank 0
GRID = TORCH_1F1B


def _error(text: str, **kwargs) -> ScheduleFileError:
    with pytest.raises(ScheduleFileError) as err:
        parse_table(text, path="t.txt", **kwargs)
    return err.value


def _cli_error(capsys, tmp_path, command: str, text: str, *args: str) -> str:
    path = tmp_path / "t.txt"
    path.write_text(text)
    capsys.readouterr()
    assert main([command, str(path), *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"ppverify {command}: error: {path}: ")
    return err[len(f"ppverify {command}: error: {path}: ") :].rstrip("\n")


STAGE_GAP = (
    "line 4 (rank 2): 5F0 names stage 5, but no cell names stages 3..4: a typo? (if they are really "
    "absent, give the placement: --placement loop, v, wave or one rank per stage)"
)
MB_GAP = (
    "line 2 (tick 2): 0F9 names microbatch 9, but no cell names microbatches 3..8: a typo? (if they are "
    "really absent, give m: -m 10 reports their ops missing)"
)


def test_a_stage_typo_is_named_at_its_cell():
    err = _error(STAGE_TYPO)
    assert str(err) == "t.txt: " + STAGE_GAP


def test_a_microbatch_typo_is_named_at_its_cell():
    err = _error(MB_TYPO)
    assert str(err) == "t.txt: " + MB_GAP


@pytest.mark.parametrize("command", ["verify", "show", "simulate"])
def test_every_command_that_reads_a_table_names_the_cell(capsys, tmp_path, command):
    assert _cli_error(capsys, tmp_path, command, STAGE_TYPO) == STAGE_GAP
    assert _cli_error(capsys, tmp_path, command, MB_TYPO) == MB_GAP


def test_a_microbatch_beyond_a_given_m_is_named_and_says_what_the_table_holds(capsys, tmp_path):
    # GRID holds microbatches 0..1 (m = 2 read whole); -m 1 leaves only microbatch 0, and the first
    # cell beyond it, reading line by line, is 0F1 on line 3 under Rank 0
    want = (
        "line 3 (rank 0): 0F1 names microbatch 1, outside the m=1 given (microbatch 0); "
        "read whole, the table holds m=2: leave -m out to take it so"
    )
    assert _cli_error(capsys, tmp_path, "verify", GRID, "-m", "1") == want
    assert _cli_error(capsys, tmp_path, "show", GRID, "-m", "1") == want
    assert str(_error(GRID, m=1)) == "t.txt: " + want


def test_beyond_a_given_m_with_a_gap_does_not_advise_leaving_m_out():
    # read whole, MB_TYPO has the 3..8 gap (refused in turn), so no "leave -m out" advice
    err = _error(MB_TYPO, m=3)
    assert str(err) == "t.txt: line 2 (tick 2): 0F9 names microbatch 9, outside the m=3 given (microbatches 0..2)"


def test_a_stage_beyond_a_given_placement_is_named(capsys, tmp_path):
    # linear over 3 rows holds stages 0..2
    want = "line 4 (rank 2): 5F0 names stage 5, outside the 3 stages of placement linear (stages 0..2)"
    assert _cli_error(capsys, tmp_path, "verify", STAGE_TYPO, "--placement", "linear") == want


def test_the_first_cell_in_reading_order_is_named():
    # two typos: 7B0 on line 3 under Rank 1, 9F0 on line 4 under Rank 0; stages seen 0, 7, 9, so
    # the gap 1..6 is below both. PyTorch's grid reads step by step: line 3's 7B0 comes first,
    # although rank 0's row of cells holds the 9F0
    text = "        Rank 0 Rank 1\nStep 0: 0F0\nStep 1:        7B0\nStep 2: 9F0\n"
    assert _error(text).location == "line 3 (rank 1)"
    # the paper layout reads device by device: dev 0's row (line 2) comes first, its 9F0 at tick 2,
    # before dev 1's 7F0 at tick 0
    paper = "tick 0 1 2\ndev 0 0F0 . 9F0\ndev 1 7F0 . .\n"
    assert _error(paper).location == "line 2 (tick 2)"


def test_an_action_over_several_cells_is_named_at_its_first():
    # 0F9 spans ticks 1 and 2 of dev 0 (paper) and steps 1 and 2 of rank 0 (torch: ~ continues it)
    assert _error("tick 0 1 2 3\ndev 0 0F0 0F9 0F9 0B0\n").location == "line 2 (tick 1)"
    torch = "        Rank 0\nStep 0: 0F0\nStep 1: 0F9\nStep 2: ~\nStep 3: 0B0\n"
    assert _error(torch).location == "line 3 (rank 0)"


def test_counts_that_are_given_leave_gaps_to_the_structural_check(capsys, tmp_path):
    # -m 3 says microbatch 1 really is absent (its ops are reported missing, not a typo);
    # --placement v says stages 0..3 on 2 rows, stage 2 absent: both load
    gap_mb = "tick 0 1 2 3\ndev 0 0F0 0F2 0B0 0B2\n"
    s = parse_table(gap_mb, m=3)
    assert s.m == 3 and sorted(op.mb for op in compute_ops(s.programs[0])) == [0, 0, 2, 2]
    from ppverify.core.placement import placement_from_text

    gap_stage = "tick 0 1 2 3\ndev 0 0F0 3F0 3B0 0B0\ndev 1 1F0 . . 1B0\n"
    assert parse_table(gap_stage, placement_from_text("v", 2)).placement.num_stages == 4
    path = tmp_path / "gap.txt"
    path.write_text(gap_mb)
    capsys.readouterr()
    assert main(["verify", str(path), "-m", "3"]) == 1  # loads; INVALID: 0F1 and 0B1 missing
    assert "op 0F1 is missing" in capsys.readouterr().out


def test_valid_tables_still_read_by_every_command(capsys, tmp_path):
    path = tmp_path / "g.txt"
    path.write_text(GRID)
    for argv in (["verify", str(path)], ["show", str(path)], ["simulate", str(path)]):
        capsys.readouterr()
        assert main(argv) == 0, argv
    # 1F1B p=2 m=2 read back: every op once, microbatches 0..1
    assert parse_table(GRID).m == 2


def test_programs_not_read_from_text_are_named_by_device_and_slot():
    # no text lines to name: device 0's second slot (index 1) holds the 0F9
    with pytest.raises(ScheduleFileError, match=r"^<table>: device 0, slot 1: 0F9 names microbatch 9, but no cell"):
        schedule_from_programs(programs_from_cells([["0F0", "0F9"]]))


def test_the_schedule_holds_plain_programs():
    # the located programs are for reading; the schedule (pickled to worker processes) keeps tuples
    programs, _ = read_text_table(GRID)
    s = schedule_from_programs(programs)
    assert type(s.programs) is tuple
    assert pickle.loads(pickle.dumps(s)).programs == s.programs
    back = pickle.loads(pickle.dumps(programs))
    assert back == programs and back.located == programs.located
