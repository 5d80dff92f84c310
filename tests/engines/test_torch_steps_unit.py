"""The torch engine counts PyTorch simulator steps, one per action whatever the costs: its outputs
say ``steps`` (the chart's axis, ``--json``'s ``time_unit``, a trace), never the costs' ``units``.

GPipe, p = 2, m = 1, by hand (PyTorch's ``_add_send_recv`` + ``_simulate_comms_compute``): rank 0
runs 0F0 (step 0) and its SEND_F (1); rank 1's RECV_F runs in step 1 too (rank 0 went first in the
round), then 1F0 (2), 1B0 (3), SEND_B (4); rank 0's RECV_B runs in step 4 (the second pass: an idle
rank takes what a later rank just unblocked), then 0B0 (5). Six steps: ops at 0, 2, 3 and 5.
"""

from __future__ import annotations

import dataclasses
import json

from ppverify.cli import main
from ppverify.core.costs import CostModel
from ppverify.engines import run
from ppverify.schedules import build

GPIPE = ["simulate", "gpipe", "-p", "2", "-m", "1"]


def test_the_chart_axis_and_the_device_table_say_steps(capsys) -> None:
    assert main([*GPIPE, "--semantics", "torch", "--width", "6"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    i = lines.index("time    0 .. 6 steps, 1 per column")  # 6 steps over 6 columns
    # one column per step: rank 0 runs F at 0 and B at 5, rank 1 F at 2 and B at 3 (SEND/RECV idle)
    assert lines[i + 1 : i + 3] == ["dev 0  F....B", "dev 1  ..FB.."]
    assert "busy (steps)" in out and "units" not in out


def test_json_and_trace_say_steps(capsys, tmp_path) -> None:
    trace = tmp_path / "t.json"
    assert main([*GPIPE, "--semantics", "torch", "--json", "--trace", str(trace)]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["time_unit"] == "steps" and rep["makespan"] == 6.0
    assert rep["busy"] == [2.0, 2.0]  # two ops of one step each per rank
    assert json.loads(trace.read_text())["otherData"]["time_unit"] == "steps"


def test_a_timed_engine_keeps_the_costs_unit(capsys) -> None:
    # the control: async times the costs (F = 1, B = 2 by default): 1 + 1 + 2 + 2 = 6 units
    assert main([*GPIPE, "--semantics", "async", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["time_unit"] == "units" and rep["makespan"] == 6.0


def test_the_torch_timeline_is_in_steps_whatever_the_costs_unit() -> None:
    s = build("gpipe", p=2, m=1)
    seconds = dataclasses.replace(CostModel.abstract(s.placement, F=0.5, B=1.0), time_unit="s")
    tl = run(s, seconds, semantics="torch")
    assert tl.time_unit == "steps" and tl.makespan == 6.0  # the costs' seconds time nothing
    # memory still from the costs: one microbatch's activation on each rank, freed by its B
    assert tl.peak_memory().tolist() == [1.0, 1.0]
    assert tl.costs.duration == seconds.duration
