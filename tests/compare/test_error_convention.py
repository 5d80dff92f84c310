"""Every error of a prediction against a measurement is ``(predicted - measured) / measured``
(``import-trace`` had ``(measured - predicted) / predicted``, the opposite sign of ``calibrate``'s),
and every output that prints one says so once, with its first error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ppverify.cli import main

ROOT = Path(__file__).parents[2]
# 1F1B, p = 2, m = 4, ops sleeping F = 10 ms, B = 20 ms; measure's own clock: 163.3 and 177.6 ms
TRACES = str(ROOT / "tests/data/traces/measure-1f1b-p2-m4")
# the async prediction with those costs: (m + p - 1) (F + B) = 5 x 30 ms = 150 ms, faster than
# either step, so every step's error is negative
COSTS = "F=0.01,B=0.02"
PREDICTED = 0.150


def test_import_trace_errors_are_the_predictions_against_the_steps(capsys):
    argv = ["import-trace", TRACES, "--schedule", "1f1b", "-p", "2", "-m", "4", "--costs", COSTS]
    assert main([*argv, "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["makespan_predicted"] == pytest.approx(PREDICTED)
    ms = rep["makespan_measured"]
    assert rep["errors"]["step"] == pytest.approx((PREDICTED - ms) / ms) and rep["errors"]["step"] < 0
    for n, step_ms in rep["step_makespans"].items():
        err = rep["step_errors"][n]
        assert err == pytest.approx((PREDICTED - step_ms) / step_ms) and err < 0
    assert main([*argv, "--no-table"]) == 0
    out = capsys.readouterr().out
    assert out.count("(pred-meas)/meas") == 1  # said once, on the makespan line
    makespan = next(x for x in out.splitlines() if x.startswith("makespan"))
    assert makespan.endswith(f"error (pred-meas)/meas {100 * (PREDICTED - ms) / ms:+.1f}%")


def test_simulate_measured_trace_has_the_same_sign(capsys):
    argv = ["simulate", "1f1b", "-p", "2", "-m", "4", "--costs", COSTS, "--measured-trace", TRACES]
    assert main([*argv, "--json"]) == 0
    meas = json.loads(capsys.readouterr().out)["measured"]
    ms = meas["makespan"]
    assert meas["errors"]["step"] == pytest.approx((PREDICTED - ms) / ms) and meas["errors"]["step"] < 0
    assert main([*argv, "--no-table"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("measured"))
    assert line.endswith(f"error (pred-meas)/meas {100 * (PREDICTED - ms) / ms:+.1f}%")


def test_calibrate_from_trace_says_the_convention_once(tmp_path, capsys):
    # two steps recorded, step 1 fitted: step 2 is the one held-out step; its error is
    # (predicted - measured) / measured, as the --json object has it
    out = tmp_path / "p.yaml"
    assert main(["calibrate", "--from-trace", TRACES, "--fit-steps", "1", "--out", str(out), "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["held_out"]
    assert row["error"] == pytest.approx((row["predicted"] - row["measured"]) / row["measured"])
    assert main(["calibrate", "--from-trace", TRACES, "--fit-steps", "1", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.count("(pred-meas)/meas") == 1
    assert f"error (pred-meas)/meas {100 * row['error']:+.1f}%" in text
