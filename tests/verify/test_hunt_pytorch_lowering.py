"""``verify`` checks a compute_only PyTorch CSV with the SEND/RECV PyTorch's runtime places when it
lowers the file, as ``import`` does, so the two commands give one verdict; a family or a ppverify
JSON file keeps the derived policy. Expected values are derived by hand in the comments."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ppverify.cli import main
from ppverify.io.torch_csv import parse_rows
from ppverify.verify import verify

DATA = Path(__file__).resolve().parents[1] / "data" / "torch"

# 1F1B, p=2, m=2: rank 0 runs F0 F1 B0 B1, rank 1 runs F0 B0 F1 B1
ONE_F_ONE_B = "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n"


def _verdict(capsys, argv: list[str]) -> bool:
    rc = main(argv)
    capsys.readouterr()
    assert rc in (0, 1), argv
    return rc == 0


def test_pytorch_lowering_places_the_receives_early():
    # PyTorch's _add_send_recv visits the ranks in order each round and places one action per rank;
    # a RECV goes into the receiving rank's list the moment its SEND is placed:
    # round 1: rank 0 places 0F0 (+0SEND_F0, rank 1 gets 1RECV_F0), rank 1 places 1F0;
    # round 2: rank 0 places 0F1 (+0SEND_F1, rank 1 gets 1RECV_F1), rank 1 places 1B0 (+1SEND_B0,
    # rank 0 gets 0RECV_B0); round 3: 0B0, 1F1; round 4: rank 0 waits for 1B1, rank 1 places 1B1
    # (+1SEND_B1, rank 0 gets 0RECV_B1); round 5: 0B1
    from ppverify.verify.comm_model import pytorch_lowering

    lowered = pytorch_lowering(parse_rows([r.split(",") for r in ONE_F_ONE_B.split()]))
    assert lowered is not None
    assert [[str(a) for a in prog] for prog in lowered.programs] == [
        ["0F0", "0SEND_F0", "0F1", "0SEND_F1", "0RECV_B0", "0B0", "0RECV_B1", "0B1"],
        ["1RECV_F0", "1F0", "1RECV_F1", "1B0", "1SEND_B0", "1F1", "1B1", "1SEND_B1"],
    ]


def test_a_csv_is_verified_as_pytorch_lowers_it_a_json_file_by_the_derived_policy(tmp_path, capsys):
    # Ungrouped rendezvous. Derived policy (SEND right after the producer, RECV right before the
    # consumer): rank 0 = 0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0B0 ..., rank 1 = 1RECV_F0 1F0 1B0
    # 1SEND_B0 1RECV_F1 1F1 ...: 0SEND_F1 waits for 1RECV_F1, behind 1SEND_B0, which waits for
    # 0RECV_B0, behind 0SEND_F1: a cycle of those four actions. PyTorch's lowering (test above)
    # posts 1RECV_F1 before 1B0, so 0SEND_F1 meets it, then 1SEND_B0 meets 0RECV_B0, then
    # 1SEND_B1 meets 0RECV_B1: the step completes
    csv = tmp_path / "1f1b.csv"
    csv.write_text(ONE_F_ONE_B)
    args = ["--comm-semantics", "rendezvous", "--ungrouped", "--json"]
    assert main(["verify", str(csv), *args]) == 0
    out = json.loads(capsys.readouterr().out)
    deadlock = {p["property"]: p["statement"] for p in out["proved"]}["deadlock"]
    assert "SEND/RECV placed by PyTorch's lowering" in deadlock
    js = tmp_path / "1f1b.json"
    assert main(["export", str(csv), "--format", "json", "-o", str(js)]) == 0
    capsys.readouterr()
    assert main(["verify", str(js), *args]) == 1
    out = json.loads(capsys.readouterr().out)
    assert [(v["property"], sorted(v["core"])) for v in out["violations"]] == [
        ("deadlock", ["0RECV_B0", "0SEND_F1", "1RECV_F1", "1SEND_B0"])
    ]


def test_a_family_keeps_the_derived_policy():
    # the same 1F1B built as a family: derived policy, the cycle above
    from ppverify.schedules import build

    r = verify(build("1f1b", p=2, m=2), comm_semantics="rendezvous", group=False)
    assert not r.valid and sorted(r.violations[0].ops) == ["0RECV_B0", "0SEND_F1", "1RECV_F1", "1SEND_B0"]


@pytest.mark.parametrize("source", ["zbv", "interleaved-1f1b", "dualpipev", "dualpipev_4rank_10mb.csv"])
def test_verify_and_import_give_one_verdict(tmp_path, capsys, source):
    # the bug hunt's files: `verify` said INVALID (deadlock) under rendezvous where `import`, which
    # lowers the file as PyTorch does, said VALID. Both now check what PyTorch's runtime runs, so
    # the verdicts agree under both semantics; every family is VALID under buffered semantics
    # (docs/verification.md), where both placements are exactly the step's DAG
    path = tmp_path / "s.csv"
    if source.endswith(".csv"):
        shutil.copy(DATA / source, path)
    else:
        assert main(["export", source, "-p", "4", "-m", "8", "-o", str(path)]) == 0
        capsys.readouterr()
    verdicts = {}
    for sem in ("buffered", "rendezvous"):
        verdicts[sem] = _verdict(capsys, ["verify", str(path), "--comm-semantics", sem])
        assert _verdict(capsys, ["import", str(path), "--comm-semantics", sem]) == verdicts[sem], sem
    assert verdicts["buffered"] is True


def test_a_file_with_a_missing_op_is_not_lowered():
    # 0B1 missing: PyTorch's validation refuses the file, so nothing is lowered; were it lowered,
    # 1B1's SEND and the RECV before the missing 0B1 would be reported again. One violation: 0B1
    r = verify(parse_rows([["0F0", "0F1", "0B0"], ["1F0", "1B0", "1F1", "1B1"]]), pytorch=True)
    assert [v.ops for v in r.violations] == [("0B1",)]


def test_import_does_not_lower_a_file_with_a_missing_op_either():
    # the same file through `import`: it lowered it, and said 0RECV_B1 "waits forever: its SEND is
    # never posted" and 1SEND_B1 "matches no transfer", both for the transfer into the missing 0B1
    from ppverify.verify.import_audit import audit

    rep, _ = audit(parse_rows([["0F0", "0F1", "0B0"], ["1F0", "1B0", "1F1", "1B1"]]))
    assert rep["verifier"]["violations"] == [
        "completeness: op 0B1 is missing (should run on device 0) [each required op exactly once; core: 0B1]"
    ]
    assert rep["verifier"]["send_recv"] == "derived"
