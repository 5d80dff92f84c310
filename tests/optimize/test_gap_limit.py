"""``optimize(..., gap_limit=)`` / ``optimize --gap-limit``: the run ends as soon as the best
schedule is within the requested relative gap of the proven bound. Checked against the same
problem solved to a proof without the limit: the stopped result is never below the optimum, its
stated gap is within the limit, and its bound never above the optimum."""

from __future__ import annotations

import json

import pytest

from ppverify.cli import main
from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.errors import ParameterError
from ppverify.core.placement import linear
from ppverify.optimize import Problem, optimize, zero_bubble


def _capped(p: int, m: int) -> Problem:
    # unit costs, transfer delay 1, cap p activations: the memory cycles bind
    pl = linear(p)
    costs = zero_bubble(2304, 24, 1024).apply(CostModel.abstract(pl, F=1, I=1, W=1))
    return Problem(pl, m, costs, FixedDelay(1), split=True, memory_cap=p)


@pytest.fixture(scope="module")
def optimum():
    res = optimize(_capped(4, 16), time_limit=60, workers=1)
    assert res.status == "OPTIMAL"
    return res.objective


@pytest.mark.parametrize("limit", [0.02, 0.05, 0.2])
def test_stops_within_the_limit_never_below_the_optimum(limit, optimum):
    res = optimize(_capped(4, 16), time_limit=60, workers=1, gap_limit=limit)
    assert res.status in ("OPTIMAL", "FEASIBLE")
    assert res.gap <= limit + 1e-12
    assert res.objective >= optimum and res.bound <= optimum
    if res.status == "FEASIBLE":
        assert res.solver["stopped"].startswith("within the gap limit")
        assert res.reason.startswith("within the gap limit")


def test_a_zero_limit_searches_to_the_proof(optimum):
    res = optimize(_capped(4, 16), time_limit=60, workers=1, gap_limit=0.0)
    assert res.status == "OPTIMAL" and res.objective == optimum


@pytest.mark.parametrize("bad", [-0.01, 1.0, 2.5])
def test_a_limit_outside_zero_one_is_refused(bad):
    with pytest.raises(ParameterError, match="gap-limit"):
        optimize(_capped(2, 4), time_limit=5, workers=1, gap_limit=bad)


def test_cli_gap_limit(capsys, optimum):
    argv = ["optimize", "-p", "4", "-m", "16", "--costs", "F=1,I=1,W=1", "--comm-delay", "1", "--memory-cap", "4"]
    assert main(argv + ["--gap-limit", "0.05", "--workers", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["gap"] <= 0.05 and out["value"] >= optimum
    assert main(argv + ["--gap-limit", "-1"]) == 2
    assert "gap-limit" in capsys.readouterr().err


def test_cli_gap_command_reads_the_gap_limit(capsys, optimum):
    # `gap` ran its optimization to the proof whatever --gap-limit said, and took -1 without a word
    argv = ["gap", "zb-h1", "-p", "4", "-m", "16", "--costs", "F=1,I=1,W=1", "--comm-delay", "1", "--memory-cap", "4"]
    assert main(argv + ["--gap-limit", "0.05", "--workers", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["bound"] <= optimum <= out["best_found"]
    assert (out["best_found"] - out["bound"]) / out["best_found"] <= 0.05
    assert main(["gap", "gpipe", "-p", "2", "-m", "2", "--gap-limit", "-1"]) == 2
    assert "parameter --gap-limit=-1.0: must be a fraction in [0, 1)" in capsys.readouterr().err
