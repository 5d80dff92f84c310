"""Edges of PyTorch's runtime rules found by probing ``verify``/``import`` against a model of
``_PipelineScheduleRuntime`` and real runs (``ppverify measure``): a one-stage file whose backward
of microbatch k runs before k+1 forwards (the step fails, so it is INVALID, not VALID), and SEND/RECV
actions that name a stage pair that does not exist (one line of INVALID, not an internal error).
Expected values are derived by hand in the comments."""

from __future__ import annotations

import pytest

from ppverify.cli import main
from ppverify.core.comm import NO_COMM
from ppverify.core.costs import CostModel
from ppverify.io.torch_csv import parse_rows
from ppverify.io.torch_rules import early_backward, loss_order_problem
from ppverify.verify import verify

# One stage on one rank. The runtime appends each loss as a forward runs and reads microbatch k's
# back as losses[k]; at 0B2 only 0F2 has run (one loss), so index 2 does not exist and the step
# fails with "Loss for microbatch 2 is not available" (what `ppverify measure` of this file shows).
# The lowest microbatch not yet forwarded at that point is 0 (0F0 runs later): the core.
EARLY = [["0F2", "0B2", "0F3", "0B3", "0F0", "0B0", "0F1", "0B1"]]
# Forwards out of order but each backward of microbatch k after k+1 forwards: 0B0 and 0B1 run
# after two losses exist; each loss is back-propagated once, so the gradients are right (measured).
SWAPPED = [["0F1", "0F0", "0B0", "0B1"]]
SWAPPED_SPLIT = [["0F1", "0F0", "0I0", "0W0", "0I1", "0W1"]]


def _verify(rows, pytorch=True):
    s = parse_rows(rows, "f.csv")
    return verify(s, CostModel.unit(s.placement), NO_COMM, pytorch=pytorch)


def test_one_stage_backward_before_its_loss_is_invalid():
    r = _verify(EARLY)
    assert not r.valid
    (v,) = r.violations
    assert v.prop == "pytorch-loss-order"
    assert v.ops == ("0B2", "0F0")
    assert "rank 0 runs 0B2 after 1 forward" in v.message
    rank, bwd, fwd = early_backward(parse_rows(EARLY))
    assert (rank, str(bwd), str(fwd)) == (0, "0B2", "0F0")


@pytest.mark.parametrize("rows", [SWAPPED, SWAPPED_SPLIT, [["0F0", "0B0", "0F1", "0B1"]]])
def test_one_stage_out_of_order_forwards_that_run_stay_valid(rows):
    r = _verify(rows)
    assert r.valid
    assert ("pytorch-loss-order" in {p for p, _ in r.proved}) and loss_order_problem(parse_rows(rows)) is None


def test_one_stage_rule_is_a_note_for_a_json_schedule():
    # not a PyTorch file: the verdict is kept (every dependency holds), a note says why PyTorch cannot run it
    r = _verify(EARLY, pytorch=False)
    assert r.valid and r.runtime_note is not None and "0B2" in r.runtime_note


def test_export_and_verify_cli_refuse_the_early_backward(tmp_path, capsys):
    path = tmp_path / "early.csv"
    path.write_text(",".join(EARLY[0]) + "\n")
    assert main(["verify", str(path)]) == 1
    assert "VIOLATED pytorch-loss-order: rank 0 runs 0B2 after 1 forward" in capsys.readouterr().out
    assert main(["export", str(path)]) == 2
    assert "0B2 after 1 forward" in capsys.readouterr().err


# p=2, stage 1 is the last: 1SEND_F1 sends to a stage 2 that does not exist. It matches no transfer
# (completeness, core 1SEND_F1); rank 1 also posts its gradients B1 before B0 while rank 0 receives
# B0 first, a crossing (pytorch-message-order, core 1SEND_B1 0RECV_B0), so the order problem matches
# messages in posting order, where the bogus SEND must not be looked up as a rank pair.
BOGUS_SEND_CROSSED = (
    "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0REDUCE_GRAD\n"
    "1RECV_F0,1F0,1RECV_F1,1F1,1SEND_F1,1B0,1B1,1SEND_B1,1SEND_B0,1REDUCE_GRAD\n"
)
# m=1: only the bogus SEND is wrong; every transfer of the step is matched
BOGUS_SEND = "0F0,0SEND_F0,0RECV_B0,0B0,0REDUCE_GRAD\n1RECV_F0,1F0,1SEND_F0,1B0,1SEND_B0,1REDUCE_GRAD\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (BOGUS_SEND, {("completeness", ("1SEND_F0",))}),
        (
            BOGUS_SEND_CROSSED,
            {("completeness", ("1SEND_F1",)), ("pytorch-message-order", ("1SEND_B1", "0RECV_B0"))},
        ),
    ],
)
def test_send_to_a_stage_that_does_not_exist_is_invalid_not_a_crash(tmp_path, capsys, text, expected):
    path = tmp_path / "bogus.csv"
    path.write_text(text)
    rows = [line.split(",") for line in text.splitlines()]
    r = _verify(rows)
    assert not r.valid
    assert {(v.prop, v.ops) for v in r.violations} == expected
    assert main(["verify", str(path)]) == 1
    assert main(["import", str(path)]) == 1
    assert "internal error" not in capsys.readouterr().err
