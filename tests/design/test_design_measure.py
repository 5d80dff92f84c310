"""``design --measure`` and the saved schedules at the measured level: every frontier schedule
trains in PyTorch's runtime with correct gradients and a measured peak within its budget."""

from __future__ import annotations

import json

import pytest

from ppverify.cli import main
from ppverify.io import load_schedule
from ppverify.measure import measure

pytest.importorskip("torch")


@pytest.mark.slow
def test_saved_frontier_schedules_train_with_correct_gradients(tmp_path, capsys) -> None:
    out = tmp_path / "d"
    argv = ["design", "-p", "2", "-m", "4", "--costs", "F=1,I=1,W=1", "--placements", "linear,v", "--budgets", "1,2"]
    code = main([*argv, "--work-limit", "2", "--no-progress", "--save-dir", str(out), "--measure", "--json"])
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    frontier = [r for r in result["measured"] if r["kind"] == "frontier"]
    assert len(frontier) == len(result["frontier"]) >= 1
    for r in result["measured"]:
        assert r["grad_ok"], r
        assert r["measured_peak"] == pytest.approx(r["predicted_peak"])  # the peak follows the order
    for r in frontier:
        assert r["measured_peak"] <= r["budget"] + 1e-9
    # the saved files themselves, loaded back, train with correct gradients
    first = result["frontier"][0]
    saved = load_schedule(out / f"frontier-00-{first['placement']}-budget{first['budget']:g}.compute_only.csv")
    assert measure(saved, {"F": 0.002, "I": 0.002, "W": 0.002}).grad_check.ok


def test_with_a_preset_the_runs_sleep_the_op_costs_and_emulate_its_link(loopback_preset, capsys) -> None:
    # the design predicts with the preset's 40 ms per action folded into every op; the runs must
    # sleep the ops' own 20 ms (the real runtime adds its own overhead, a few ms per step here)
    # and wait the preset's 30 ms link delay on every crossing
    # this machine's links and a runtime overhead far above the real one
    preset = loopback_preset({"action_overhead_us": 40000, "link_delay_us": 30000})
    argv = ["design", "-p", "2", "-m", "2", "--costs", "F=0.02,I=0.02,W=0.02", "--system", str(preset)]
    code = main([*argv, "--placements", "linear", "--budgets", "2", "--work-limit", "2", "--no-progress", "--measure", "--json"])  # fmt: skip
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    point = result["frontier"][0]
    rows = {r["name"]: r for r in result["measured"]}
    front = next(r for r in result["measured"] if r["kind"] == "frontier")
    assert front["predicted_s"] == pytest.approx(point["time"])  # the design's own prediction
    for r in rows.values():
        assert r["grad_ok"], r
        # at least 5 ops on any critical path (F, I on each rank, the last W), each predicted
        # 40 ms longer than it sleeps: the measured step is 200 ms below the prediction, less
        # the real runtime's own overhead (sleeping the folded costs would put it above)
        assert r["measured_s"] <= r["predicted_s"] - 0.1, r
    # 1F1B p=2 m=2: F on rank 0, a 30 ms crossing, F and I on rank 1, a crossing, I on rank 0,
    # then the last microbatch's W; each crossing waits at least the delay
    one = rows["1f1b-split"]
    assert one["measured_s"] >= 2 * 0.03 + 4 * 0.02
