"""``calibrate --from-trace`` refuses inputs that made it write a wrong preset: ``--schedule`` naming
another order than the one the traces ran (GPipe for a 1F1B trace fitted 55 ms per SEND/RECV and
wrote it, exit 0), and a fit step named twice (fitted twice, weighing it double)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ppverify
from ppverify.core.errors import ParameterError
from ppverify.io.profiler_trace import read_traces
from ppverify.measure.trace_calibrate import calibrate_from_trace
from ppverify.schedules import build

TRACES = str(Path(ppverify.__file__).parents[1] / "tests/data/traces/measure-1f1b-p2-m4")


@pytest.fixture(scope="module")
def traces():
    return read_traces([TRACES])


def test_another_order_than_the_one_that_ran_is_refused(traces):
    # the trace ran 1F1B p=2 m=4, rank 0: F0 F1 B0 ...; GPipe's rank 0 runs F0 F1 F2 ...: they part at position 2
    with pytest.raises(ParameterError, match=r"rank 0: op order differs at position 2: ran 0B0, the schedule has 0F2"):
        calibrate_from_trace(traces, build("gpipe", p=2, m=4), [1])
    fit = calibrate_from_trace(traces, build("1f1b", p=2, m=4), [1])  # the order that ran
    assert fit.fit_steps == (1,)


def test_a_fit_step_named_twice_is_refused(traces):
    with pytest.raises(ParameterError, match="ProfilerStep 1 is named twice"):
        calibrate_from_trace(traces, None, [1, 1])


def _import_trace(capsys, *args):
    from ppverify.cli import main

    code = main(["import-trace", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_a_schedule_with_stages_the_trace_never_ran_gets_no_made_up_prediction(capsys):
    # the stored trace ran 1F1B on 2 ranks (stages 0 and 1, microbatches 0..3); ZB-V's stages 2
    # and 3 never ran, so no cost could be fitted for them, and a cost of 0 gave a prediction 43 %
    # off the measurement
    code, rep = _import_trace(capsys, TRACES, "--schedule", "zbv", "-p", "2", "-m", "4")
    assert code == 1  # the recorded order is not ZB-V's: the differences are listed
    assert rep["makespan_predicted"] is None
    assert rep["no_prediction"].startswith("stages 2, 3 of the schedule never ran in the trace")


def test_a_schedule_of_more_microbatches_than_the_step_ran_gets_no_prediction(capsys):
    # 1F1B with m = 8 predicts a step of 8 microbatches; the trace's step ran 4
    code, rep = _import_trace(capsys, TRACES, "--schedule", "1f1b", "-p", "2", "-m", "8")
    assert rep["makespan_predicted"] is None
    assert (
        rep["no_prediction"]
        == "the step ran microbatches 0..3; the schedule has m=8 (give -m 4, or the schedule that ran)"
    )
    code, rep = _import_trace(capsys, TRACES, "--schedule", "1f1b", "-p", "2", "-m", "4")
    assert code == 0 and rep["no_prediction"] is None and rep["makespan_predicted"] > 0
