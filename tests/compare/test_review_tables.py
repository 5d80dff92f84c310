"""What a newcomer's tour of ``compare``, ``show`` and ``simulate`` found: numbers printed in a
form that hid them, a bound printed as if exact, a column without its unit, an error that did not
name its option. Every expected value is derived by hand in the comment beside it."""

from __future__ import annotations

import json

import pytest

from ppverify.cli import main
from ppverify.compare.table import fmt_time
from ppverify.views.table_report import exact_number


def _table_rows(out: str) -> dict[str, list[str]]:
    """The cells of each schedule row of one printed compare table, by schedule name."""
    rows: dict[str, list[str]] = {}
    lines = out.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("--")) + 1  # below the header rule
    for line in lines[start:]:
        if not line.strip():  # the table ends at the first blank line
            break
        cells = [c.strip() for c in line.split("  ") if c.strip()]
        rows[cells[0]] = cells[1:]
    return rows


def test_a_long_step_is_printed_whole_not_in_scientific_notation(capsys):
    # 1F1B, p=2, m=5000, F=1, B=2, no communication: (m+p-1)(F+B) = 5001 * 3 = 15003 units;
    # the table printed it as 1.5e+04, hiding the last three digits
    argv = ["compare", "--schedules", "1f1b", "--costs", "F=1,B=2", "-p", "2", "-m", "5000"]
    assert main([*argv, "--levels", "formula", "--no-verify", "--no-progress"]) == 0
    assert _table_rows(capsys.readouterr().out)["1f1b"][0] == "15003 (1)"


def test_a_half_unit_survives_in_the_compare_table(capsys):
    # interleaved 1F1B (v=2), p=2, m=3334, F=1, B=2 (Narayanan et al. SC'21): m(F+B) + (p-1)(F+B)/v
    # = 10002 + 1.5 = 10003.5; 4 significant digits in scientific notation printed 1e+04
    argv = ["compare", "--schedules", "interleaved-1f1b", "--costs", "F=1,B=2", "-p", "2", "-m", "3334"]
    assert main([*argv, "--levels", "formula", "--no-verify", "--no-progress"]) == 0
    assert _table_rows(capsys.readouterr().out)["interleaved-v2"][0] == "10003.5 (1)"


@pytest.mark.parametrize(
    "seconds,unit,text",
    [
        (49.4503, "s", "49450"),  # 49450.3 ms: five digits before the point, none dropped
        (0.09921, "s", "99.21"),  # below 10 s: 4 significant digits, as before
        (0.132, "s", "132"),  # trailing zeros dropped: 132.0 ms
        (215.25, "units", "215.25"),  # interleaved p=32 m=64 v=4: 192 + 31 * 3 / 4, exact
        (16.5, "units", "16.5"),
    ],
)
def test_fmt_time_keeps_every_digit_of_the_integer_part(seconds, unit, text):
    assert fmt_time(seconds, unit) == text


def test_show_prints_an_exact_makespan_not_four_digits(capsys):
    # interleaved 1F1B, p=2, m=40, v=4, F=1, B=2: m(F+B) + (p-1)(F+B)/v = 120 + 3/4 = 120.75;
    # show printed 120.8, a makespan the table (483 ticks of 1/4) does not have
    assert main(["show", "interleaved-1f1b", "-p", "2", "-m", "40", "--v", "4", "--no-table"]) == 0
    out = capsys.readouterr().out
    assert "makespan      120.75 units (483 ticks)" in out
    assert "makespan          120.75" in out  # the formula-vs-table row too


def test_show_never_prints_a_makespan_in_scientific_notation(capsys):
    # interleaved 1F1B (v=2), p=2, m=3334: 10003.5 as above; show printed 1e+04
    assert main(["show", "interleaved-1f1b", "-p", "2", "-m", "3334", "--no-table"]) == 0
    assert "makespan      10003.5 units (20007 ticks)" in capsys.readouterr().out


def test_exact_number_examples():
    # 1/3 to 6 significant digits; integers whole; 0.1 + 0.2 without its float noise
    assert [exact_number(x) for x in (1 / 3, 12.0, 0.1 + 0.2, 1234567.5)] == ["0.333333", "12", "0.3", "1234567.5"]


def test_a_formula_that_is_only_a_bound_marks_its_bubble_and_peak_too(capsys):
    # chimera-asym's closed form is bounds only (its makespan cell is ~30 (-)); with the formula as the
    # only level, the bubble and peak columns come from it as well and are bounds: marked ~ too
    argv = ["compare", "--schedules", "chimera,chimera-asym", "--costs", "F=1,B=2", "-p", "4", "-m", "8"]
    assert main([*argv, "--levels", "formula", "--no-verify", "--no-progress"]) == 0
    rows = _table_rows(capsys.readouterr().out)
    # Chimera's is exact: m(tF+tB) + (p-2)max(tF,tB) = 24 + 4 = 28, bubble (28-24)/28 = 0.143
    assert rows["chimera"] == ["28 (1)", "0.143", "5"]
    assert rows["chimera-asym"][0].startswith("~") and rows["chimera-asym"][1].startswith("~")
    assert rows["chimera-asym"][2].startswith("~")


def test_the_formula_legend_says_its_stages_are_uniform(capsys):
    # on the ideal system (no communication) the formula and the slot table differ for 1F1B, p=2,
    # m=4: the closed form (m+p-1)(F+B) takes each op at its mean cost over the stages, while the
    # table's steady state runs at the slowest stage's pace (gpt3-1.3b's last stage holds the head),
    # so the formula is the smaller; the legend said only "communication ignored"
    argv = ["compare", "--schedules", "1f1b", "--systems", "ideal", "--models", "gpt3-1.3b", "-p", "2", "-m", "4"]
    assert main([*argv, "--levels", "formula,slot", "--no-verify", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "formula    closed-form formula of the family on uniform stages" in out
    formula, slot = _table_rows(out)["1f1b"][:2]
    assert float(formula.split()[0]) < float(slot.split()[0])


def test_an_unknown_schedule_names_the_option_and_every_accepted_name(capsys):
    assert main(["compare", "--schedules", "1f1b,interleaved-v3", "--costs", "F=1", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    # the item of the list typed is named under the option typed (docs/limits.md: options as typed)
    assert err.startswith("ppverify compare: error: parameter --schedules=interleaved-v3: unknown schedule")
    # the labels compare itself accepts (interleaved-v2, hanayo-w1) were missing from the list
    assert "labels: gpipe, 1f1b, 1f1b-split, interleaved-v2" in err and "hanayo-w2" in err
    assert "families: 1f1b" in err and "interleaved-1f1b" in err


def test_simulate_names_the_units_of_its_abstract_device_table(capsys):
    # 1F1B, p=4, m=8, F=1, B=2, c=1: device 0 computes m(F+B) = 24 units of a 49-unit step
    argv = ["simulate", "1f1b", "-p", "4", "-m", "8", "--costs", "F=1,B=2", "--comm-delay", "1", "--no-table"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(line for line in lines if line.lstrip().startswith("device"))
    assert "busy (units)" in head and "exposed comm (units)" in head and "peak memory (activations)" in head
    row0 = next(line for line in lines if line.split()[:1] == ["0"])
    assert row0.split()[1:3] == ["24", "25"]


def test_the_legend_explains_only_the_columns_printed(capsys):
    # the optimum alone: one makespan column (1F1B and GPipe, p=2, m=2, F=1, B=2: both (m+p-1)(F+B) = 9
    # at their own peak 2, no faster order of those ops exists within it); the legend explained a
    # bubble column, a ~ mark, a rank change and a gap that this table does not have
    argv = ["compare", "--schedules", "1f1b,gpipe", "--costs", "F=1,B=2", "-p", "2", "-m", "2"]
    assert main([*argv, "--levels", "optimum", "--no-verify", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert _table_rows(out) == {"1f1b": ["9 (1)"], "gpipe": ["9 (1)"]}
    legend = out[out.index("Columns:") :]
    for absent in ("bubble", "~ (-)", "rank differs", "gap to bound", "peak act. (opt.)"):
        assert absent not in legend, absent
    assert "  lb " in legend  # the optimum's own mark stays


def test_the_full_legend_is_unchanged_with_every_level(capsys):
    # every level but the measured one: each mark and column of the table is explained once
    from ppverify.compare.table import format_legend

    legend = format_legend(["formula", "slot", "async", "contention", "optimum"])
    for present in ("  *  ", "  bubble ", "  ~ (-) ", "peak act. (opt.)", "gap to bound", "  lb ", "  Z3 "):
        assert present in legend, present


@pytest.mark.parametrize("flag,value", [("--time-limit", "5"), ("--max-opt-ops", "10")])
def test_a_solver_budget_without_the_optimum_level_is_refused_not_ignored(flag, value, capsys):
    # --memory-cap was refused without the optimum level; the solver's two budgets were dropped unread
    argv = ["compare", "--schedules", "1f1b", "--costs", "F=1", "-p", "2", "-m", "2", "--levels", "slot,async"]
    assert main([*argv, flag, value, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"parameter {flag}=" in err and "add optimum to --levels" in err
    # with the optimum level it is a budget like any other: 1F1B, p=2, m=2, F=1 (B=2 by default) at
    # its own peak 2 is optimal at (m+p-1)(F+B) = 9: device 1 starts at 1 and has 2F + 2B = 6 to do
    # (ends >= 7), then device 0's last backward, which needs device 1's, takes 2 more
    assert main([*argv[:-1], "optimum", flag, value, "--no-progress", "--no-verify"]) == 0
    assert _table_rows(capsys.readouterr().out)["1f1b"][0] == "9 (1)"


def test_torch_semantics_counts_steps_and_says_so(capsys):
    # PyTorch's unit-step simulator gives every action one step whatever the costs: its numbers are
    # steps, and the costs line said "F=1,B=2,I=1,W=1 (units)"; 1F1B, p=2, m=2: each device runs two
    # forwards and two backwards, 4 compute steps
    assert main(["simulate", "1f1b", "-p", "2", "-m", "2", "--semantics", "torch", "--no-table"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "costs         not used: every action one step" in lines
    head = next(line for line in lines if line.lstrip().startswith("device"))
    assert "busy (steps)" in head and "(units)" not in head
    assert [line.split()[1] for line in lines if line.split()[:1] in (["0"], ["1"])] == ["4", "4"]


def test_a_family_without_a_formula_rank_marks_no_rank_change_on_the_others(capsys):
    # p=4, m=2 < p, F=1, B=2 (I=W=1): ZB-H1's closed form is only a lower bound below m = p, so it has
    # no formula rank and 1F1B ranks 1 alone ((m+p-1)(F+B) = 15). In the table ZB-H1 is faster (its
    # backward chain runs on I alone: about 11 by hand), so 1F1B is second: no pair of schedules swapped
    # order, yet 1F1B's cell was starred as a rank change
    argv = ["compare", "--schedules", "zb-h1,1f1b", "--costs", "F=1,B=2", "-p", "4", "-m", "2"]
    assert main([*argv, "--levels", "formula,slot", "--no-verify", "--no-progress", "--json"]) == 0
    rows = {(r["schedule"], r["level"]): r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows[("1f1b", "formula")]["makespan"] == 15.0 and rows[("1f1b", "formula")]["rank"] == 1
    assert rows[("zb-h1", "formula")]["rank"] is None  # a bound: shown, not ranked
    assert rows[("1f1b", "slot")]["makespan"] == 15.0 and rows[("1f1b", "slot")]["rank"] == 2
    assert rows[("zb-h1", "slot")]["rank"] == 1
    assert rows[("1f1b", "slot")]["rank_change"] == "" and rows[("zb-h1", "slot")]["rank_change"] == ""


def test_a_schedule_outside_its_rules_everywhere_says_why(tmp_path, capsys, monkeypatch):
    # Chimera needs an even p, and a file is evaluated at its own p and m only: at p=3, m=3 neither
    # has a number, and their rows said "not applicable" and nothing more
    monkeypatch.chdir(tmp_path)
    assert main(["show", "1f1b", "-p", "2", "-m", "3", "--save", "mine.json", "--no-table"]) == 0
    capsys.readouterr()
    argv = ["compare", "--schedules", "mine.json,chimera,1f1b", "--costs", "F=1,B=2", "-p", "3", "-m", "3"]
    assert main([*argv, "--levels", "slot", "--no-verify", "--no-progress"]) == 0
    out = capsys.readouterr().out
    # 1F1B at p=3, m=3: (m+p-1)(F+B) = 5 * 3 = 15
    assert _table_rows(out) == {
        "mine": ["not applicable", "-", "-"],
        "chimera": ["not applicable", "-", "-"],
        "1f1b": ["15 (1)", "0.400", "3"],
    }
    assert "  mine is not applicable in any configuration: " in out and "p=2, m=3; evaluated only there" in out
    assert "  chimera is not applicable in any configuration: " in out and "even number of devices" in out
    assert "1f1b is not applicable" not in out


def test_simulate_slot_wraps_its_table_to_the_width_given(capsys):
    # 1F1B, p=2, m=2, F=1, B=2: (m+p-1)(F+B) = 9 ticks of 4 characters after a 5-character label:
    # 41 columns; --width 30 was ignored under slot (the table printed whole), now it is cut in blocks
    argv = ["simulate", "1f1b", "-p", "2", "-m", "2", "--costs", "F=1,B=2", "--semantics", "slot"]
    assert main([*argv, "--width", "30"]) == 0
    lines = capsys.readouterr().out.splitlines()
    ticks = [line for line in lines if line.startswith("tick")]
    assert len(ticks) >= 2 and all(len(line) <= 30 for line in lines if line.startswith(("tick", "dev")))
    assert "makespan      9" in lines
