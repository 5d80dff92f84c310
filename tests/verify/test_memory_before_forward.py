"""A backward before its own forward on one device frees what the device does not hold: no
memory bound is proved for it (docs/memory.md), as deadlock freedom is not stated either."""

from __future__ import annotations

import json

from ppverify.cli import main
from ppverify.core.costs import CostModel
from ppverify.core.dag import build_dag
from ppverify.schedules import build
from ppverify.verify.memory import frees_before_forward

NEG = {
    "format": "ppverify-schedule",
    "version": 1,
    "p": 2,
    "m": 3,
    "placement": {"name": "linear", "maps": [[0, 1]]},
    "programs": [["0F0", "0B2", "0F1", "0F2", "0B0", "0B1"], ["1F0", "1B0", "1F1", "1B1", "1F2", "1B2"]],
}


def test_no_memory_proof_beside_a_backward_before_its_forward(tmp_path, capsys):
    # as written, device 0 holds 0F0, 0F1 and 0F2 at once after 0F2 starts: 3 activations, over
    # a cap of 2; counting 0B2's free before 0F2 allocated it would have said 2 (proved)
    path = tmp_path / "neg.json"
    path.write_text(json.dumps(NEG))
    assert main(["verify", str(path), "--memory-cap", "2"]) == 1
    out = capsys.readouterr().out
    assert "proved  memory" not in out
    assert "not checked  memory: device 0 runs 0B2 before 0F2" in out
    assert "VIOLATED dependencies: device 0 runs 0B2 before 0F2" in out


def test_frees_before_forward_names_each_device_once():
    s = build("1f1b", p=2, m=2)
    assert frees_before_forward(build_dag(s), CostModel.unit(s.placement)) == []  # 1F1B as built
    # device 1 runs 1B1 before 1F1 and 1B0 before 1F0: only its first such op is named
    p1 = s.programs[1]
    by_name = {str(op): op for op in p1}
    bad = s.with_programs((s.programs[0], tuple(by_name[n] for n in ("1B0", "1F0", "1B1", "1F1"))))
    found = frees_before_forward(build_dag(bad, check=False), CostModel.unit(s.placement))
    assert [(d, str(op), str(f)) for d, op, f in found] == [(1, "1B0", "1F0")]
