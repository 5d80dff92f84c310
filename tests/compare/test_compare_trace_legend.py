"""``compare --measured-trace``: the legend and the JSON say the measured column is a recorded
step, not a run of "ops sleeping their durations" on this machine, and explain no measured peak
column the table does not print (a trace records no saved-activation peak)."""

from __future__ import annotations

import json
from pathlib import Path

from ppverify.cli import main
from ppverify.compare.config import MEASURED_TRACE_SEMANTICS

TRACE = str(Path(__file__).parents[1] / "data" / "traces" / "measure-1f1b-p2-m4")
ARGS = ["compare", "--schedules", "1f1b", "--costs", "F=1,B=2", "-p", "2", "-m", "4", "--measured-trace", TRACE]


def test_the_legend_names_the_trace(capsys):
    assert main([*ARGS, "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert f"  measured   {MEASURED_TRACE_SEMANTICS}" in out
    assert "ops sleeping their durations" not in out
    assert "peak act. (measured)" not in out


def test_the_json_names_the_trace(capsys):
    assert main([*ARGS, "--no-progress", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["levels"]["measured"] == MEASURED_TRACE_SEMANTICS
    (row,) = [r for r in out["rows"] if r["level"] == "measured"]
    assert row["semantics"] == MEASURED_TRACE_SEMANTICS and row["makespan"] is not None
