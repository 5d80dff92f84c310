"""One function names the transfer a SEND/RECV belongs to and the ranks it joins, for the two
places that need it: PyTorch's message order (:mod:`ppverify.io.torch_rules`, which had its own
``_message``) and the verifier's order model (:mod:`ppverify.verify.comm_model` with
:func:`ppverify.verify.action_placement.transfer_key`, which had ``_rank_pair``)."""

from __future__ import annotations

import pytest

from ppverify.core.ops import Comm
from ppverify.io import torch_rules
from ppverify.io.torch_csv import parse_rows
from ppverify.io.torch_rules import crossed_messages, transfer_key, transfer_ranks, unmatched_pairs
from ppverify.verify import action_placement, comm_model

# a V placement of 4 stages on 2 ranks: stage -> rank
V = (0, 1, 1, 0)


@pytest.mark.parametrize(
    "action, key",
    [
        # a SEND names its own stage; a RECV the stage it receives at, sent from the one before
        # (F) or after (B) it
        (Comm("SEND_F", 1, 3), ("F", 1, 3)),
        (Comm("RECV_F", 2, 3), ("F", 1, 3)),
        (Comm("SEND_B", 2, 0), ("B", 2, 0)),
        (Comm("RECV_B", 1, 0), ("B", 2, 0)),
    ],
)
def test_a_send_and_its_recv_name_one_transfer(action, key):
    assert transfer_key(action) == key


@pytest.mark.parametrize(
    "key, ranks",
    [
        (("F", 0, 0), (0, 1)),  # stage 0 (rank 0) -> stage 1 (rank 1)
        (("F", 1, 0), (1, 1)),  # stage 1 -> 2, both on rank 1: a hand-over, no message
        (("F", 2, 0), (1, 0)),  # stage 2 (rank 1) -> stage 3 (rank 0)
        (("B", 3, 0), (0, 1)),  # gradient of stage 3 (rank 0) -> stage 2 (rank 1)
        (("B", 1, 0), (1, 0)),  # stage 1 (rank 1) -> stage 0 (rank 0)
        (("F", 3, 0), None),  # the last stage sends no activation: no stage 4
        (("B", 0, 0), None),  # stage 0 sends no gradient: no stage -1
    ],
)
def test_the_ranks_of_a_transfer_follow_the_stage_map(key, ranks):
    assert transfer_ranks(key, V) == ranks


def test_the_verifier_and_the_pytorch_rules_share_the_functions():
    assert action_placement.transfer_key is torch_rules.transfer_key
    assert comm_model.transfer_key is torch_rules.transfer_key
    assert comm_model.transfer_ranks is torch_rules.transfer_ranks
    assert not hasattr(comm_model, "_rank_pair") and not hasattr(torch_rules, "_message")


def test_a_misplaced_recv_counts_on_the_rank_it_is_written_on():
    # 1RECV_F0 written on rank 0, whose stage 1 lives on rank 1: PyTorch's runtime posts it on
    # rank 0, so the pair (0 -> 0) carries no message, and rank 1 never receives 0SEND_F0: the
    # pair (0 -> 1) has a SEND without a RECV
    rows = [["0F0", "0SEND_F0", "1RECV_F0", "0RECV_B0", "0B0"], ["1F0", "1B0", "1SEND_B0"]]
    assert unmatched_pairs(parse_rows(rows)) == [(0, 1)]


def test_crossed_messages_name_the_pair_by_the_stage_map():
    # p=2 1F1B, rank 1 sends the gradients of microbatches 1 then 0, rank 0 receives 0 then 1:
    # rank 1's first message to rank 0 (1SEND_B1) meets 0RECV_B0
    rows = [
        ["0F0", "0SEND_F0", "0F1", "0SEND_F1", "0RECV_B0", "0B0", "0RECV_B1", "0B1"],
        ["1RECV_F0", "1F0", "1RECV_F1", "1F1", "1B0", "1B1", "1SEND_B1", "1SEND_B0"],
    ]
    (c,) = crossed_messages(parse_rows(rows))
    assert (c.src, c.dst, c.nth, str(c.send), str(c.recv), c.payload) == (1, 0, 0, "1SEND_B1", "0RECV_B0", ("B", 1, 1))
