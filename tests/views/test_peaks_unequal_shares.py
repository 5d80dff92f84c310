"""Peaks on a map of unequal shares (0,1,1), found by a differential fuzz: simulate printed
8/3 "within" a cap of 2.5 while verify proved peaks 1 and 2.

By hand: three stages on two devices, each stage p/S = 2/3 in the cost model's unit; one
activation is the largest device's sum, 2 x 2/3 = 4/3. Device 0 (stage 0) holds two microbatches'
stage 0: 4/3 = 1 activation; device 1 (stages 1, 2) holds two microbatches' two stages: 8/3 = 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ppverify.cli import main


def test_simulate_and_verify_print_one_unit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "u.csv"
    path.write_text("0F0,0F1,0B0,0B1\n1F0,2F0,1F1,2F1,2B0,1B0,2B1,1B1\n")
    assert main(["simulate", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["peak_activations"] == [1.0, 2.0]
    assert main(["simulate", str(path), "--memory-cap", "2.5", "--no-table"]) == 0
    assert "every device within it (highest peak 2)" in capsys.readouterr().out
    assert main(["verify", str(path), "--memory-cap", "2.5"]) == 0
    assert "(peaks 1, 2)" in capsys.readouterr().out
