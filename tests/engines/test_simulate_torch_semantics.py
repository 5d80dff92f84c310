"""`ppverify simulate FILE.csv --semantics torch` reproduces PyTorch's own step count.

113 steps for the zb1p 2-rank fixture is the number PyTorch's test suite asserts for that file
(see tests/data/torch/PROVENANCE.md)."""

from __future__ import annotations

import json
from pathlib import Path

from ppverify.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "torch"


def test_simulate_torch_semantics_step_count(capsys):
    code = main(["simulate", str(DATA / "zb1p_2rank_2stagep_comms.csv"), "--semantics", "torch", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["makespan"] == 113
    assert out["semantics"] == "torch"
