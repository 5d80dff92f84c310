"""One mistyped stage or microbatch number in a PyTorch CSV is named at its cell (file, row and
rank, column, the action and the rule), not inferred into a larger step whose dozens of missing
ops hide it: ``5B1`` in a 3-stage file used to fail as "stage 3: no row holds an action of stage
3", and ``0F9`` in an m=3 file loaded as m=10 with 41 missing ops."""

from __future__ import annotations

import pytest

from ppverify.cli import main
from ppverify.core.dag import structural_problems
from ppverify.core.errors import ScheduleFileError
from ppverify.io.torch_csv import load_csv, parse_rows

# 1F1B, p=3, m=3, written by hand: rank r holds stage r
GOOD = ["0F0,0F1,0F2,0B0,0B1,0B2", "1F0,1F1,1B0,1F2,1B1,1B2", "2F0,2B0,2F1,2B1,2F2,2B2"]


def _csv(tmp_path, name, rows):
    path = tmp_path / name
    path.write_text("\n".join(rows) + "\n")
    return str(path)


def _one_line_error(argv, capsys):
    assert main(argv) == 2, argv
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


@pytest.fixture
def stage_typo(tmp_path):
    # rank 0, step 4 (column 5): 0B1 typed as 5B1
    return _csv(tmp_path, "x.csv", [GOOD[0].replace("0B1", "5B1"), *GOOD[1:]])


@pytest.fixture
def mb_typo(tmp_path):
    # rank 0, step 1 (column 2): 0F1 typed as 0F9
    return _csv(tmp_path, "y.csv", [GOOD[0].replace("0F1", "0F9"), *GOOD[1:]])


@pytest.mark.parametrize("command", ["verify", "simulate", "show"])
def test_a_stage_typo_is_named_at_its_cell(stage_typo, capsys, command):
    # stages named: 0, 1, 2 (the other cells) and 5; 3 and 4 nowhere, so the 5 is the suspect
    err = _one_line_error([command, stage_typo], capsys)
    assert "x.csv: row 1 (rank 0), column 5: 5B1 names stage 5, but no cell names stages 3..4: a typo?" in err
    assert "no row holds" not in err


@pytest.mark.parametrize("command", ["verify", "simulate", "show"])
def test_a_microbatch_typo_is_named_at_its_cell(mb_typo, capsys, command):
    # microbatches named: 0, 1, 2 (0B1 and the other rows keep 1) and 9; 3..8 nowhere
    err = _one_line_error([command, mb_typo], capsys)
    assert "y.csv: row 1 (rank 0), column 2: 0F9 names microbatch 9, but no cell names microbatches 3..8" in err
    assert "give m: -m 10 reports their ops missing" in err  # 9 + 1: how to read the gap as missing microbatches
    assert "missing (should run" not in err


def test_given_sizes_bound_the_cells(stage_typo, mb_typo, capsys):
    err = _one_line_error(["import", mb_typo, "-m", "3"], capsys)
    assert err.endswith(
        "y.csv: row 1 (rank 0), column 2: 0F9 names microbatch 9, outside the m=3 given (microbatches 0..2)"
    )
    err = _one_line_error(["import", stage_typo, "--stages", "3"], capsys)
    assert err.endswith("x.csv: row 1 (rank 0), column 5: 5B1 names stage 5, outside the 3 stages given (stages 0..2)")
    # linear on 3 rows names 3 stages, whatever the cells say
    err = _one_line_error(["import", stage_typo, "--placement", "linear"], capsys)
    assert err.endswith("5B1 names stage 5, outside the 3 stages of placement linear (stages 0..2)")


def test_a_typo_next_to_the_last_number_is_named_when_m_is_given(tmp_path, capsys):
    # 0F2 typed as 0F3: 3 follows 2, so no gap betrays it; -m 3 does. Read whole the file names
    # microbatches 0..3 without a gap (m=4), which the refusal adds, as verify's does
    path = _csv(tmp_path, "z.csv", [GOOD[0].replace("0F2", "0F3"), *GOOD[1:]])
    err = _one_line_error(["import", path, "-m", "3"], capsys)
    assert err.endswith(
        "z.csv: row 1 (rank 0), column 3: 0F3 names microbatch 3, outside the m=3 given (microbatches 0..2)"
        "; read whole, the file holds m=4: leave -m out to take it so"
    )


def test_a_gap_given_as_meant_is_checked_as_missing_ops(mb_typo, capsys):
    # -m 10: 3 stages x 10 microbatches x (F, B) = 60 ops required. Missing: microbatches 3..8
    # entirely (6 x 3 x 2 = 36), 0F1 (typed as 0F9), and microbatch 9's ops but 0F9 (5): 42
    assert main(["import", mb_typo, "-m", "10"]) == 1
    out = capsys.readouterr().out
    assert "structure     42 problem(s):" in out and "op 0F1 is missing (should run on device 0)" in out


def test_placement_v_names_its_stages(tmp_path):
    # V on 2 ranks: stages 0..3 (0 and 3 on rank 0); 4F0 is one past them
    path = _csv(tmp_path, "v.csv", ["0F0,4F0,3B0,0B0", "1F0,2F0,2B0,1B0"])
    with pytest.raises(
        ScheduleFileError, match=r"row 1 \(rank 0\), column 2: 4F0 names stage 4, outside the 4 stages of placement v"
    ):
        load_csv(path, placement="v")


def test_a_missing_microbatch_zero_is_named(tmp_path):
    # numbering from 1: microbatch 0 is named nowhere, 1 is the first cell beyond the gap
    with pytest.raises(
        ScheduleFileError,
        match=r"c\.csv: row 1 \(rank 0\), column 1: 0F1 names microbatch 1, but no cell names microbatch 0: a typo\? \(if it is really absent",
    ):
        parse_rows([["0F1", "0B1"]], "c.csv")


def test_a_typo_in_a_send_is_named_too(tmp_path):
    # GPipe p=2 m=1 lowered by hand; 0SEND_F0 typed as 0SEND_F7: microbatches 0 and 7, 1..6 nowhere
    rows = [["0F0", "0SEND_F7", "0RECV_B0", "0B0"], ["1RECV_F0", "1F0", "1B0", "1SEND_B0"]]
    with pytest.raises(
        ScheduleFileError,
        match=r"row 1 \(rank 0\), column 2: 0SEND_F7 names microbatch 7, but no cell names microbatches 1..6",
    ):
        parse_rows(rows, "s.csv")


def test_pytorchs_own_lists_keep_an_action_beyond_m_for_the_audit():
    # the library default (PyTorch's action lists, e.g. Schedule1F1B's F(m) bug) loads it and the
    # structural check names the op; a file (strict) is refused at the cell
    rows = [["0F0", "0F2", "0B0", "0B2"]]
    s = parse_rows(rows, m=2)
    assert structural_problems(s)[0] == "op 0F2 on device 0: stage must be in 0..0 and microbatch in 0..1"
    with pytest.raises(ScheduleFileError, match=r"column 2: 0F2 names microbatch 2, outside the m=2 given"):
        parse_rows(rows, "f.csv", m=2, strict=True)


def test_numbers_without_a_gap_load_as_before():
    s = parse_rows([r.split(",") for r in GOOD], "g.csv")
    assert (s.p, s.m, s.num_stages, structural_problems(s)) == (3, 3, 3, [])
