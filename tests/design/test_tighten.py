"""More work on the frontier's bounds after the points (``ppverify.design.tighten``): a raised
bound never exceeds the optimum (plain CP-SAT proves it here), points that are proven or within
the gap limit are left alone, a raised bound holds for the smaller budgets of its placement, and
``design --bound-work`` and ``--pair-work`` are recorded, checked and can be switched off; it runs on the design's
executor and gives the same result there."""

from __future__ import annotations

import json
import math
from typing import cast

import pytest

from ppverify.cli import main
from ppverify.design.points import Point, point_problem
from ppverify.design.run import DesignRequest
from ppverify.design.spec import Limits, setups
from ppverify.design.tighten import tighten_front, tighten_point
from ppverify.optimize import optimize
from ppverify.optimize.problem import instance
from ppverify.systems.preset_models import PresetSettings

COSTS = PresetSettings(costs="F=1.3,I=1.1,W=0.7", comm_delay=0.3)


def _optimum(setup, budget: float, m: int) -> float:
    """The true optimum by plain CP-SAT (none of ppverify's bounds or starts in its model)."""
    pr = point_problem(setup, budget, m)
    res = optimize(
        pr, time_limit=120, workers=1, use_families=False, symmetry=False, redundant_bounds=False, hints=False,
        local_search=False, work_limit=60.0,
    )  # fmt: skip
    assert res.status == "OPTIMAL"
    return cast(float, res.objective)  # an optimal result has its objective


def test_a_raised_bound_is_at_most_the_optimum_and_says_where_it_comes_from():
    s = setups("v", 2, 4, COSTS)[0]
    best = _optimum(s, 1.0, 4)
    weak = Point("v", 1.0, "FEASIBLE", best + 2.0, 0.0, 1.0, None, None, note="from the search")
    q = tighten_point(weak, s, 4, True, Limits(5.0), 60.0)
    assert 0.0 < q.bound <= best + 1e-9
    assert q.time == weak.time and q.status == "FEASIBLE"
    assert q.note.startswith("from the search; bound raised from 0 to ") and "device" in q.note
    # as optimize would have it: the bound in whole ticks of the instance
    tick = instance(point_problem(s, 1.0, 4)).tick
    assert abs(q.bound / tick - round(q.bound / tick)) < 1e-6


def test_two_devices_together_raise_the_bound_above_one_and_never_above_the_optimum():
    # V, p = 2, m = 4 at 1.5: device 0 alone misses how busy device 1 keeps the turn
    s = setups("v", 2, 4, COSTS)[0]
    best = _optimum(s, 1.5, 4)
    weak = Point("v", 1.5, "FEASIBLE", best + 2.0, 0.0, 1.5, None, None)
    one = tighten_point(weak, s, 4, True, Limits(5.0, pair_work=0.0), 60.0)
    two = tighten_point(weak, s, 4, True, Limits(5.0, pair_work=5.0), 60.0)
    assert 0.0 < one.bound < two.bound <= best + 1e-9
    assert "relaxation of device " in one.note and "relaxation of devices 0 and 1" in two.note


def test_a_bound_that_meets_the_schedule_makes_the_point_optimal():
    s = setups("v", 2, 4, COSTS)[0]
    best = _optimum(s, 1.0, 4)
    q = tighten_point(Point("v", 1.0, "FEASIBLE", best, 0.0, 1.0, None, None), s, 4, True, Limits(20.0), 60.0)
    assert q.bound <= best + 1e-9
    if q.bound >= best - 1e-9:  # the relaxation of one device proves it here (no promise in general)
        assert q.status == "OPTIMAL"


def test_proven_within_the_gap_or_switched_off_points_are_left_alone():
    s = setups("v", 2, 4, COSTS)[0]
    proven = Point("v", 1.0, "OPTIMAL", 30.0, 30.0, 1.0, None, None)
    close = Point("v", 1.0, "FEASIBLE", 30.0, 29.8, 1.0, None, None)  # 0.67 %: within 1 %
    none_found = Point("v", 1.0, "UNKNOWN", None, 3.0, None, None, None)
    weak = Point("v", 1.0, "FEASIBLE", 30.0, 0.0, 1.0, None, None)
    for pt in (proven, close, none_found):
        assert tighten_point(pt, s, 4, True, Limits(5.0), 60.0) is pt
    assert tighten_point(weak, s, 4, True, Limits(5.0, bound_work=0), 60.0) is weak
    assert tighten_point(weak, s, 4, True, Limits(5.0), 0.0) is weak  # the ceiling has passed


def test_a_frontier_bound_raised_holds_for_the_smaller_budgets():
    s = setups("v", 2, 4, COSTS)
    best = _optimum(s[0], 1.5, 4)
    small = Point("v", 1.0, "UNKNOWN", None, 0.0, None, None, None)  # no schedule: not on the frontier
    large = Point("v", 1.5, "FEASIBLE", best + 1.0, 0.0, 1.5, None, None)
    seen = []
    out, interrupted = tighten_front([small, large], s, 4, True, Limits(5.0), report=lambda *a: seen.append(a))
    assert not interrupted and [(n, total) for n, total, *_ in seen] == [(1, 1)]
    assert 0.0 < out[1].bound <= best + 1e-9
    assert out[0].bound == out[1].bound  # a bound under budget 1.5 holds under 1


def test_design_records_the_bound_work_and_refuses_a_negative_one(capsys):
    args = ["design", "-p", "2", "-m", "2", "--placements", "linear", "--costs", "F=1,B=2", "--budgets", "2"]
    assert main([*args, "--work-limit", "2", "--json", "--no-progress"]) == 0
    assert json.loads(capsys.readouterr().out)["design"]["bound_work"] == 2.0  # the work limit
    assert main([*args, "--work-limit", "2", "--bound-work", "0", "--json", "--no-progress"]) == 0
    assert json.loads(capsys.readouterr().out)["design"]["bound_work"] == 0.0
    assert main([*args, "--work-limit", "2", "--json", "--no-progress"]) == 0
    assert json.loads(capsys.readouterr().out)["design"]["pair_work"] == 30.0  # the two-device bound's default
    assert main([*args, "--work-limit", "2", "--pair-work", "0", "--json", "--no-progress"]) == 0
    assert json.loads(capsys.readouterr().out)["design"]["pair_work"] == 0.0
    for flag in ("--bound-work", "--pair-work"):
        for bad in ("-1", "nan", "inf"):
            assert main([*args, flag, bad]) == 2
            err = capsys.readouterr().err.strip().splitlines()
            assert len(err) == 1 and flag[2:] in err[0], err
    assert not math.isnan(Limits(1.0).tighten_work)


def _two_raised() -> DesignRequest:
    """Loop of 2, p = 3, m = 9: at a search of 0.05 deterministic s the bounds of budgets 2 and
    2.5 are short of what the bound work proves (no gap limit, so no point is left alone for being
    close; on V the slot cycle of ``optimize.stagepair`` lets the points' own relaxation prove what
    the bound work would)."""
    return DesignRequest(3, 9, "loop:2", "2,2.5", COSTS, Limits(0.05, gap=None, bound_work=3.0, search_work=0.0))


def test_the_bound_work_gives_the_same_result_on_a_process_pool(same_result_on):
    alone = same_result_on("pool", _two_raised())
    assert sum("design --bound-work" in q.get("note", "") for q in alone["points"]) == 2


@pytest.mark.slow
def test_the_bound_work_gives_the_same_result_on_a_ray_cluster(same_result_on):
    same_result_on("ray", _two_raised())
