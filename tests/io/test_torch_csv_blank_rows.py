"""A row without any action in a PyTorch CSV (a blank line) is refused at its row: read as a rank
without a stage it rescaled every cost to a share of 3 ranks over 2 stages, so 1F1B at p = 2,
m = 2 with F = 1, B = 2 timed 13.5, and with two blank lines 18, instead of (m + p - 1)(F + B) = 9."""

from __future__ import annotations

import pytest

from ppverify.cli import main

ONE_F_ONE_B = "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n"


@pytest.mark.parametrize("tail, row", [("\n", 3), ("\n\n", 3), (",,\n", 3)])
def test_a_row_without_an_action_is_refused(tmp_path, capsys, tail, row):
    path = tmp_path / "s.csv"
    path.write_text(ONE_F_ONE_B + tail)
    assert main(["simulate", str(path), "--costs", "F=1,B=2", "--no-table"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"ppverify simulate: error: {path}: row {row} (rank {row - 1}): holds no action: each row is one rank's "
        "actions, and every rank of a pipeline runs a stage (a blank line? remove it)"
    )


def test_the_same_file_without_it_times_as_1f1b(tmp_path, capsys):
    path = tmp_path / "s.csv"
    path.write_text(ONE_F_ONE_B)
    assert main(["simulate", str(path), "--costs", "F=1,B=2", "--no-table"]) == 0
    assert "makespan      9\n" in capsys.readouterr().out  # (m + p - 1)(F + B) = 3 * 3
