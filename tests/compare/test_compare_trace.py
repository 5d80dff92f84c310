"""``compare --measured-trace``: the measured level read from a profiler trace.

The trace is synthetic (:mod:`ppverify.io.trace_synth`) from the async engine's 1F1B p=2 m=4 at
F = 10 ms, B = 20 ms, its three steps stretched by 1.0, 1.1, 1.2: the median step lasts
1.1 x (m + p - 1)(F + B) = 1.1 x 150 ms, i.e. 16.5 units of 10 ms.
"""

from __future__ import annotations

import json

import pytest

from ppverify.cli import main
from ppverify.compare.request import compare_request, run_request
from ppverify.core.costs import CostModel
from ppverify.engines import run
from ppverify.io.trace_synth import synthetic_traces, write_synthetic
from ppverify.schedules import build


@pytest.fixture
def trace_dir(tmp_path):
    s = build("1f1b", p=2, m=4)
    write_synthetic(
        synthetic_traces(run(s, CostModel.abstract(s.placement, F=0.01, B=0.02), semantics="async"), 3, jitter=0.1),
        tmp_path,
    )
    return str(tmp_path)


def test_the_traced_schedule_gets_the_median_step_others_not_applicable(trace_dir):
    req = compare_request(
        schedules="1f1b,gpipe",
        ps="2",
        ms="4",
        costs="F=1,B=2",
        levels="async",
        measured_trace=(trace_dir,),
        verify=False,
    )
    rows = run_request(req).rows
    got = {(r.schedule, r.level): r for r in rows.itertuples()}
    assert got[("1f1b", "measured")].makespan == pytest.approx(16.5)
    assert got[("1f1b", "async")].makespan == pytest.approx(15.0)
    assert got[("gpipe", "measured")].status == "not applicable"


def test_bad_trace_is_one_line(tmp_path, capsys):
    assert main(["compare", "--schedules", "1f1b", "-p", "2", "--costs", "F=1", "--measured-trace", str(tmp_path)]) == 2
    assert "holds no trace files" in capsys.readouterr().err


def test_report_carries_the_traced_measured_level(trace_dir, tmp_path, capsys):
    out = tmp_path / "r.html"
    argv = ["report", "--schedules", "1f1b", "-p", "2", "-m", "4", "--costs", "F=1,B=2", "--levels", "async"]
    assert main([*argv, "--measured-trace", trace_dir, "--no-verify", "--no-progress", "-o", str(out)]) == 0
    assert "16.5" in out.read_text()


def test_simulate_prints_the_traced_step_beside_its_prediction(trace_dir, capsys):
    # async at F = 10 ms, B = 20 ms: 150 ms; the trace's median step 165 ms: error (pred - meas) / meas
    # = (150 - 165) / 165 = -1/11, -9.1 %
    argv = ["simulate", "1f1b", "-p", "2", "-m", "4", "--costs", "F=0.01,B=0.02", "--no-table"]
    assert main([*argv, "--measured-trace", trace_dir]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("measured"))
    assert line == (
        "measured      165.000 ms (trace, ProfilerStep#2; same op order)   predicted 150.000 ms (async)   "
        "error (pred-meas)/meas -9.1%"
    )
    assert main([*argv, "--measured-trace", trace_dir, "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["measured"]["makespan"] == pytest.approx(0.165) and rep["measured"]["errors"]["step"] == pytest.approx(
        -1 / 11
    )
    assert (
        main(["simulate", "gpipe", "-p", "2", "-m", "4", "--costs", "F=0.01,B=0.02", "--measured-trace", trace_dir])
        == 0
    )
    assert "2 order difference(s)" in capsys.readouterr().out
