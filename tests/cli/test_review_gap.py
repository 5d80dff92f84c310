"""``ppverify gap`` bounds schedules of the family's own ops: a full backward (``B``) is never
compared with schedules that split it (``I`` then ``W``), nor the other way round. Expected values
are derived by hand in the comments."""

from __future__ import annotations

import pytest

from ppverify.cli import main


def _lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().out.splitlines()


def test_split_costs_do_not_turn_a_full_backward_family_into_split_ops(capsys):
    # 1F1B runs B, here I + W = 2 (F=1). Every schedule of those ops is at least (m+p-1)(F+B) = 21 at
    # p=4, m=4: the last device starts after the (p-1)F = 3 of the forward chain, has m(F+B) = 12 to
    # do, and the last backward then crosses p-1 = 3 devices at B = 2 each: 3 + 12 + 6 = 21, which 1F1B
    # reaches. gap said "bound 15, 28.57 %": the bound of schedules whose W can wait, other ops
    argv = ["gap", "1f1b", "-p", "4", "-m", "4", "--costs", "F=1,I=1,W=1", "--work-limit", "5"]
    assert main(argv) == 0
    out = _lines(capsys)
    assert out[2].startswith("bound        21  ") and out[3].startswith("gap to bound 0.00%")
    assert any(line.startswith("problem    linear placement, p=4, m=4, 4 stages, full backward") for line in out)


@pytest.mark.parametrize("family,flag,own", [("zb-h1", "full", "split"), ("1f1b", "split", "full")])
def test_a_backward_the_family_does_not_run_is_refused(family, flag, own, capsys):
    # zb-h1 --backward full printed "bound 15", then "optimum 21 (proven ...; the family is -6 above it)"
    assert main(["gap", family, "-p", "4", "-m", "4", "--backward", flag, "--work-limit", "5"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(f"ppverify gap: error: parameter --backward={flag}: ")
    assert f"whose backward is {own}" in err


def test_the_family_own_backward_is_accepted_when_named(capsys):
    # ZB-H1 at p=4, m=4, F=I=W=1 (B = I + W = 2): 3m + (p-1)(F+I-W) = 12 + 3 = 15 (Qi et al. ICLR'24),
    # and no schedule of these ops within its peak beats it: the last device starts at (p-1)F = 3 and
    # has m(F+I+W) = 12 to do
    assert main(["gap", "zb-h1", "-p", "4", "-m", "4", "--backward", "split", "--work-limit", "5"]) == 0
    out = _lines(capsys)
    assert out[2].startswith("bound        15  ") and out[3].startswith("gap to bound 0.00%")
