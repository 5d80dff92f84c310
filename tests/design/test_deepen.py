"""The second search of the frontier points above the gap limit (``design --search-work``,
``ppverify.design.deepen``): it reaches the optimum a short first search missed, keeps the better
schedule and the higher bound, leaves proven, skipped and schedule-less points alone, and is
recorded, checked and off by default.

By hand: linear placement, p = 4, m = 12, ``F = I = W = 1``, link delay 1. Device 3's first
forward cannot start before 3 (F + delay) = 6 and it has 12 x 3 = 36 units of work, so no
schedule ends before 42, at any budget; a schedule that ends at 42 within budget 7 (checked by
Z3) shows that it is the optimum there.
"""

from __future__ import annotations

import json
import math
import time

import pytest

from ppverify.cli import main
from ppverify.design.deepen import deepen_front, deepen_point, needs_more
from ppverify.design.points import Point
from ppverify.design.run import DesignRequest
from ppverify.design.spec import Limits, setups
from ppverify.systems.preset_models import PresetSettings

ARGS = ["design", "-p", "4", "-m", "12", "--costs", "F=1,I=1,W=1", "--comm-delay", "1", "--placements", "linear"]
BY_HAND = 3 * (1 + 1) + 12 * 3  # device 3's first forward, then its work


def _point(capsys, *extra: str) -> tuple[dict, dict]:
    argv = [*ARGS, "--budgets", "7", "--work-limit", "0.2", "--bound-work", "0", "--no-progress", "--json", *extra]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    # the fastest frontier point: the families of smaller peaks come before it
    return out["design"], out["frontier"][-1]


def test_a_second_search_reaches_the_optimum_the_first_missed(capsys):
    info, short = _point(capsys, "--search-work", "0")
    assert info["search_work"] == 0.0  # switched off
    assert short["time"] > BY_HAND and short["bound"] <= BY_HAND  # 0.2 deterministic s is not enough
    info, deep = _point(capsys, "--search-work", "5")
    assert info["search_work"] == 5.0
    assert deep["time"] == BY_HAND and deep["bound"] == BY_HAND and deep["status"] == "OPTIMAL"
    assert deep["verified"] == "valid" and deep["peak"] <= 7
    assert "searched again with 5 deterministic s (design --search-work)" in deep["note"]
    info, default = _point(capsys)
    assert info["search_work"] == 30.0  # on by default; it stops once the point is proven
    assert default["time"] == BY_HAND and default["status"] == "OPTIMAL"


def test_the_second_search_keeps_the_better_of_the_two_runs():
    s = setups("linear", 4, 12, PresetSettings(costs="F=1,I=1,W=1", comm_delay=1.0))[0]
    # a first run faster than any schedule (41 < 42) cannot be beaten: its schedule stays,
    # and the bound never falls below the one it had
    lucky = Point("linear", 7.0, "FEASIBLE", 41.0, 30.0, 7.0, "given", None, note="first")
    q = deepen_point(lucky, s, 12, True, Limits(0.2, search_work=2.0))
    assert q.time == 41.0 and q.start == "given" and 30.0 <= q.bound <= BY_HAND
    # a slower first run gives way to the search's schedule
    slow = Point("linear", 7.0, "FEASIBLE", 60.0, 30.0, 7.0, "given", None)
    q = deepen_point(slow, s, 12, True, Limits(0.2, search_work=5.0))
    assert q.time == BY_HAND and q.status == "OPTIMAL" and q.schedule is not None and q.start != "given"


def test_proven_skipped_schedule_less_or_switched_off_points_are_left_alone():
    s = setups("linear", 4, 12, PresetSettings(costs="F=1,I=1,W=1", comm_delay=1.0))[0]
    lim = Limits(0.2, search_work=5.0)
    proven = Point("linear", 7.0, "OPTIMAL", 42.0, 42.0, 7.0, None, None)
    close = Point("linear", 7.0, "FEASIBLE", 42.3, 42.0, 7.0, None, None)  # 0.71 %: within 1 %
    skipped = Point("linear", 7.0, "UNKNOWN", None, 42.0, None, None, None, skipped=True)
    none_found = Point("linear", 7.0, "UNKNOWN", None, 6.0, None, None, None)
    for pt in (proven, close, skipped, none_found):
        assert not needs_more(pt, lim) and deepen_point(pt, s, 12, True, lim) is pt
    slow = Point("linear", 7.0, "FEASIBLE", 60.0, 30.0, 7.0, None, None)
    assert deepen_point(slow, s, 12, True, Limits(0.2, search_work=0.0)) is slow  # search work 0: none
    # the run's ceiling has passed: nothing is started
    out, interrupted = deepen_front([slow], [s], 12, True, lim, until=time.time() - 1)
    assert out == [slow] and not interrupted


def test_a_negative_or_infinite_search_work_is_one_line_and_exit_2(capsys):
    for bad in ("-1", "nan", "inf"):
        assert main([*ARGS, "--budgets", "7", "--search-work", bad]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "search-work" in err[0], err
    assert not math.isnan(Limits(1.0).search_work)


def _two_searched() -> DesignRequest:
    # budgets 5 and 7 both end above the gap limit after 0.2 deterministic s, so both are searched
    # again (the test below checks it)
    settings = PresetSettings(costs="F=1,I=1,W=1", comm_delay=1.0)
    return DesignRequest(4, 12, "linear", "5,7", settings, Limits(0.2, bound_work=0, search_work=5.0))


def test_the_second_searches_give_the_same_result_on_a_process_pool(same_result_on):
    alone = same_result_on("pool", _two_searched())
    assert sum("design --search-work" in q.get("note", "") for q in alone["points"]) == 2


@pytest.mark.slow
def test_the_second_searches_give_the_same_result_on_a_ray_cluster(same_result_on):
    same_result_on("ray", _two_searched())
