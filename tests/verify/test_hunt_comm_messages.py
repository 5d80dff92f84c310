"""The words of a SEND/RECV that no transfer uses (a duplicate, a hand-over within one rank) and of
an engine's deadlock (an overlapped slot, a SEND posted late), found wrong by a bug hunt. Expected
values are derived by hand in the comments."""

from __future__ import annotations

import pytest

from ppverify.core.errors import DeadlockError, InvalidScheduleError
from ppverify.engines import run
from ppverify.io.torch_csv import parse_rows
from ppverify.verify import verify

# 1F1B p=2 m=2 in compute_comms form, with 0SEND_F0 and 1RECV_F0 each written twice
DUP2 = [
    "0UNSHARD,0F0,0SEND_F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0REDUCE_GRAD,0RESHARD",
    "1UNSHARD,1RECV_F0,1RECV_F0,1F0,1RECV_F1,1B0,1SEND_B0,1F1,1B1,1SEND_B1,1REDUCE_GRAD,1RESHARD",
]


def _rows(lines: list[str]):
    return parse_rows([line.split(",") for line in lines])


@pytest.mark.parametrize("sem", ["buffered", "rendezvous"])
def test_a_duplicated_pair_says_it_appears_twice(sem):
    # the k-th SEND meets the k-th RECV: the first pair is 0F0's transfer, the second pair meets
    # itself and sends the one message again; nothing waits forever, and the SEND that was said
    # "never posted" is posted twice. Two completeness violations, as `import` lists them
    # ("0SEND_F0 appears 2 times", "1RECV_F0 appears 2 times")
    r = verify(_rows(DUP2), comm_semantics=sem, pytorch=True)
    msgs = [(v.prop, v.message) for v in r.violations]
    assert msgs == [
        (
            "completeness",
            "1RECV_F0 appears 2 times on rank 1 (and 0SEND_F0 2 times): the step's one message is sent twice",
        ),
        (
            "completeness",
            "0SEND_F0 appears 2 times on rank 0 (and 1RECV_F0 2 times): the step's one message is sent twice",
        ),
    ]
    assert not any("never posted" in v.message for v in r.violations)


def test_a_duplicated_recv_alone_waits_forever_and_says_why():
    # 1RECV_F0 twice, 0SEND_F0 once: the first RECV gets the message, the second waits forever
    lines = [DUP2[0].replace("0SEND_F0,0SEND_F0", "0SEND_F0"), DUP2[1]]
    r = verify(_rows(lines), pytorch=True)
    assert [(v.prop, v.message) for v in r.violations] == [
        (
            "deadlock",
            "rank 1 waits forever in 1RECV_F0: 1RECV_F0 appears 2 times (and 0SEND_F0 once), and no SEND comes for the 2nd",
        )
    ]


def test_a_duplicated_send_alone():
    # 0SEND_F0 twice, 1RECV_F0 once: buffered, the second copy stays in its buffer (no hang, but no
    # transfer: completeness); rendezvous, it blocks rank 0 forever (deadlock). Grouped, the two
    # consecutive SENDs are one posting, named 0SEND_F0+0SEND_F0
    lines = [DUP2[0], DUP2[1].replace("1RECV_F0,1RECV_F0", "1RECV_F0")]
    buf = verify(_rows(lines), pytorch=True)
    assert [(v.prop, v.message) for v in buf.violations] == [
        ("completeness", "0SEND_F0 appears 2 times on rank 0 (and 1RECV_F0 once): no RECV takes the 2nd")
    ]
    rdv = verify(_rows(lines), comm_semantics="rendezvous", pytorch=True)
    assert [(v.prop, v.message) for v in rdv.violations] == [
        (
            "deadlock",
            "rank 0 waits forever in 0SEND_F0+0SEND_F0: 0SEND_F0 appears 2 times (and 1RECV_F0 once), "
            "and no RECV takes the 2nd",
        )
    ]


def test_a_send_recv_within_one_rank_names_the_rule():
    # V placement, p=2: stages 0..3 on ranks 0, 1, 1, 0. Stages 1 and 2 are both on rank 1, which
    # hands 1F0's output to 2F0 without a message, so 1SEND_F0 and 2RECV_F0 (both on rank 1) match
    # no transfer between ranks; the RECV's "SEND" is posted (on its own rank), so "its SEND is
    # never posted" was wrong
    lines = [
        "0UNSHARD,3UNSHARD,0F0,0SEND_F0,3RECV_F0,3F0,3I0,3SEND_B0,3W0,3REDUCE_GRAD,3RESHARD,0RECV_B0,0I0,0W0,0REDUCE_GRAD,0RESHARD",
        "1UNSHARD,2UNSHARD,1RECV_F0,1F0,1SEND_F0,2RECV_F0,2F0,2SEND_F0,2RECV_B0,2I0,2W0,2REDUCE_GRAD,2RESHARD,1I0,1SEND_B0,1W0,1REDUCE_GRAD,1RESHARD",
    ]
    s = _rows(lines)
    assert list(s.placement.maps[0]) == [0, 1, 1, 0]
    r = verify(s, pytorch=True)
    why = "stages 1 and 2 are both on rank 1, which hands microbatch 0's activation over without a message"
    assert [(v.prop, v.rule, v.message) for v in r.violations] == [
        (
            "completeness",
            "SEND/RECV only between stages on different ranks",
            f"2RECV_F0 on rank 1 matches no transfer between ranks: {why}",
        ),
        (
            "completeness",
            "SEND/RECV only between stages on different ranks",
            f"1SEND_F0 on rank 1 matches no transfer between ranks: {why}",
        ),
    ]


@pytest.mark.parametrize("semantics", ["slot", "async", "contention"])
def test_an_overlapped_slot_waiting_on_itself_names_what_it_waits_for(semantics):
    # rank 0's one slot overlaps 0F0 with 0B0, which needs 0F0: the ops of an overlapped slot run at
    # the same time, so no engine times it (verify calls it a dependency violation). Once it was a
    # deadlock whose words named the slot's first op and nothing after "for"; now the engines
    # refuse the slot itself before timing anything, naming the slot, the two ops and the rule
    s = _rows(["(0F0;0B0)OVERLAP_F_B", "1F0,1B0"])  # a CSV takes PyTorch's form only
    with pytest.raises(InvalidScheduleError) as exc:
        run(s, None, semantics=semantics)
    assert str(exc.value).endswith(
        "device 0's slot (0F0;0B0)OVERLAP_F_B runs 0B0 with 0F0, which it needs: "
        "the ops of an overlapped slot run at the same time"
    )


@pytest.mark.parametrize("semantics", ["slot", "async"])
def test_a_late_send_names_the_send_and_what_it_waits_behind(semantics):
    # rank 1 posts 1SEND_B0 after 1F1, which needs 0F1, which rank 0 runs after 0B0, which needs
    # 1B0's gradient: its producer 1B0 has run, so the old words listed nothing after "for"
    s = _rows(
        [
            "0F0,0SEND_F0,0RECV_B0,0B0,0F1,0SEND_F1,0RECV_B1,0B1",
            "1RECV_F0,1F0,1B0,1RECV_F1,1F1,1SEND_B0,1B1,1SEND_B1",
        ]
    )
    with pytest.raises(DeadlockError) as exc:
        run(s, None, semantics=semantics)
    assert str(exc.value) == (
        "deadlock: device 0 waits in 0B0 for 1SEND_B0 on device 1 (posted after 1F1); "
        "device 1 waits in 1F1 for 0F1 on device 0"
    )
