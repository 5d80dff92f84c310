"""``show``, ``simulate`` and ``import`` print activation peaks and the memory-cap line in the unit
``--memory-cap`` counts (one activation: a device's whole share of one microbatch,
``core.memory_unit.exact_unit``), as ``verify`` does; bytes and unit costs unchanged."""

from __future__ import annotations

import json

import pytest

from ppverify.cli import main


def saved_1f1b(capsys, tmp_path, activation: list[float]) -> str:
    """1F1B at p = 2, m = 2 saved with each stage's activation replaced by ``activation``."""
    path = tmp_path / "s.json"
    assert main(["show", "1f1b", "-p", "2", "-m", "2", "--save", str(path), "--no-table"]) == 0
    capsys.readouterr()
    doc = json.loads(path.read_text())
    doc["costs"]["activation"] = activation
    path.write_text(json.dumps(doc))
    return str(path)


def run_json(capsys, *argv: str) -> tuple[int, dict]:
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_stage_activations_2_and_1_print_as_2_and_half(capsys, tmp_path):
    path = saved_1f1b(capsys, tmp_path, [2.0, 1.0])
    # one activation = the largest device share = 2 raw units; 1F1B at p = 2 holds 2 forwards on
    # device 0 (2 x 2 = 4 raw = 2 activations) and 1 on device 1 (1 raw = 0.5 activations)
    code, out = run_json(capsys, "show", path, "--memory-cap", "3")
    assert code == 0 and out["peak_activations"] == [2.0, 0.5] and out["over_memory_cap"] == []
    code, out = run_json(capsys, "simulate", path, "--memory-cap", "3")
    assert code == 0 and out["peak_memory"] == [2.0, 0.5] and out["peak_activations"] == [2.0, 0.5]
    assert out["memory_cap_line"] == "cap 3 activations: every device within it (highest peak 2)"
    assert main(["verify", path, "--memory-cap", "3"]) == 0
    assert "(peaks 2, 0.5)" in capsys.readouterr().out  # the numbers the other commands now print
    code, out = run_json(capsys, "import", path)
    assert out["slot"]["peak_activations"] == [2.0, 0.5]


@pytest.mark.parametrize("command", ["show", "simulate"])
def test_half_activations_over_a_cap_of_one(capsys, tmp_path, command):
    path = saved_1f1b(capsys, tmp_path, [0.5, 0.5])
    # one activation = 0.5 raw (a device holds one stage); device 0 holds 2 x 0.5 = 1 raw = 2
    # activations, over a cap of 1 activation (0.5 raw); device 1 holds 0.5 raw = 1, within it
    assert main([command, path, "--memory-cap", "1", "--no-table"]) == 1
    out = capsys.readouterr().out
    assert "cap 1 activation: device 0 over it (peak 2)" in out
    assert main(["verify", path, "--memory-cap", "1"]) == 1  # the same verdict
    capsys.readouterr()


def test_unit_costs_keep_their_numbers(capsys):
    # 1F1B at p = 4: device d holds p - d forwards of one activation each
    code, out = run_json(capsys, "show", "1f1b", "-p", "4", "-m", "8", "--memory-cap", "3")
    assert code == 1 and out["peak_activations"] == [4.0, 3.0, 2.0, 1.0] and out["over_memory_cap"] == [0]
    code, out = run_json(capsys, "simulate", "1f1b", "-p", "4", "-m", "8", "--memory-cap", "4")
    assert code == 0 and out["peak_memory"] == [4.0, 3.0, 2.0, 1.0]
    # interleaved, v = 2: each stage holds 1/2, and a device's share (one activation) is 1
    code, out = run_json(capsys, "show", "interleaved-1f1b", "-p", "2", "-m", "4", "--v", "2")
    assert max(out["peak_activations"]) == pytest.approx(max(out["formula"]["peak_activations"]))
