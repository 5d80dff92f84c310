"""An op run before its own input on one device leaves no complete execution: the deadlock
property must not be stated as proved next to that dependencies violation (verify, its JSON and
``ppverify import`` alike).

The file of every test here, by hand: rank 0 runs 0F0 0F1 0B0 0B1 (plain order), rank 1 runs
1B0 1F0 1F1 1B1. 1B0 needs 1F0 (a backward after its own forward), which rank 1 runs after it, so
rank 1 can never start 1B0 and no execution runs all 8 ops.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ppverify.io.torch_csv import parse_rows
from ppverify.schedules import build
from ppverify.verify import verify
from ppverify.verify.import_audit import audit, audit_text

ROWS = [["0F0", "0F1", "0B0", "0B1"], ["1B0", "1F0", "1F1", "1B1"]]


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ppverify", *args], cwd=cwd, capture_output=True, text=True)


def test_the_inversion_is_reported_once_and_deadlock_is_not_proved():
    for semantics in ("buffered", "rendezvous"):
        r = verify(parse_rows(ROWS), comm_semantics=semantics, pytorch=True)
        assert [(v.prop, v.ops) for v in r.violations] == [("dependencies", ("1B0", "1F0"))]
        assert "deadlock" not in dict(r.proved)
        why = dict(r.unchecked)["deadlock"]
        assert why.startswith("no complete execution exists")
        assert "never gets past 1B0" in why  # rank 1 stops at its first op, 1B0


def test_a_json_file_and_the_command_line_alike(tmp_path: Path):
    # the same programs as a ppverify JSON file (linear placement, p=2, m=2)
    linear = {"name": "linear", "maps": [[0, 1]]}
    doc = {"format": "ppverify-schedule", "version": 1, "p": 2, "m": 2, "placement": linear, "programs": ROWS}
    (tmp_path / "c1.json").write_text(json.dumps(doc))
    (tmp_path / "c1.csv").write_text("\n".join(",".join(r) for r in ROWS) + "\n")
    for name in ("c1.json", "c1.csv"):
        out = _cli("verify", name, cwd=tmp_path)
        assert out.returncode == 1, out.stderr
        assert "proved  deadlock" not in out.stdout
        assert "not checked  deadlock: no complete execution exists" in out.stdout
        assert "VIOLATED dependencies: device 1 runs 1B0 before 1F0" in out.stdout
        js = json.loads(_cli("verify", name, "--json", cwd=tmp_path).stdout)
        assert "deadlock" not in [p["property"] for p in js["proved"]]
        assert "deadlock" in [u["property"] for u in js["unchecked"]]


def test_import_does_not_list_deadlock_as_proved():
    rep, _ = audit(parse_rows(ROWS))
    assert "deadlock" not in rep["verifier"]["proved"]
    line = next(x for x in audit_text(rep).splitlines() if x.startswith("Z3 verifier"))
    assert "deadlock" not in line.split("proved:", 1)[1]


def test_a_valid_schedule_and_a_cross_rank_deadlock_are_unchanged():
    # 1F1B p=2 m=2 runs: deadlock freedom is proved, nothing is left unchecked for it
    good = verify(build("1f1b", p=2, m=2))
    assert "deadlock" in dict(good.proved) and "deadlock" not in dict(good.unchecked)
    # rank 0: 0F0 0B0 0F1 0B1, rank 1: 1F0 1F1 1B0 1B1: 0B0 waits for 1B0, behind 1F1, which
    # waits for 0F1, behind 0B0 (a cycle across ranks): a deadlock violation, no unchecked line
    s = build("1f1b", p=2, m=2)
    bad = s.with_programs(tuple(tuple(prog[i] for i in (0, 2, 1, 3)) for prog in s.programs))
    r = verify(bad)
    assert [v.prop for v in r.violations] == ["deadlock"]
    assert "deadlock" not in dict(r.unchecked)
