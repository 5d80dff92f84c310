"""``calibrate --from-trace``'s default fit steps: all but a held-out tail, with at least 3 steps
fitted (the outlier check takes 3), and the notes when a trace has too few steps for the outlier
check or for a held-out one; and the calibrate command's logic that lives in the library
(``ppverify.measure.calibrate_run``)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import ppverify.measure.calibrate as cal
from ppverify.cli import main
from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.errors import ParameterError
from ppverify.engines import run
from ppverify.io.trace_synth import synthetic_traces, write_synthetic
from ppverify.measure.calibrate_run import check_calibrate_mode, measure_calibration
from ppverify.measure.hang import MeasureTimeout
from ppverify.measure.trace_calibrate import from_trace
from ppverify.measure.trace_steps import default_fit_steps, step_notes
from ppverify.schedules import build

#: the stored trace: 1F1B p = 2, m = 4, ProfilerStep#1 and #2 only
TRACES = str(Path(__file__).parents[1] / "data/traces/measure-1f1b-p2-m4")


@pytest.mark.parametrize(
    "n, fitted",
    [
        # n <= 3: the outlier check needs all of them, so every step is fitted, none held out
        (1, 1),
        (2, 2),
        (3, 3),
        # n = 4..7: a quarter rounds down to 1 (at least 1 held out), capped so 3 remain: n - 1
        (4, 3),
        (5, 4),
        (7, 6),
        # n = 8: a quarter is 2 held out; n = 12: 3; n = 13: 13 // 4 = 3
        (8, 6),
        (12, 9),
        (13, 10),
    ],
)
def test_the_default_holds_out_a_tail_and_fits_at_least_three(n, fitted):
    steps = tuple(range(1, n + 1))
    assert default_fit_steps(steps) == steps[:fitted]


def _write_steps(directory, factors):
    """A trace of 1F1B p = 2, m = 4 (F = 10, B = 20 ms, 1 ms links) whose step ``n`` (from 1) runs
    ``factors[n - 1]`` times as long; returns the makespan at factor 1."""
    s = build("1f1b", p=2, m=4)
    tl = run(s, CostModel.abstract(s.placement, F=0.01, B=0.02), FixedDelay(0.001), semantics="async")
    objs = None
    for n, factor in enumerate(factors, start=1):
        stretched = replace(tl, start=tl.start * factor, end=tl.end * factor)
        step = synthetic_traces(stretched, steps=1, first_step=n)
        if objs is None:
            objs = [dict(o) for o in step]
            continue
        for r in range(2):  # each step 1 s after the previous one (every step lasts under 1 s)
            shifted = [
                {**e, "ts": e["ts"] + (n - 1) * 1e6} if isinstance(e.get("ts"), (int, float)) else e
                for e in step[r]["traceEvents"]
            ]
            objs[r]["traceEvents"] = [*objs[r]["traceEvents"], *shifted]
    write_synthetic(objs, directory)
    return tl.makespan


def test_a_four_step_trace_fits_three_and_leaves_out_an_outlier(tmp_path):
    # steps 1, 3, 4 alike, step 2 at x 1.5: the default fits 1-3 (4 // 4 = 1 held out). Of the
    # makespans t, 1.5 t, t the median is t and the median absolute deviation 0, so the robust
    # deviation is its floor, 1 % of t; 1.5 t lies 50 deviations off (> 3): step 2 is left out.
    # The old default (the first half, 1 and 2) fitted step 2: two steps have no outlier check.
    t = _write_steps(tmp_path, [1, 1.5, 1, 1])
    fit, _, rows = from_trace([str(tmp_path)], None, None, "x")
    assert fit.fit_steps == (1, 3) and fit.dropped == (2,)
    assert [ms for _, ms in fit.runs] == pytest.approx([t, t])
    assert [n for n, _, _ in rows] == [4] and rows[0][1] == pytest.approx(t)


def test_a_three_step_trace_is_fitted_whole_and_says_nothing_is_held_out(tmp_path, capsys):
    _write_steps(tmp_path, [1, 1, 1])
    out = tmp_path / "p.yaml"
    assert main(["calibrate", "--from-trace", str(tmp_path), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "fit steps          ProfilerStep 1, 2, 3 of" in captured.out
    assert "held-out step" not in captured.out and out.exists()
    assert captured.err.splitlines() == [
        "ppverify: note: the traces hold 3 ProfilerSteps, all fitted (outlier rejection needs 3): none is left for "
        "a held-out check of the preset; record 4 or more (measure --profile DIR --steps N)"
    ]


def test_a_four_step_trace_without_outliers_says_nothing(tmp_path, capsys):
    _write_steps(tmp_path, [1, 1, 1, 1])
    assert main(["calibrate", "--from-trace", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "# held-out step 4 " in captured.out
    assert "fit steps ProfilerStep 1, 2, 3 (makespans" in captured.out  # the preset's comment


def test_a_two_step_trace_is_too_short_for_outlier_rejection(capsys):
    assert main(["calibrate", "--from-trace", TRACES, "--json"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (
        "ppverify: note: the traces hold 2 ProfilerSteps, too few for outlier rejection (it needs 3 fit steps): "
        "no fit step was checked for a burst of other work; record more steps (measure --profile DIR --steps N)"
    )
    assert "none is left for a held-out check" in err[1] and len(err) == 2


def test_fit_steps_named_too_few_or_all_are_said():
    # a 5-step trace: --fit-steps 1,2 checks 2 steps (fewer than 3), and 3 remain held out
    assert step_notes(recorded=5, checked=2, held_out=3, given=True) == [
        "--fit-steps names 2 ProfilerSteps, too few for outlier rejection (it needs 3 fit steps): no fit step "
        "was checked for a burst of other work; name 3 or more"
    ]
    # --fit-steps 1,2,3,4,5: all checked, none held out
    assert step_notes(recorded=5, checked=5, held_out=0, given=True) == [
        "--fit-steps: every recorded step is fitted or left out as an outlier: none is left for a held-out "
        "check of the preset; name fewer"
    ]


def test_bad_fit_steps_are_one_line(capsys):
    assert main(["calibrate", "--from-trace", TRACES, "--fit-steps", "1;2"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "parameter --fit-steps=1;2: expected step numbers separated by commas" in err


def test_the_modes_options_are_checked_by_dest():
    check_calibrate_mode({"fit_steps": "1", "schedule": "1f1b", "quick": False}, from_trace=True)
    with pytest.raises(ParameterError, match="parameter wait-quiet=5: shapes a measuring run"):
        check_calibrate_mode({"wait_quiet": 5}, from_trace=True)
    with pytest.raises(ParameterError, match="parameter schedule=1f1b: belongs to a fit to a profiler trace"):
        check_calibrate_mode({"schedule": "1f1b"}, from_trace=False)


def test_a_calibration_run_past_its_timeout_names_the_timeout(monkeypatch):
    # the default limit is 120 s; a hang of a known-good calibration run means the limit is short
    def hang(quick=False, timeout=120.0, realtime=False):
        raise MeasureTimeout(timeout, {0: "0F0"})

    monkeypatch.setattr(cal, "calibrate", hang)
    with pytest.raises(ParameterError, match=r"parameter timeout=120\.0: a calibration run needs longer"):
        measure_calibration(quick=True)
    with pytest.raises(ParameterError, match=r"parameter timeout=5: .*no progress within 5 s"):
        measure_calibration(timeout=5)
