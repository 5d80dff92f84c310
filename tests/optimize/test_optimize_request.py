"""From options to an optimization problem (:mod:`ppverify.optimize.request`): backward choice,
memory caps in the cost model's units, and the text of a result; optima derived by hand."""

from __future__ import annotations

import pytest

from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.placement import linear, loop
from ppverify.io import load_schedule
from ppverify.optimize.request import (
    Request,
    build_problem,
    result_text,
    save_result,
    solve,
    summary_lines,
)
from ppverify.schedules import build


def _problem(request: Request, p: int = 2, m: int = 2, **costs: float):
    pl = linear(p)
    return build_problem(pl, m, (0,) * m, CostModel.abstract(pl, **(costs or {"F": 1, "B": 2})), FixedDelay(0), request)


@pytest.mark.parametrize(
    "costs_text,backward,splits,want",
    [
        (None, "auto", False, False),
        ("F=1,I=1,W=1", "auto", False, True),  # the costs name I/W
        (None, "auto", True, True),  # the schedule splits its backward
        ("F=1,I=1,W=1", "full", True, False),
        (None, "split", False, True),
    ],
)
def test_backward_choice(costs_text, backward, splits, want):
    pl = linear(2)
    pr, info = build_problem(
        pl, 2, (0, 0), CostModel.unit(pl), FixedDelay(0), Request(costs_text, backward), schedule_splits=splits
    )
    assert pr.split is want and info["backward"] == ("split" if want else "full")


def test_memory_cap_in_cost_units():
    pl = loop(2, 2)  # four stages on two devices: one stage's activation is half a device share
    costs = CostModel.abstract(pl, F=1, B=2)
    # a plain number counts device shares (verify's unit); NMF counts stage activations (1/2 each)
    for text, want in (("4", 4.0), ("2.5", 2.5), ("4MF", 2.0), ("1MF", 0.5)):
        pr, _ = build_problem(pl, 4, (0,) * 4, costs, FixedDelay(0), Request("F=1,B=2", memory_cap=text))
        assert pr.memory_cap == want


def test_a_size_cap_in_bytes_needs_a_model_with_bytes():
    with pytest.raises(Exception, match="a size needs presets"):
        _problem(Request(memory_cap="64GiB", memory_model="w-frees-all"))
    with pytest.raises(Exception, match="a size needs presets"):
        _problem(Request(memory_cap="64GiB"))  # the default memory model's bytes are no preset


def test_optimum_and_evaluation_by_hand():
    # two devices, two microbatches, F=1 B=2: device 1 finishes its 6 units of work at 7 at the
    # earliest (its first forward waits 1), device 0's last backward takes 2 more: 9
    pr, info = _problem(Request())
    res = solve(pr, time_limit=20)
    assert res.status == "OPTIMAL" and res.objective == 9.0
    lines = summary_lines(res, info)
    assert lines[2] == "status     OPTIMAL" and lines[3] == "makespan   9"
    # GPipe's order reaches the same value: (m + p - 1)(F + B) = 9
    assert solve(pr, build("gpipe", p=2, m=2), time_limit=20).objective == 9.0


def test_memory_cap_raises_the_optimum():
    # one microbatch in flight per device (cap 1 x M_F on a whole share): no overlap of microbatches
    # beyond what one activation allows; the value cannot be below the uncapped optimum
    free, _ = _problem(Request())
    capped, _ = _problem(Request(memory_cap="1"))
    assert capped.memory_cap == 1.0
    assert solve(capped, time_limit=20).objective >= solve(free, time_limit=20).objective


def test_result_text_and_save(tmp_path):
    pr, info = _problem(Request(), m=1)
    res = solve(pr, time_limit=20)
    parts = result_text(res, info, pr, chart_width=6, table=True).split("\n\n")
    assert parts[1].splitlines()[1:] == ["dev 0  F...BB", "dev 1  .FBB.."]  # F=1 B=2, one microbatch
    assert parts[2].splitlines()[1].split()[:3] == ["dev", "0", "0F0"]
    assert len(result_text(res, info, pr, chart_width=None).split("\n\n")) == 1
    path = tmp_path / "best.json"
    save_result(res, pr, str(path))
    assert load_schedule(path).m == 1
