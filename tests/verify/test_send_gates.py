"""A ``compute_comms`` file whose SEND is posted after a later compute op than its producer: the
runtime posts the send when its rank reaches it, so the transfer waits for that op. Every timing
level (slot, async, verify's timing proof) holds that; the levels that cannot (contention,
CP-SAT's fixed-order evaluation) refuse the file in one line instead of timing a faster order.

The file (F = B = 1), worked by hand: rank 0 runs 0F0 [0, 1] and 0F1 [1, 2] before posting
0SEND_F0 and 0SEND_F1 (at 2); rank 1 runs 1F0 [2, 3], 1F1 [3, 4], 1B0 [4, 5], sends, 1B1 [5, 6],
sends; rank 0 runs 0B0 [5, 6] and 0B1 [6, 7]: makespan 7, where a send at its producer's end
(1F0 from 1) would finish at 6. With a delay of 1 per transfer: 1F0 [3, 4], 1F1 [4, 5], 1B0
[5, 6], 1B1 [6, 7], 0B0 [7, 8], 0B1 [8, 9]: 9.
"""

from __future__ import annotations

import json

import pytest

from ppverify.cli import main
from ppverify.core.costs import CostModel
from ppverify.engines import run
from ppverify.io import load_schedule

LATE = "0F0,0F1,0SEND_F1,0SEND_F0,0RECV_B0,0B0,0RECV_B1,0B1\n1RECV_F0,1F0,1RECV_F1,1F1,1B0,1SEND_B0,1B1,1SEND_B1\n"


@pytest.fixture
def late(tmp_path):
    f = tmp_path / "late.csv"
    f.write_text(LATE)
    return str(f)


def _verify_json(capsys, argv):
    code = main(argv)
    return code, json.loads(capsys.readouterr().out)


def test_verify_does_not_prove_a_bound_the_file_misses(late, capsys):
    code, rep = _verify_json(capsys, ["verify", late, "--costs", "F=1,B=1", "--makespan-le", "6", "--json"])
    timing = [r for r in rep["violations"] if r["property"] == "timing"]
    assert code == 1 and timing, rep  # 7 > 6: refuted, not proved
    assert "earliest finish is 7" in timing[0]["message"]
    code, rep = _verify_json(capsys, ["verify", late, "--costs", "F=1,B=1", "--makespan-le", "7", "--json"])
    assert not [r for r in rep["violations"] if r["property"] == "timing"]


@pytest.mark.parametrize(("delay", "expected"), [(0, 7.0), (1, 9.0)])
def test_async_and_slot_time_the_send_where_it_is_posted(late, delay, expected):
    s = load_schedule(late)
    costs = CostModel.abstract(s.placement, F=1, B=1)
    from ppverify.core.comm import FixedDelay

    tl = run(s, costs, FixedDelay(delay), semantics="async")
    assert tl.makespan == expected
    # the transfer of 0F0's output starts when 0SEND_F0 is posted (2), not when 0F0 ends (1)
    first = min(float(tl.transfers.start[i]) for i in range(len(tl.transfers)) if tl.transfers.kind[i] == "activation")
    assert first == 2.0
    if delay == 0:
        assert run(s, costs, semantics="slot").makespan == expected  # the table agrees at zero delay


def test_a_file_whose_sends_follow_their_producers_times_as_its_schedule(tmp_path):
    # ppverify's own compute_comms export posts each SEND right after its producer: no gate, the
    # same makespan as the family's schedule (1F1B p = 4, m = 8, F = 1, B = 2: (m + p - 1)(F + B) = 33)
    from ppverify.schedules import build

    out = tmp_path / "c.csv"
    assert main(["export", "1f1b", "-p", "4", "-m", "8", "--format", "torch-csv-comms", "-o", str(out)]) == 0
    s = load_schedule(str(out))
    assert run(s, CostModel.abstract(s.placement, F=1, B=2), semantics="async").makespan == 33.0
    fam = build("1f1b", p=4, m=8)
    assert run(fam, CostModel.abstract(fam.placement, F=1, B=2), semantics="async").makespan == 33.0


def test_levels_that_cannot_hold_the_post_refuse(late, capsys):
    assert main(["simulate", late, "--costs", "F=1,B=1", "--semantics", "contention", "--no-table"]) == 2
    assert "0SEND_F0 after 0F1" in capsys.readouterr().err
    assert main(["optimize", late, "--costs", "F=1,B=1", "--evaluate"]) == 2
    assert "0SEND_F0 after 0F1" in capsys.readouterr().err
