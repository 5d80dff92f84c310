"""A recorded step read against a schedule of another number of microbatches has no prediction
beside it (its time is another step's): ``import-trace`` and ``simulate --measured-trace`` say so
rather than print an error in per cent; and the text names the step it read by what the trace
holds (``ProfilerStep#N``, or the actions' occurrences without such ranges)."""

from __future__ import annotations

import json
from pathlib import Path

from ppverify.cli import main

ROOT = Path(__file__).parents[2]
TRACES = str(ROOT / "tests/data/traces/measure-1f1b-p2-m4")  # 1F1B, p = 2, m = 4: microbatches 0..3


def test_import_trace_read_as_fewer_microbatches_has_no_prediction(capsys):
    # the step ran microbatches 0..3; read as a schedule of m = 2 its time is not m = 2's
    # exit 1: the recorded order, read with m = 2, holds ops of microbatches 2 and 3 that do not exist
    assert main(["import-trace", TRACES, "--schedule", "1f1b", "-p", "2", "-m", "2", "--no-table"]) == 1
    out = capsys.readouterr().out
    assert "no prediction: the step ran microbatches 0..3; the schedule has m=2 (give -m 4" in out
    assert "(pred-meas)/meas" not in out and "error by" not in out  # no error in per cent


def test_simulate_measured_trace_of_other_microbatches_has_no_error(capsys):
    assert main(["simulate", "1f1b", "-p", "2", "-m", "2", "--measured-trace", TRACES, "--no-table"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("measured"))
    assert "no prediction: the step ran microbatches 0..3; the schedule has m=2" in line and "error" not in line
    assert main(["simulate", "1f1b", "-p", "2", "-m", "2", "--measured-trace", TRACES, "--json"]) == 0
    meas = json.loads(capsys.readouterr().out)["measured"]
    assert meas["errors"] is None and meas["no_prediction"].startswith("the step ran microbatches 0..3")
    # the schedule that ran: an error again (the prediction's against the measured step)
    assert main(["simulate", "1f1b", "-p", "2", "-m", "4", "--measured-trace", TRACES, "--json"]) == 0
    meas = json.loads(capsys.readouterr().out)["measured"]
    assert meas["no_prediction"] is None and meas["errors"]["step"] is not None


def test_header_without_profiler_steps_says_occurrences(tmp_path, capsys):
    # one rank, two occurrences of 0F0 and 0B0 without ProfilerStep ranges: steps 0 and 1 are the
    # actions' first and second runs; the header must not call them ProfilerStep#0
    ev = [
        {"ph": "X", "cat": "user_annotation", "name": n, "pid": 0, "tid": 1, "ts": t, "dur": d}
        for n, t, d in (("PP:0F0", 0, 10), ("PP:0B0", 10, 20), ("PP:0F0", 100, 10), ("PP:0B0", 110, 20))
    ]
    (tmp_path / "rank0.json").write_text(
        json.dumps({"distributedInfo": {"rank": 0, "world_size": 1}, "host_name": "h", "traceEvents": ev})
    )
    assert main(["import-trace", str(tmp_path), "--no-table"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert "ProfilerStep" in head and "ProfilerStep#" not in head  # "no ProfilerStep ranges"
    assert "1 rank," in head
    assert main(["import-trace", str(tmp_path), "--no-table"]) == 0
    rec = capsys.readouterr().out.splitlines()[1]
    assert "1 stage," in rec  # not "1 stages"
