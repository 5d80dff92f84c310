"""``design``'s limits as ``optimize`` has them: ``--work-limit`` (CP-SAT's deterministic work,
here per point) decides the result, so the JSON is the same at any load and under any wall-clock
ceiling that does not bite; ``--time-limit`` is that ceiling, and one too short for any point
returns what was found (the families, the bounds that need no search) with exit code 2, as
``optimize`` exits when its clock leaves it without a schedule."""

from __future__ import annotations

import json

import pytest

from ppverify.cli import main
from ppverify.core.errors import ParameterError
from ppverify.design.points import NOT_RUN

ARGS = ["design", "-p", "2", "-m", "4", "--costs", "F=1,I=1,W=1", "--placements", "linear,v", "--no-progress"]


def _json(capsys, argv: list[str], code: int = 0) -> dict:
    assert main(argv) == code
    return json.loads(capsys.readouterr().out)


def test_work_limit_decides_the_json(capsys) -> None:
    argv = [*ARGS, "--budgets", "1,2", "--json", "--work-limit", "1"]
    first = _json(capsys, argv)
    again = _json(capsys, argv)
    ceiling = _json(capsys, [*argv, "--time-limit", "600"])
    assert first == again
    assert first["design"]["work_limit"] == 1.0 and first["design"]["time_limit"] is None
    assert ceiling["design"]["time_limit"] == 600.0 and ceiling["points_cut"] == 0
    ceiling["design"]["time_limit"] = None
    assert ceiling == first  # a ceiling that does not bite changes nothing


def test_time_limit_alone_caps_the_work_as_in_optimize(capsys) -> None:
    # run_limits: the work defaults to design's 10 per point, never more than --time-limit
    out = _json(capsys, [*ARGS, "--budgets", "2", "--json", "--time-limit", "600"])
    assert (out["design"]["work_limit"], out["design"]["time_limit"]) == (10.0, 600.0)
    assert main([*ARGS, "--work-limit", "-1"]) == 2
    err = capsys.readouterr().err
    assert "work-limit=-1.0: must be > 0 and at most 1e9 deterministic seconds" in err and "Traceback" not in err


def test_time_limit_too_short_for_any_point(capsys) -> None:
    assert main([*ARGS, "--json", "--budgets", "1,2", "--time-limit", "0.001"]) == 2
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert "--time-limit 0.001: no point's search found a schedule in time (4 of 4 cut)" in captured.err
    assert "Traceback" not in captured.err
    assert out["points_cut"] == out["points_done"] == 4
    # no search ran, yet each point has the bound a skipped point gets (no search either), by hand:
    # linear, budget 1: device 0 holds one activation, so microbatch k + 1's F0 waits for k's W0:
    #   F0 + F1 + I1 + I0 + W0 = 5 per microbatch, x 4 = 20 (it used to be the 12 of device work)
    # linear, budget 2: device 1 starts after F0 (1) and has m (tF + tI + tW) = 12 of work: 13
    # v, budget 2: a chunk pass lasts 1/2; device 1 starts after F0 (0.5), then 4 x 6 x 0.5 = 12: 12.5
    # v, budget 1: at least budget 2's (a schedule within 1 is within 2)
    bounds = {(q["placement"], q["budget"]): q["bound"] for q in out["points"]}
    assert bounds[("linear", 1.0)] == 20.0 and bounds[("linear", 2.0)] == 13.0
    assert bounds[("v", 2.0)] == 12.5 and bounds[("v", 1.0)] >= 12.5
    for q in out["points"]:
        assert q["cut"] and q["status"] in ("UNKNOWN", "FEASIBLE", "OPTIMAL")
        if q["start"] is None:  # no family fits: nothing found
            assert q["time"] is None and q["note"] == NOT_RUN
    # what was found is returned: the families that fit a budget, Z3-valid under it
    assert out["frontier"] and all(q["verified"] == "valid" for q in out["frontier"])
    assert {q["start"] for q in out["frontier"]} <= {f["family"] for f in out["families"]}


def test_time_limit_too_short_prints_the_families_and_the_bounds(capsys) -> None:
    # exit 2 says "what was found, the families and the bounds, still prints": in the text too,
    # not only in the JSON (it printed an empty frontier and "0 of them listed")
    assert main([*ARGS, "--budgets", "1,2", "--time-limit", "0.001"]) == 2
    text = capsys.readouterr().out
    assert "0 of them listed" not in text
    assert "  1f1b " in text and "  zbv " in text  # the families' table (1f1b: linear, zbv: v)
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("no schedule"))
    rows = [line.split() for line in lines[head + 2 : head + 4]]
    # the two budget-1 points found nothing (no family fits a peak of 1): linear's bound 20 by hand above
    assert [r[:2] for r in rows] == [["linear", "1"], ["v", "1"]] and rows[0][3] == "20"
    assert all(" ".join(r[4:]) == NOT_RUN for r in rows)


def test_the_library_refuses_a_seed_beyond_32_bits_before_the_families_run():
    from ppverify.design.run import DesignRequest, design
    from ppverify.design.spec import Limits
    from ppverify.systems.preset_models import PresetSettings

    rq = DesignRequest(2, 2, "linear", "auto", PresetSettings(costs="F=1,B=2"), Limits(5.0, seed=2**31))
    with pytest.raises(ParameterError, match=r"seed=2147483648: must be an integer from -2147483648"):
        design(rq, progress=False)


def test_points_cut_but_proven_optimal_are_said_so() -> None:
    # A point the clock cut whose search had closed its gap (OPTIMAL) keeps its time and bound at
    # any load: the points line says how many of the cut points are such. By hand: p = 2, m = 2,
    # F = 1, B = 2 on one placement, budgets 1 and 2: both points are tiny and proven optimal
    # (gap 0); marked cut, both count; one turned FEASIBLE leaves one.
    from dataclasses import replace

    from ppverify.design.output import design_text
    from ppverify.design.run import DesignRequest, design
    from ppverify.design.spec import Limits
    from ppverify.systems.preset_models import PresetSettings

    rq = DesignRequest(2, 2, "linear", "1,2", PresetSettings(costs="F=1,B=2"), Limits(5.0, ceiling=600.0))
    d = design(rq, progress=False)
    assert [q.status for q in d.points] == ["OPTIMAL", "OPTIMAL"]
    both = replace(d, points=tuple(replace(q, cut=True) for q in d.points))
    assert "2 cut by --time-limit" in design_text(both).splitlines()[1]
    assert "(2 of them proven optimal all the same)" in design_text(both).splitlines()[1]
    one = replace(both, points=(replace(both.points[0], status="FEASIBLE"), both.points[1]))
    assert "(1 of them proven optimal all the same)" in design_text(one).splitlines()[1]
    assert "proven optimal" not in design_text(d).splitlines()[1]  # nothing cut: nothing said
