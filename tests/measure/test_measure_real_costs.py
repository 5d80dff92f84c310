"""``measure --compute real`` without ``--costs``: real ops take the time they take, so the
prediction takes each stage's median op of each kind measured in the run (it compared the run
with the default 10/20 ms sleeps before, a 90 % "error" that said nothing)."""

from __future__ import annotations

import json
import statistics

import pytest

from ppverify.cli import main
from ppverify.core.comm import NO_COMM
from ppverify.engines import run
from ppverify.measure import measure_many
from ppverify.schedules import build

FAST = dict(steps=2, warmup=1, timeout=60.0)


def test_the_prediction_takes_the_medians_of_the_measured_ops() -> None:
    sched = build("zbv", 2, 4)
    given, measured = measure_many([(sched, {"F": 0.002, "B": 0.004}), sched], compute="real", **FAST)
    assert given.costs_from == "given" and given.predicted is not None
    assert given.costs.duration["F"] == (0.001,) * 4  # the costs as given: 2 ms per device share of 2 stages
    assert measured.costs_from == "measured"
    # the medians by hand, from every measured step's op records
    per: dict[tuple[str, int], list[float]] = {}
    for tl in measured.timelines:
        for op, s, e in zip(tl.ops, tl.start, tl.end):
            per.setdefault((op.kind, op.stage), []).append(float(e - s))
    for (kind, stage), xs in per.items():
        assert measured.costs.duration[kind][stage] == pytest.approx(statistics.median(xs), rel=1e-9)
    # and the prediction is the async engine's with those costs
    expected = run(sched, measured.costs, NO_COMM, semantics="async").makespan
    assert measured.predicted is not None and measured.predicted.makespan == pytest.approx(expected, rel=1e-12)
    assert measured.grad_check.ok


def test_cli_says_where_the_costs_came_from(capsys) -> None:
    assert main(["measure", "1f1b", "-p", "2", "-m", "2", "--compute", "real", "--steps", "1"]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("costs"))
    # 1F1B runs F and B only: no I or W is named
    assert "measured in this run: F=" in line and "; B=" in line and "I=" not in line
    assert main(["measure", "1f1b", "-p", "2", "-m", "2", "--compute", "real", "--steps", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["costs_from"] == "measured"
    # given costs are the prediction's, as before
    argv = ["measure", "1f1b", "-p", "2", "-m", "2", "--compute", "real", "--steps", "1", "--costs", "F=0.01,B=0.02"]
    assert main([*argv, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["costs_from"] == "given" and d["makespan_predicted"] == pytest.approx(0.09)
