"""The audit behind ``ppverify import`` (:mod:`ppverify.verify.import_audit`) on hand-written
PyTorch action rows whose verdicts follow from the rules by hand."""

from __future__ import annotations

from ppverify.core.costs import CostModel
from ppverify.io.torch_csv import parse_rows
from ppverify.verify.import_audit import MAX_LISTED, audit, audit_text, cell_counts

# 1F1B on two ranks, two microbatches, as PyTorch's CSV writes it (empty cells idle)
GOOD = [["0F0", "0F1", "", "0B0", "", "0B1"], ["", "1F0", "1B0", "1F1", "1B1"]]


def test_a_valid_file():
    s = parse_rows(GOOD)
    assert cell_counts(s) == {"compute": 8, "overlapped_cells": 0, "comm": 0, "marker": 0, "idle": 3}
    rep, tl = audit(s)
    assert rep["valid"] and rep["structure"]["ok"] and rep["order"]["ok"] and rep["verifier"]["valid"]
    # slot table of 1F1B p=2 m=2 with unit slots: 2(m + p - 1) = 6 ticks
    assert rep["slot"]["makespan"] == 6.0 and tl.makespan == 6.0
    assert rep["verifier"]["send_recv"] == "placed by PyTorch's lowering"
    text = audit_text(rep)
    assert text.splitlines()[-1] == "verdict       VALID"
    assert "structure     ok" in text and "order         ok" in text


def test_costs_time_the_table():
    s = parse_rows(GOOD)
    rep, _ = audit(s, CostModel.abstract(s.placement, F=1, B=2))
    # 1F1B p=2 m=2, F=1 B=2: (m + p - 1)(F + B) = 9
    assert rep["slot"]["makespan"] == 9.0


def test_a_missing_op_is_a_structure_problem_and_nothing_is_timed():
    rep, tl = audit(parse_rows([["0F0", "0F1", "0B1"], ["1F0", "1B0", "1F1", "1B1"]], m=2))
    assert not rep["valid"] and not rep["structure"]["ok"] and tl is None
    assert rep["structure"]["problems"] == ["op 0B0 is missing (should run on device 0)"]
    assert rep["order"] == {"ok": None, "problem": None}
    assert "order         not checked (fix the structure first)" in audit_text(rep)


def test_a_rank_waiting_on_itself_is_an_order_problem():
    # rank 1 queues its backward before the forward it needs: it can never start
    rep, _ = audit(parse_rows([["0F0", "0B0"], ["1B0", "1F0"]]))
    assert not rep["valid"] and rep["structure"]["ok"] and rep["order"]["ok"] is False
    assert rep["order"]["problem"].startswith("deadlock:")
    assert rep["verifier"]["valid"] is False and "1B0 before 1F0" in rep["verifier"]["violations"][0]


def test_long_problem_lists_are_cut():
    m = MAX_LISTED + 5
    rows = [[f"0F{i}" for i in range(m)], [f"1F{i}" for i in range(m)]]  # every backward missing
    rep, _ = audit(parse_rows(rows, m=m))
    text = audit_text(rep)
    assert f"... and {len(rep['structure']['problems']) - MAX_LISTED} more" in text


def test_order_ok_of_a_comms_file_says_it_leaves_send_recv_out(tmp_path, capsys):
    # 1F1B p=2 m=2 lowered, rank 1's 1SEND_B0 removed: rank 0's 0RECV_B0 waits forever (Z3:
    # deadlock), while the slot engine, which runs compute ops only, finishes; its "order ok" read
    # as if the lists ran to completion
    path = tmp_path / "c.csv"
    path.write_text(
        "0UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0REDUCE_GRAD,0RESHARD\n"
        "1UNSHARD,1RECV_F0,1F0,1RECV_F1,1B0,1F1,1B1,1SEND_B1,1REDUCE_GRAD,1RESHARD\n",
        encoding="utf-8",
    )
    from ppverify.cli import main

    assert main(["import", str(path)]) == 1
    out = capsys.readouterr().out
    assert "1SEND_B0 is missing (rank 1, after 1B0)" in out and "deadlock: rank 0 waits forever in 0RECV_B0" in out
    assert "order         ok: every rank's compute ops run to completion in order (SEND/RECV are" in out
    assert "list runs to completion" not in out
