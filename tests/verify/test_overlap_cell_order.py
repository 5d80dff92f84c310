"""An overlapped cell's memory counts its actions in the order written, as PyTorch's runtime runs
an OVERLAP_F_B cell (its sub-actions one after another): written backward first, the backward's
activation is gone before the forward allocates; written forward first, the slot holds both.

By hand, rank 0 of a 2-rank GPipe-like order with one overlapped cell (unit activations):
0F0 and 0F1 hold 2; then
- ``(0B0;0F2)``: 0B0 frees 1 (1 held), 0F2 allocates (2 held): peak 2;
- ``(0F2;0B0)``: 0F2 allocates (3 held), then 0B0 frees: peak 3.
Rank 1 runs 1F/1B alternately: peak 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ppverify.cli import main

RANK1 = "1F0,1B0,1F1,1B1,1F2,1B2\n"


def _file(tmp_path: Path, cell: str) -> str:
    path = tmp_path / "overlap.csv"
    path.write_text(f"0F0,0F1,{cell}OVERLAP_F_B,0B1,0B2\n" + RANK1)
    return str(path)


@pytest.mark.parametrize(("cell", "peak"), [("(0B0;0F2)", 2.0), ("(0F2;0B0)", 3.0)])
def test_peaks_follow_the_cell_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cell: str, peak: float
) -> None:
    path = _file(tmp_path, cell)
    assert main(["simulate", path, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["peak_memory"] == [peak, 1.0]
    # the verifier's proof states the same peaks, and a cap of 2 holds only for the backward-first cell
    assert main(["verify", path, "--memory-cap", "2"]) == (0 if peak == 2 else 1)
    out = capsys.readouterr().out
    if peak == 2:
        assert "proved  memory" in out and "(peaks 2, 1)" in out
    else:  # the forward that allocates is named, with the three activations held then
        assert "device 0 holds 3 activations when 0F2 starts (cap 2)" in out


def test_the_table_engine_counts_the_same(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", _file(tmp_path, "(0B0;0F2)"), "--semantics", "slot", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["peak_memory"] == [2.0, 1.0]


def test_measured_in_pytorchs_runtime(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """PyTorch's runtime, in real worker processes, holds what the order written says: rank 0's
    measured peak is 2 of the measured block's stage activations (800 B each: 1,600 B), as predicted."""
    argv = ["measure", _file(tmp_path, "(0B0;0F2)"), "--costs", "F=0.002,B=0.004", "--steps", "1", "--json"]
    assert main(argv) == 0
    mem = json.loads(capsys.readouterr().out)["memory"]
    assert mem["peaks_measured"] == [2 * mem["stage_activation_bytes"], mem["stage_activation_bytes"]]
    assert mem["peaks_predicted"] == mem["peaks_measured"] and mem["match"]
