"""The wall-clock ceiling of a solve: its default covers what CP-SAT's work count leaves out, and a
run the clock did cut says so (in ``optimize``'s solver note, and in compare's ``optimum`` row)."""

from __future__ import annotations

import time

import pytest

import ppverify.optimize as opt
from ppverify.compare.optimum import solve_placement, wall_limit
from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.placement import placement_from_text
from ppverify.optimize.deadline import Deadline
from ppverify.optimize.problem import Problem
from ppverify.optimize.solver_run import WALL_ALLOWANCE, WALL_FACTOR, run_limits, wall_ceiling
from ppverify.schedules import build


def started_long_ago() -> Deadline:
    # a 100 s deadline that started 60 s ago: the local search's half (50 s) has passed, the
    # starting schedules' 80 % and the search's 90 % have not, so the clock cuts the local search
    # and nothing else, on any machine
    return Deadline(time.monotonic() + 40.0, 100.0)


def test_the_default_ceiling_is_four_times_the_work_plus_the_documented_allowance():
    # docs/optimization.md: "four times the work limit plus 30 s"
    assert (WALL_FACTOR, WALL_ALLOWANCE) == (4.0, 30.0)
    assert wall_ceiling(0.2) == pytest.approx(4 * 0.2 + 30)  # 30.8
    assert run_limits() == (60.0, 4 * 60 + 30)  # 270
    assert run_limits(None, 1.0) == (1.0, 4 * 1 + 30)  # 34: optimize --work-limit 1
    assert run_limits(10.0) == (10.0, 10.0)  # a --time-limit given is the ceiling, as before
    for work in (0.01, 0.2, 1.0, 60.0):
        assert wall_limit(work) >= 4 * work + 30  # compare's and sweep's optimum level


def test_wall_factor_still_scales_the_counted_part(monkeypatch):
    monkeypatch.setenv("PPVERIFY_WALL_FACTOR", "50")
    assert wall_limit(0.2) == pytest.approx(50 * 0.2 + 30)  # 40


def test_a_run_the_clock_cut_is_not_called_deterministic():
    # V, p = 2, m = 4, F = I = W = 1, delay 1, cap 1.5: the start is not proven, so the local
    # search runs, past its half of the deadline
    pl = placement_from_text("v", 2)
    pr = Problem(pl, 4, CostModel.abstract(pl, F=1, I=1, W=1), FixedDelay(1), split=True, memory_cap=1.5)
    r = opt.optimize(pr, time_limit=100, work_limit=0.2, workers=2, deterministic=True, deadline=started_long_ago())
    assert r.solver["wall_limited"] == "local search"
    assert r.solver["deterministic"] is False
    uncut = opt.optimize(pr, time_limit=100, work_limit=0.2, workers=2, deterministic=True)
    assert "wall_limited" not in uncut.solver and uncut.solver["deterministic"] is True


def test_a_cut_solve_makes_a_row_that_says_so(monkeypatch):
    real = opt.optimize

    def cut_optimize(problem, **kw):
        return real(problem, **kw, deadline=started_long_ago())

    monkeypatch.setattr(opt, "optimize", cut_optimize)
    s = build("zbv", p=2, m=4)
    costs = CostModel.abstract(s.placement, F=1, I=1, W=1)
    row = solve_placement(s, costs, FixedDelay(1), 0.2, 1.5)
    assert row.makespan is not None  # a schedule was found, and the row keeps it
    assert row.note.startswith("wall-clock limit reached in: local search")
    assert row.exact is False
    monkeypatch.setattr(opt, "optimize", real)
    row = solve_placement(s, costs, FixedDelay(1), 0.2, 1.5)
    assert row.note == "" and row.exact is True


def test_a_clock_the_user_did_not_set_is_named_with_its_formula(capsys, monkeypatch):
    # with the allowance at 0 the ceiling of --work-limit 0.0125 is 4 x 0.0125 = 0.05 s, which cuts
    # p = 64, m = 1024 before any schedule (tests/optimize/test_optimize_deadline.py); the error
    # names the default and how it was made, not a --time-limit the user never gave
    from ppverify.cli import main
    from ppverify.optimize import solver_run

    monkeypatch.setattr(solver_run, "WALL_ALLOWANCE", 0.0)
    argv = ["optimize", "--placement", "linear", "-p", "64", "-m", "1024", "--work-limit", "0.0125", "--no-chart"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("ppverify optimize: error: --time-limit (default 4 x --work-limit 0.0125 + 0 s) 0.05: ")
