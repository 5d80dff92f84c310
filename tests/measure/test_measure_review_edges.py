"""Edges found by running ``measure`` and ``calibrate`` as a user would: ``--costs`` without F
(F was the abstract default, 1 second, under costs in seconds), a run stopped by ``--timeout``
while still moving (it was reported as a hang: "no progress"), the "predicted = ... activations" line of a file
whose costs free part of an activation at I (it disagreed with the bytes beside it), and
``calibrate --from-trace`` without ``--out`` (the held-out steps were not printed; ``--model`` on
a trace with shapes sized nothing without a word)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from ppverify.cli import main
from ppverify.core.costs import CostModel
from ppverify.engines import run
from ppverify.measure import MeasureTimeout, seconds_costs
from ppverify.measure.hang import _demo_moving
from ppverify.measure.memory import MeasuredMemory
from ppverify.measure.summary import memory_lines
from ppverify.measure.workers import run_workers
from ppverify.schedules import build

TRACES = str(Path(__file__).resolve().parents[1] / "data" / "traces" / "measure-1f1b-p2-m4")


def test_costs_without_f_take_the_default_10_ms_not_one_second(capsys):
    # 1F1B, p = 2, m = 1: F on stage 0, F on stage 1, B on stage 1, B on stage 0 one after the
    # other: 10 + 10 + 4 + 4 = 28 ms with F = 10 ms (the default) and B = 4 ms (given); I = W = 2 ms
    s = build("1f1b", p=2, m=1)
    assert run(s, seconds_costs(s, {"B": 0.004}), semantics="async").makespan == pytest.approx(0.028)
    assert main(["measure", "1f1b", "-p", "2", "-m", "1", "--costs", "B=0.004", "--steps", "1", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["makespan_predicted"] == pytest.approx(0.028)  # was 2.008 s: F = 1 s slept for real
    assert rep["costs"] == "F=0.01,B=0.004,I=0.002,W=0.002"


@pytest.mark.parametrize("moving", [True, False])
def test_a_run_still_moving_at_its_timeout_is_not_called_a_hang(moving):
    # two workers that change action every 10 ms for a minute (a slow run), or never (a stuck
    # one), stopped by a 3 s allowance: the first was still running, the second is a hang. The
    # allowance runs from the first rank's start and a stuck run counts as moving until 1 s after
    # the last rank started, so 3 s leaves a busy machine 2 s to start the second worker
    with pytest.raises(MeasureTimeout) as info:
        run_workers(2, _demo_moving, moving, timeout=3)
    assert info.value.still_running is moving
    if moving:
        assert str(info.value).startswith("not finished within 3 s (--timeout bounds the whole run), though still")
        assert "rank 0 in op " in str(info.value) and str(info.value).endswith("; raise --timeout")
    else:
        assert str(info.value) == "hang: no progress within 3 s; rank 0 blocked in op 0; rank 1 blocked in op 0"


def test_a_deadlock_is_still_a_hang(tmp_path, capsys):
    # rank 0 waits for a gradient before sending its activation; rank 1 waits for that activation
    f = tmp_path / "dead.csv"
    f.write_text("0F0,0RECV_B0,0B0,0SEND_F0\n1RECV_F0,1F0,1B0,1SEND_B0\n")
    # (3 s: both ranks are blocked within moments of their start, well before the 1 s a stuck run
    # must stay still to be called a hang, even on a busy machine)
    assert main(["measure", str(f), "--timeout", "3", "--json"]) == 1
    rep = json.loads(capsys.readouterr().out)
    assert rep["still_running"] is False
    assert rep["hang"] == "hang: no progress within 3 s; rank 0 blocked in 0B0; rank 1 blocked in 1F0"


def test_the_timeouts_verdict_follows_how_long_the_ranks_were_still():
    assert not MeasureTimeout(60.0, {0: "0F1"}, idle=12.0).still_running
    assert MeasureTimeout(60.0, {0: "0F1"}, idle=0.2).still_running
    # a short allowance: half of it still is no sign of life
    assert not MeasureTimeout(0.1, {0: "0F1"}, idle=0.06).still_running
    assert not MeasureTimeout(2.0, {0: "0F1"}).still_running  # not watched: as before


def test_activation_count_line_agrees_with_the_predicted_bytes():
    # a file optimized with freed_by_I = 0.5 (an I frees half an activation); this run's I frees
    # nothing, so ZB-H1 at p = 2, m = 4 holds two microbatches on each device: 1,600 B each (800 B
    # a stage activation, one stage per device). The cost model's own peaks are 2 and 1.5.
    s = build("zb-h1", p=2, m=4)
    costs = CostModel.abstract(s.placement, F=1, I=1, W=1, freed_by_I=0.5)
    predicted = run(s, costs, semantics="async")
    assert [float(x) for x in predicted.peak_memory()] == [2.0, 1.5]
    result = SimpleNamespace(
        memory=MeasuredMemory((), (), (), (1600, 1600), (1600.0, 1600.0), 800),
        schedule=s,
        costs=costs,
        predicted=predicted,
    )
    _, how = memory_lines(result)
    assert "predicted = 2, 2 activations x 800 B" in how  # was "2, 1.5" beside 1,600, 1,600 B
    assert "the costs' freed_by_I 0.5 is not this run's" in how


def test_calibrate_from_trace_prints_its_held_out_steps_as_comments(capsys):
    assert main(["calibrate", "--from-trace", TRACES, "--fit-steps", "1", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["held_out"]
    assert main(["calibrate", "--from-trace", TRACES, "--fit-steps", "1"]) == 0
    text = capsys.readouterr().out
    yaml.safe_load(text)  # still one YAML document
    comment = [line for line in text.splitlines() if line.startswith("# held-out step")]
    assert comment == [
        f"# held-out step {row['step']:<4} measured {row['measured'] * 1e3:.3f} ms   predicted "
        f"{row['predicted'] * 1e3:.3f} ms   error (pred-meas)/meas {row['error'] * 100:+.1f}%"
    ]


def test_a_model_that_sizes_nothing_is_said(capsys):
    # the stored trace recorded its shapes (128 B transfers), which win over --model
    assert main(["calibrate", "--from-trace", TRACES, "--fit-steps", "1", "--model", "gpt3-1.3b"]) == 0
    # (the next note: one fit step is too few for outlier rejection)
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0] == (
        "ppverify: note: --model: the traces record their transfers' shapes, which size the link "
        "(recorded shapes win); --model sized nothing"
    )


def test_a_files_stored_communication_left_out_is_said(tmp_path, capsys):
    # 1F1B p = 2, m = 2 saved with a fixed delay of 1 unit per transfer (optimize --save stores it);
    # measured at 10 ms a unit: F = 10, B = 20 ms. Without the delay the critical path is 90 ms
    # ((m + p - 1)(F + B)); with 10 ms per crossing rank 1's F0 starts at 20, its B0 ends at 50,
    # F1 and B1 run 50..80, B1's gradient reaches rank 0 at 90 and its B1 ends at 110 ms
    from ppverify.core.comm import FixedDelay
    from ppverify.io.json_comm import CommSettings
    from ppverify.io.json_format import save_json

    s = build("1f1b", p=2, m=2)
    f = tmp_path / "s.json"
    save_json(s, f, CostModel.abstract(s.placement), comm=CommSettings(FixedDelay(1.0)))
    assert main(["measure", str(f), "--steps", "1", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["makespan_predicted"] == pytest.approx(0.09)
    assert captured.err.strip() == (
        "ppverify: note: s.json: the file's communication (fixed delay 1 per transfer, sync eager) is not emulated: "
        "the run's transfers take this machine's own time and its prediction charges none; --link-delay 0.01 "
        "emulates the delay (the file's 1 at 10 ms a unit)"
    )
    assert main(["measure", str(f), "--steps", "1", "--json", "--link-delay", "0.01"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["makespan_predicted"] == pytest.approx(0.11) and captured.err == ""


def test_a_preset_without_a_runtime_section_is_not_passed_off_as_a_calibration(capsys):
    # dgx-a100 describes NVLink and InfiniBand links, nothing of this machine's runtime: its line
    # says so; a preset written by calibrate (runtime: section) gets no such remark
    argv = ["measure", "1f1b", "-p", "2", "-m", "1", "--costs", "F=0.002,B=0.004", "--steps", "1", "--no-table"]
    assert main([*argv, "--system", "dgx-a100"]) == 0
    out = capsys.readouterr().out
    assert "\n              (the preset has no runtime: section: its links only, no runtime overhead;" in out
    assert main([*argv, "--system", "examples/systems/calibrated-2core.yaml"]) == 0
    out = capsys.readouterr().out
    assert "calibrated    predicted" in out and "no runtime: section" not in out
