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
