"""A design budget holds a peak exactly, as verify holds --memory-cap (report s62 hunt N, D1)."""

from __future__ import annotations

import json
from fractions import Fraction

from ppverify.cli import main
from ppverify.design.budgets import budget_holding, within_budget


def test_a_budget_below_a_peak_by_5e_10_does_not_hold_it():
    # 1F1B at p = 2 peaks at 2 activations on device 0; 1.9999999995 < 2, so it is over the budget
    assert not within_budget(Fraction(2), 1.9999999995)
    assert within_budget(Fraction(2), 2.0)


def test_a_budget_made_from_a_peak_in_bytes_holds_exactly_that_peak():
    # 17625128960 B over a unit of 6149513216 B: the least float budget holds it, a byte more it does not
    unit = 6149513216
    b = budget_holding(Fraction(17625128960, unit))
    assert within_budget(Fraction(17625128960, unit), b)
    assert not within_budget(Fraction(17625128961, unit), b)


def test_design_frontier_within_a_budget_just_below_1f1b_peak(capsys):
    # budget 1.9999999995 < 2: 1F1B (peak 2, time (m + p - 1)(F + B) = 5 * 3 = 15) is not within
    # it; the best schedule runs one microbatch at a time on device 0: m * (F + F + B + B) with
    # one unit each way between devices = 4 * (1 + 1 + 2 + 2) = 24, at peak 1 (optimize proves 24)
    rc = main(
        ["design", "-p", "2", "-m", "4", "--costs", "F=1,B=2", "--placements", "linear", "--budgets", "1.9999999995",
         "--backward", "full", "--work-limit", "1", "--bound-work", "0", "--search-work", "0", "--no-progress", "--json"]
    )  # fmt: skip
    assert rc == 0
    (row,) = json.loads(capsys.readouterr().out)["frontier"]
    assert (row["time"], row["bound"], row["peak"], row["verified"]) == (24.0, 24.0, 1.0, "valid")
    assert row["time"] >= row["bound"]


def test_design_preset_budget_one_byte_below_chimera_peak(capsys):
    # Chimera p=2 m=4 on dgx-h100/gpt3-1.3b peaks at 17,625,128,960 B (simulate --json); a budget one
    # byte less does not hold it, so the frontier's schedule there is not Chimera, and verifies valid
    rc = main(
        ["design", "-p", "2", "-m", "4", "--system", "dgx-h100", "--model", "gpt3-1.3b", "--placements",
         "bidirectional", "--budgets", "17625128959B", "--work-limit", "1", "--bound-work", "0", "--search-work",
         "0", "--no-progress", "--json"]
    )  # fmt: skip
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    for row in out["frontier"]:
        assert row["start"] != "chimera"
        assert row["verified"] == "valid"
