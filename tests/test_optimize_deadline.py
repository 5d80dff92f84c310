"""``optimize --time-limit`` bounds the whole run (model building, bounds, starting schedules,
local search, CP-SAT): a limit-honouring property measured around the library call. About 6 s on
two cores.
"""

from __future__ import annotations

import time

import pytest

from ppverify.cli import main
from ppverify.cli.commands.optimize import build_namespace, problem_from_args
from ppverify.optimize import optimize
from ppverify.optimize.deadline import Deadline, WallLimitReached
from ppverify.optimize.heuristic import greedy
from ppverify.optimize.problem import instance


def _problem(argv):
    return problem_from_args(build_namespace(argv))[0]


@pytest.mark.parametrize(
    "argv",
    [
        # 16k ops with one stage per device: the starting schedule meets the bound
        ["1f1b", "-p", "32", "-m", "256"],
        # 24k ops, a memory cap: bounds, relaxation, model building and search all compete for the second
        ["1f1b", "-p", "32", "-m", "256", "--costs", "F=1,I=1,W=1", "--memory-cap", "8"],
    ],
)
def test_time_limit_is_honoured_in_process(argv):
    pr = _problem(argv)
    t0 = time.monotonic()
    res = optimize(pr, time_limit=1.0, workers=1, seed=0)
    took = time.monotonic() - t0
    assert took <= 1.0 * 1.1 + 0.5, f"took {took:.2f} s for --time-limit 1"
    assert res.status in ("OPTIMAL", "FEASIBLE", "UNKNOWN")
    # a bound is always reported, and never above the schedule found
    assert res.bound >= 0 and (res.objective is None or res.bound <= res.objective)
    if res.status != "OPTIMAL" and res.solver.get("wall_limited"):
        assert res.reason.startswith("wall-clock limit reached in:")


def test_cli_prints_status_and_bound_within_the_limit(capsys):
    t0 = time.monotonic()
    code = main(
        [
            "optimize",
            "1f1b",
            "-p",
            "32",
            "-m",
            "256",
            "--costs",
            "F=1,I=1,W=1",
            "--memory-cap",
            "8",
            "--time-limit",
            "1",
            "--no-chart",
        ]
    )
    took = time.monotonic() - t0
    out = capsys.readouterr().out
    assert code in (0, 1)
    assert took <= 1.1 + 0.5, f"took {took:.2f} s"
    lines = {ln.split()[0]: ln for ln in out.splitlines() if ln.strip()}
    assert lines["status"].split()[1] in ("OPTIMAL", "FEASIBLE", "UNKNOWN")
    assert float(lines["bound"].split()[1]) >= 0


def test_an_expired_deadline_gives_a_result_not_a_traceback():
    # the deadline passed before the call: nothing is built, the answer says so
    pr = _problem(["1f1b", "-p", "8", "-m", "64"])
    res = optimize(pr, time_limit=5.0, workers=1, deadline=Deadline.after(0.0))
    assert res.status == "UNKNOWN" and res.objective is None and res.bound == 0
    assert "wall-clock limit" in res.reason
    with pytest.raises(WallLimitReached):
        instance(pr, deadline=Deadline.after(0.0))


def test_a_greedy_past_its_deadline_stops():
    pr = _problem(["1f1b", "-p", "8", "-m", "512", "--costs", "F=1,I=1,W=1"])
    inst = instance(pr)
    # 12,288 ops, at most 8 started per step: the check after 1024 steps comes before the end
    assert greedy(inst, deadline=time.monotonic() - 1) is None
    # ZB-H2's value with equal costs: (p-1)*tF + m*(tF+tI+tW) = 7 + 512*3
    assert greedy(inst, deadline=time.monotonic() + 60).objective == 7 + 512 * 3


def test_an_uncut_run_is_unchanged():
    # small sizes finish long before the limit: the 1F1B optimum (m+p-1)(tF+tB) + 2(p-1)c
    pr = _problem(["1f1b", "-p", "3", "-m", "4", "--costs", "F=1,B=2", "--comm-delay", "1"])
    res = optimize(pr, time_limit=10.0, workers=1)
    assert (res.status, res.objective, res.bound) == ("OPTIMAL", 22.0, 22.0)
    assert "wall_limited" not in res.solver and res.reason == ""
