"""The first line of ``design``'s text names the costs the run used: without ``--costs`` the
abstract default ``F=1,B=2,I=1,W=1`` (``--costs``' help), not "unit slots", which
core/closed_form.py defines as every op lasting 1."""

from __future__ import annotations

from ppverify.cli import main


def test_the_default_costs_are_named(capsys) -> None:
    argv = ["design", "-p", "2", "-m", "2", "--placements", "linear", "--work-limit", "1", "--no-progress"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("design     p=2 m=2  costs F=1,B=2,I=1,W=1  comm none  backward full")
    # B = 2 indeed: 1F1B takes (m + p - 1)(tF + tB) = 3 x 3 = 9 (at unit slots it would be 3 x 2 = 6)
    (row,) = [line.split() for line in lines if line.startswith("  1f1b ")]
    assert row[3] == "9"


def test_given_costs_are_named_as_given(capsys) -> None:
    argv = ["design", "-p", "2", "-m", "2", "--placements", "linear", "--costs", "F=1,B=3"]
    assert main([*argv, "--work-limit", "1", "--no-progress"]) == 0
    assert "  costs F=1,B=3  " in capsys.readouterr().out.splitlines()[0]
