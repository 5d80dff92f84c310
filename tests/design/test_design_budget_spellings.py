"""``--budgets`` spellings: the table names each budget as typed (docs/design.md: "the table still
names the budget given"), a budget named twice is refused also under two spellings (inf and none;
a number no device can fill and none), and a size without presets is refused without naming an
option design does not have."""

from __future__ import annotations

import pytest

from ppverify.cli import main

# p = 2, m = 4, F = 1, B = 2, linear: device 0 can hold all 4 microbatches (4 activations), so any
# budget >= 4 is unconstrained; 1F1B there takes (m + p - 1)(tF + tB) = 5 x 3 = 15, at peak p = 2
ARGS = ["design", "-p", "2", "-m", "4", "--costs", "F=1,B=2", "--placements", "linear", "--work-limit", "0.1"]


def _frontier_rows(text: str) -> list[list[str]]:
    lines = text.splitlines()
    start = lines.index("frontier") + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("  ") or not line.split()[0][0].isdigit():
            break
        rows.append(line.split())
    return rows


@pytest.mark.parametrize("typed", ["inf", "1e9", "INF"])
def test_the_table_names_the_budget_as_typed(typed, capsys):
    # it showed `none` for inf and `1e+09` for 1e9
    assert main([*ARGS, "--budgets", f"2,{typed}", "--no-progress"]) == 0
    rows = _frontier_rows(capsys.readouterr().out)
    # the unconstrained step is no faster than 1F1B's 15 at peak 2 (1F1B is optimal for F, B
    # unsplit: (m + p - 1)(tF + tB)), so the frontier is the budget-2 point alone or with it
    budgets = [r[6] for r in rows]  # peak, time, bound, gap, %, placement, budget, ...
    assert budgets[0] == "2" and set(budgets) <= {"2", typed}
    assert main([*ARGS, "--budgets", f"1,{typed}", "--no-progress"]) == 0
    rows = _frontier_rows(capsys.readouterr().out)
    assert [r[6] for r in rows] == ["1", typed]  # budget 1 is slower than 15: both on the frontier
    assert rows[1][1] == "15"


@pytest.mark.parametrize(
    "budgets, message",
    [
        ("inf,none", "inf and none are the same budget: unconstrained"),  # was "none is named twice"
        ("none,inf", "none and inf are the same budget: unconstrained"),
        ("1e9,none", "1e9 and none are the same budget here: unconstrained (no device can hold more than 4 "),
        ("4,none", "4 and none are the same budget here: unconstrained"),  # device 0 holds at most m = 4
        ("5,1e9", "5 and 1e9 are the same budget here: unconstrained"),
        ("inf,inf", "inf is named twice"),
        ("2,2.0", "2 is named twice"),
    ],
)
def test_one_budget_under_two_spellings_is_refused(budgets, message, capsys):
    assert main([*ARGS, "--budgets", budgets, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"ppverify design: error: parameter --budgets={budgets}: {message}")
    assert "(each budget is one point per placement)" in err and "\n" not in err


def test_a_budget_below_what_a_device_can_hold_is_its_own_point(capsys):
    # 3 < 4: a real cap beside none, both searched
    assert main([*ARGS, "--budgets", "3,none", "--no-progress", "--json"]) == 0
    import json

    points = json.loads(capsys.readouterr().out)["points"]
    assert [q["budget"] for q in points] == [3.0, None]


def test_a_size_without_presets_names_no_memory_model_option(capsys):
    # design has no --memory-model: the message said "(and no --memory-model with layers=L gives bytes)"
    assert main([*ARGS, "--budgets", "8GiB", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--memory-model" not in err and "\n" not in err
    assert err.startswith("ppverify design: error: parameter --budgets=8GiB: a size needs presets (--system/--model)")
    assert err.endswith(
        "this one (--costs) counts activations: give a number of activations (one microbatch on a device's share of layers)"
    )
