"""The optimum row's ``lower_bound`` is a certified bound: its float never reads above the exact
optimum (the bound's ticks times the tick, rounded toward -inf: ``ppverify.optimize.problem.bound_time``).

GPipe p=2 m=3 with F=0.1 and B=0.2 (one backward, no transfers), by hand: device 1 starts no
earlier than 0F0 ends (tF), then runs 3 forwards and 3 backwards (3(tF + tB)), after which device 0
still runs the last backward (tB): at least 4 tF + 4 tB = 4 x 0.3 = 6/5, and 1F1B's order reaches
it, (m + p - 1)(tF + tB) = 4 x 0.3. The optimum is 6/5 (0.12 with F=0.01, B=0.02)."""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction

from ppverify.cli import main
from ppverify.compare.optimum import solve_placement
from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.schedules import build


def test_compare_optimum_bound_is_never_above_the_exact_optimum(capsys):
    argv = ["compare", "--schedules", "gpipe", "-p", "2", "-m", "3", "--costs", "F=0.1,B=0.2"]
    assert main([*argv, "--levels", "optimum", "--json", "--no-progress"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["rows"]
    assert row["status"] == "optimal"
    # the float's exact value, not its nearest decimal: 1.2 reads as 1.19999999999999995559 < 6/5
    assert Fraction(row["lower_bound"]) <= Fraction(6, 5)
    assert row["lower_bound"] == 1.2


def test_seconds_grid_bound_is_never_above_the_exact_optimum():
    # in seconds the solve runs on a grid of 200 ticks per shortest op: tick 0.01 / 200 = 5e-05 s,
    # the optimum 0.12 s is 2400 ticks, and 2400 * 5e-05 is 0.12000000000000001 in floats, above
    # 3/25 = 0.12; rounded toward -inf it is the float just below (or at) 3/25
    s = build("gpipe", p=2, m=3)
    costs = replace(CostModel.abstract(s.placement, F=0.01, B=0.02), time_unit="s")
    r = solve_placement(s, costs, FixedDelay(0.0), 5.0)
    assert r.lower_bound is not None
    assert Fraction(r.lower_bound) <= Fraction(3, 25)
    assert r.lower_bound == 0.12  # within one float of it, not a looser bound
    assert r.status == "optimal"  # the re-timed makespan (0.12000000000000001) meets the bound
