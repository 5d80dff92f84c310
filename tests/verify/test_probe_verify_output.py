"""``ppverify verify`` output found wrong or silent by probing: options a run would ignore, the
memory statement of a file with ops set aside, ``--memory-cap none``, and ``import``'s list of Z3
violations. Expected values are derived by hand in the comments."""

from __future__ import annotations

import json

import pytest

from ppverify.cli import main
from ppverify.io.torch_csv import parse_rows
from ppverify.verify.import_audit import MAX_LISTED, audit, audit_text


def _one_line_error(capsys, argv: list[str], *needles: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    for needle in needles:
        assert needle in err, err


@pytest.mark.parametrize(
    "extra, option",
    [
        (["--comm-delay", "1"], "--comm-delay"),
        (["--sync", "none"], "--sync"),
        (["--dp-allreduce", "4"], "--dp-allreduce"),
        (["--dp-allreduce"], "--dp-allreduce"),
    ],
)
def test_timing_only_options_without_a_claim_are_refused(capsys, extra, option):
    # only the timing claim reads the transfer times and collectives: before, these were accepted
    # and the verdict (VALID, exit 0) was the same as without them
    _one_line_error(capsys, ["verify", "1f1b", "-p", "2", "-m", "2", *extra], f"parameter {option}=", "--makespan-le")


def test_comm_delay_with_a_claim_is_used(capsys):
    # 1F1B p=2 m=2, F=1, B=2, one unit per transfer: 0F0 [0,1] -> 1F0 [2,3], 1B0 [3,5] -> 0B0 [6,8];
    # 0F1 [1,2] -> 1F1 [5,6] (after 1B0), 1B1 [6,8] -> 0B1 starts at max(8, 8 + 1) = 9, ends at 11
    base = ["verify", "1f1b", "-p", "2", "-m", "2", "--costs", "F=1,B=2", "--comm-delay", "1"]
    assert main([*base, "--makespan-le", "11"]) == 0
    assert main([*base, "--makespan-le", "10.5"]) == 1
    capsys.readouterr()


def test_ungrouped_needs_rendezvous(capsys):
    # a buffered SEND never blocks, so posting SEND/RECV one by one changes nothing there
    _one_line_error(
        capsys, ["verify", "1f1b", "-p", "2", "-m", "2", "--ungrouped"], "--ungrouped", "comm-semantics=buffered"
    )
    assert main(["verify", "1f1b", "-p", "2", "-m", "2", "--ungrouped", "--comm-semantics", "rendezvous"]) in (0, 1)
    capsys.readouterr()


@pytest.mark.parametrize("value", ["0", "-3"])
def test_max_violations_below_one_is_refused(capsys, value):
    # read as 1 without a word before
    _one_line_error(capsys, ["verify", "1f1b", "-p", "2", "--max-violations", value], "parameter --max-violations=")


def test_memory_statement_names_the_ops_it_covers(tmp_path, capsys):
    # 1F1B p=2 m=2 without 0B1: 7 of the 8 ops are left (none is set aside: a missing op is not in
    # the file). Device 0 holds 0F0 and 0F1 when 0F1 starts (2), device 1 one at a time (1): the
    # cap of 2 holds for the ops left, which the statement must say, as the order statements do
    path = tmp_path / "miss.csv"
    path.write_text("0F0,0F1,0B0\n1F0,1B0,1F1,1B1\n")
    assert main(["verify", str(path), "--memory-cap", "2", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    proved = {p["property"]: p["statement"] for p in out["proved"]}
    assert proved["memory"].endswith("(peaks 2, 1) (for the 7 ops that pass the structural rules)")
    assert [v["core"] for v in out["violations"]] == [["0B1"]]


def test_memory_statement_of_a_whole_file_has_no_scope(tmp_path, capsys):
    path = tmp_path / "ok.csv"
    path.write_text("0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n")
    assert main(["verify", str(path), "--memory-cap", "2"]) == 0
    assert "(peaks 2, 1)\n" in capsys.readouterr().out


def test_memory_cap_none_says_it_was_given(capsys):
    # zbv p=2: two stages per device, so a cap prints a second line in the other unit; for `none`
    # that line read "memory unlimited memory" and the reason "no memory cap given"
    assert main(["verify", "zbv", "-p", "2", "-m", "2", "--memory-cap", "none"]) == 0
    out = capsys.readouterr().out
    assert "not checked  memory: --memory-cap none: unlimited memory, nothing to check" in out
    assert "no memory cap given" not in out and "memory unlimited memory" not in out
    assert main(["verify", "zbv", "-p", "2", "-m", "2", "--memory-cap", "none", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"property": "memory", "reason": "--memory-cap none: unlimited memory, nothing to check"} in data[
        "unchecked"
    ]


def test_import_counts_the_z3_violations_it_does_not_list():
    # 1F1B p=2 over m=13 microbatches with only microbatch 12 written: 0F0..0B11 and 1F0..1B11 are
    # missing, 2 kinds x 2 stages x 12 microbatches = 48 completeness violations
    rows = [["0F12", "0B12"], ["1F12", "1B12"]]
    rep, _ = audit(parse_rows(rows, m=13))  # inferred, the gap 0..11 would be refused as a typo at 0F12
    n = len(rep["verifier"]["violations"])
    assert n == 48
    text = audit_text(rep)
    assert f"INVALID, {n} violation(s)" in text
    assert f"  ... and {n - MAX_LISTED} more" in text


def test_prove_json_says_what_it_left_out(capsys):
    # interleaved-1f1b at F=2,B=1: PyTorch's order is derived for F <= B only and m = k p at F=B=1
    # only, so just Megatron's order at m = p (v = 2 and 3) is proved; the text said so in two
    # notes, the JSON listed fewer results without a word
    assert main(["prove", "interleaved-1f1b", "--costs", "F=2,B=1", "--json"]) == 0
    captured = capsys.readouterr()
    settings = {r["setting"] for r in json.loads(captured.out)}
    assert settings and all("order=megatron" in s for s in settings), settings
    assert "derived for F <= B, not proved here" in captured.err
    assert "derived at F=1,B=1 only, not proved here" in captured.err


def test_completeness_counts_a_misplaced_op(tmp_path, capsys):
    # 1F1B p=3 m=3 with 1F2 written on rank 2: 3 stages x 3 microbatches x (F, B) = 18 required
    # ops, each present once; the misplaced one is a placement fault, not a missing op (the
    # statement said 17, the ops left for the order checks)
    path = tmp_path / "moved.csv"
    path.write_text("0F0,0F1,0F2,0B0,0B1,0B2\n1F0,1F1,1B0,1B1,1B2\n2F0,2B0,2F1,2B1,1F2,2F2,2B2\n")
    assert main(["verify", str(path), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    proved = {p["property"]: p["statement"] for p in out["proved"]}
    assert proved["completeness"].startswith("each of the 18 required ops exactly once")
    assert [(v["property"], v["core"]) for v in out["violations"]] == [("placement", ["1F2"])]


CHIMERA_TABLE = """\
tick    0   1   2   3   4   5   6   7   8   9
dev 0 0F0 0F1   . 3F2 3B2 3F3 3B3 0B0   . 0B1
dev 1   . 1F0 2F2 1F1 2F3 2B2 1B0 2B3 1B1   .
dev 2   . 1F2 2F0 1F3 2F1 2B0 1B2 2B1 1B3   .
dev 3 0F2 0F3   . 3F0 3B0 3F1 3B1 0B2   . 0B3
"""


def test_a_two_pipe_text_table_is_verified_with_its_placement(tmp_path, capsys):
    # Chimera p=4 m=4 drawn at F=B=1 (microbatches 2, 3 go up pipe 1: stage s on device 3-s). Read
    # as linear, half its ops are on the "wrong" device; with --placement bidirectional it is
    # VALID: 4 stages x 4 microbatches x (F, B) = 32 ops, and its makespan without the replica
    # all-reduce is Chimera's 3p - 2 = 10 at F=B=1 (Li & Hoefler, m = p)
    path = tmp_path / "chimera.txt"
    path.write_text(CHIMERA_TABLE)
    assert main(["verify", str(path)]) == 1
    assert "VIOLATED placement: op 3F2 is on device 0" in capsys.readouterr().out
    argv = ["verify", str(path), "--placement", "bidirectional", "--costs", "F=1,B=1", "--sync", "none"]
    assert main([*argv, "--makespan-le", "10"]) == 0
    assert "each of the 32 required ops exactly once" in capsys.readouterr().out
    assert main([*argv, "--makespan-le", "9.5"]) == 1
    capsys.readouterr()


def test_placement_is_refused_beside_a_family_or_another_file(tmp_path, capsys):
    _one_line_error(capsys, ["verify", "1f1b", "--placement", "v"], "only a text table (.txt) takes --placement")
    path = tmp_path / "s.csv"
    path.write_text("0F0,0B0\n1F0,1B0\n")
    _one_line_error(capsys, ["verify", str(path), "--placement", "v"], "only a text table (.txt) takes --placement")
