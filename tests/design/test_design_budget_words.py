"""``--budgets`` refusals name the option as typed and keep to the limits of every number in an
option (docs/limits.md: finite and at most 1e15)."""

from __future__ import annotations

import pytest

from ppverify.cli import main

ARGS = ["design", "-p", "2", "-m", "4", "--costs", "F=1,B=2", "--placements", "linear", "--work-limit", "0.1"]


@pytest.mark.parametrize("budget", ["1e16", "1e300"])
def test_a_budget_above_1e15_is_refused_as_every_number_is(budget, capsys):
    # before, 1e300 was searched as budget 1e+300 (no cap at all): `none` says that
    assert main([*ARGS, "--budgets", f"2,{budget}", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err
        == f"ppverify design: error: parameter --budgets=2,{budget}: {budget} is above 1e+15 activations: write none"
    )


def test_one_budget_of_a_list_below_the_least_feasible_is_named_as_typed(capsys):
    # one stage per device, F = 1, B = 2: the least feasible budget is one activation; 0.5 of the
    # list 0.5,2 is the item refused, named under the option typed (it read `parameter budgets=0.5`)
    assert main([*ARGS, "--budgets", "0.5,2", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ppverify design: error: parameter --budgets=0.5: below the least feasible budget 1 ")


def test_no_pair_work_is_recorded_when_no_bound_work_runs(capsys):
    # the two-device bound runs inside the bound work: with --bound-work 0 none ran, and the JSON
    # said pair_work 30 (the default)
    import json

    assert main([*ARGS, "--budgets", "1,2", "--bound-work", "0", "--no-progress", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)["design"]
    assert (info["bound_work"], info["pair_work"]) == (0.0, 0.0)
