"""Core model: action text, placements, the step DAG, cost models, list scheduling, metrics.

Expected values are worked out by hand in the comments."""

from __future__ import annotations

import pytest

from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel, complete_costs, parse_costs
from ppverify.core.dag import build_dag, predecessors, required_ops, structural_problems
from ppverify.core.errors import DeadlockError, InvalidScheduleError, ParameterError
from ppverify.core.ops import ActionSyntaxError, Comm, Marker, Op, Overlap, format_action, parse_action
from ppverify.core.placement import bidirectional, custom, linear, loop, v_shape, wave
from ppverify.core.schedule import Schedule
from ppverify.engines import run
from ppverify.engines.core import list_schedule
from ppverify.schedules import build


@pytest.mark.parametrize(
    "text,expected",
    [
        ("0F1", Op("F", 0, 1)),
        ("12I3", Op("I", 12, 3)),
        ("3SEND_F1", Comm("SEND_F", 3, 1)),
        ("1RECV_B2", Comm("RECV_B", 1, 2)),
        ("0UNSHARD", Marker("UNSHARD", 0)),
        ("0REDUCE_GRAD", Marker("REDUCE_GRAD", 0)),
        ("(0F7;7B3)OVERLAP_F_B", Overlap((Op("F", 0, 7), Op("B", 7, 3)))),
        ("", None),
    ],
)
def test_action_text_round_trip(text, expected):
    assert parse_action(text) == expected
    assert format_action(parse_action(text)) == text


def test_compact_overlap_text_reads_as_the_long_form():
    o = Overlap((Op("F", 0, 7), Op("B", 7, 3)))
    assert o.compact == "0F7&7B3" and parse_action("0F7&7B3") == o == parse_action(str(o))
    for bad in ("0F7&", "&7B3", "0F7&7X3", "0F7&&7B3"):
        with pytest.raises(ActionSyntaxError, match="is not an action"):
            parse_action(bad)


@pytest.mark.parametrize("text", ["(0B0;0B1)OVERLAP_F_B", "0F1&1F0", "(0F1;1B0;2B3)OVERLAP_F_B", "0W0&1I1"])
def test_an_overlapped_slot_is_one_forward_and_one_backward(text):
    # OVERLAP_F_B runs a forward beside a backward; two of a kind (or three ops) timed as one slot
    # would claim a concurrency no runtime has, so such a cell is refused where it is read
    with pytest.raises(ActionSyntaxError, match=r"exactly one forward \(F\) and one backward"):
        parse_action(text)
    assert parse_action("0W0&1F1") == Overlap((Op("W", 0, 0), Op("F", 1, 1)))  # either order


@pytest.mark.parametrize("bad", ["0F1xyz", "F1", "0X1", "0F", "-1F0", "(0F1)OVERLAP_F_B", "0SEND_X1"])
def test_bad_action_text_rejected(bad):
    with pytest.raises(ActionSyntaxError, match="is not an action"):
        parse_action(bad)


def test_named_placements():
    assert linear(4).maps == ((0, 1, 2, 3),)
    assert loop(3, 2).maps == ((0, 1, 2, 0, 1, 2),)
    assert v_shape(2).maps == ((0, 1, 1, 0),)
    # Hanayo W=1 on p=2 is a V; W=2 repeats it
    assert wave(2, 1).maps == v_shape(2).maps
    assert wave(2, 2).maps == ((0, 1, 1, 0, 0, 1, 1, 0),)
    assert bidirectional(4).maps == ((0, 1, 2, 3), (3, 2, 1, 0))
    assert bidirectional(4).stages_on(0) == [(0, 0), (1, 3)]
    # share per stage: interleaved v=2 -> 1/2, Chimera's replicas are whole shares
    assert loop(4, 2).share_per_stage == 0.5
    assert bidirectional(4).share_per_stage == 1.0
    with pytest.raises(ParameterError, match="device must be in 0..1"):
        custom(2, [[0, 2]])


def test_predecessors_follow_the_step_dag():
    S = 4
    assert predecessors(Op("F", 0, 0), S, False) == []
    assert [o for o, _ in predecessors(Op("F", 2, 5), S, False)] == [Op("F", 1, 5)]
    # last stage backward only waits for its own forward
    assert [o for o, _ in predecessors(Op("B", 3, 1), S, False)] == [Op("F", 3, 1)]
    assert [o for o, _ in predecessors(Op("B", 1, 1), S, False)] == [Op("F", 1, 1), Op("B", 2, 1)]
    # with split backward the gradient flows from I, and W follows its own I
    assert [o for o, _ in predecessors(Op("I", 1, 1), S, True)] == [Op("F", 1, 1), Op("I", 2, 1)]
    assert [o for o, _ in predecessors(Op("W", 1, 1), S, True)] == [Op("I", 1, 1)]


def test_required_ops_counts():
    s = build("gpipe", p=3, m=5)
    assert len(required_ops(s)) == 2 * 3 * 5
    assert sorted(map(str, required_ops(s))) == sorted(map(str, s.ops()))


def _gpipe_programs(p, m):
    return [list(prog) for prog in build("gpipe", p=p, m=m).programs]


def test_structural_problems_name_each_fault():
    s = build("gpipe", p=2, m=2)
    progs = _gpipe_programs(2, 2)
    dup = [progs[0] + [Op("F", 0, 0)], progs[1]]
    assert structural_problems(s.with_programs(tuple(map(tuple, dup)))) == ["op 0F0 appears twice (devices 0 and 0)"]
    moved = [progs[0][:-1], progs[1] + [Op("B", 0, 1)]]
    probs = structural_problems(s.with_programs(tuple(map(tuple, moved))))
    assert "op 0B1 is on device 1 but its stage lives on device 0 for pipe 0" in probs
    out = [progs[0] + [Op("F", 0, 7)], progs[1]]
    assert structural_problems(s.with_programs(tuple(map(tuple, out)))) == [
        "op 0F7 on device 0: stage must be in 0..1 and microbatch in 0..1"
    ]
    mixed = [progs[0] + [Op("W", 0, 0)], progs[1]]
    probs = structural_problems(s.with_programs(tuple(map(tuple, mixed))))
    assert "stage 0 mb 0 has both a full backward B and a split I/W" in probs
    assert "op 0I0 is missing (should run on device 0)" in probs


def test_list_schedule_by_hand():
    # GPipe p=2, m=1, F=1, B=2: 0F0 [0,1], 1F0 [1,2], 1B0 [2,4], 0B0 [4,6]
    s = build("gpipe", p=2, m=1)
    dag = build_dag(s)
    start, end = list_schedule(dag, [1, 2, 1, 2])
    assert dict(zip(map(str, dag.ops), zip(start, end))) == {"0F0": (0, 1), "0B0": (4, 6), "1F0": (1, 2), "1B0": (2, 4)}
    # a delay of 0.5 on each crossing edge: 1F0 at 1.5, 1B0 ends 4.5, 0B0 starts 5
    delay = [[0.5 if c else 0.0 for c in row] for row in dag.cross]
    start, end = list_schedule(dag, [1, 2, 1, 2], delay)
    assert max(end) == 7.0


def test_deadlock_is_reported_with_waiting_devices():
    # device 1 runs its backward before its forward: nothing can ever start 1B0
    s = Schedule(linear(2), 1, ((Op("F", 0, 0), Op("B", 0, 0)), (Op("B", 1, 0), Op("F", 1, 0))), (0,))
    with pytest.raises(DeadlockError) as exc:
        run(s, semantics="slot")
    assert exc.value.waits[0][0] == 0 and exc.value.waits[0][1] == "0B0"
    assert exc.value.waits[1][:2] == (1, "1B0")


def test_incomplete_schedule_rejected_by_engines():
    s = build("gpipe", p=2, m=2)
    broken = s.with_programs((s.programs[0][:-1], s.programs[1]))
    with pytest.raises(InvalidScheduleError, match="0B1 is missing"):
        run(broken, semantics="slot")


def test_cost_completion_and_parsing():
    assert complete_costs({"F": 1, "B": 2}) == {"F": 1.0, "B": 2.0, "I": 1.0, "W": 1.0}
    assert complete_costs({"F": 1, "I": 1, "W": 1})["B"] == 2.0
    assert complete_costs({"F": 2})["B"] == 4.0
    with pytest.raises(ParameterError, match="B must equal I \\+ W"):
        complete_costs({"F": 1, "B": 3, "I": 1, "W": 1})
    with pytest.raises(ParameterError, match="not a number"):
        parse_costs("F=one")
    with pytest.raises(ParameterError, match="must be > 0"):
        parse_costs("F=0")
    c = CostModel.abstract(loop(4, 2), F=1, B=2)
    assert c.duration["F"][0] == 0.5 and c.duration["B"][7] == 1.0 and c.activation[3] == 0.5


def test_metrics_gpipe_and_1f1b_by_hand():
    # GPipe p=4 m=4 unit: (m+p-1) * 2 = 14 slots, each device busy 8 -> bubble 6/14
    tl = run(build("gpipe", p=4, m=4), semantics="slot")
    assert tl.makespan == 14
    assert tl.bubble_ratio == pytest.approx(6 / 14)
    assert tl.peak_memory().tolist() == [4, 4, 4, 4]
    # 1F1B: same makespan, device d holds at most min(p-d, m)
    tl = run(build("1f1b", p=4, m=4), semantics="slot")
    assert tl.makespan == 14
    assert tl.peak_memory().tolist() == [4, 3, 2, 1]
    tl = run(build("1f1b", p=4, m=2), semantics="slot")
    assert tl.peak_memory().tolist() == [2, 2, 2, 1]


def test_slot_charges_communication_per_column():
    # Chimera-style per-column charge: (m+p-1)(tF+tB+2c) for both GPipe and 1F1B
    p, m, c = 4, 6, 0.25
    for fam in ("gpipe", "1f1b"):
        s = build(fam, p=p, m=m)
        costs = CostModel.abstract(s.placement, F=1, B=2)
        tl = run(s, costs, FixedDelay(c), semantics="slot", charge_comm=True)
        assert tl.makespan == pytest.approx((m + p - 1) * (1 + 2 + 2 * c))


def test_overlapped_slot_runs_its_ops_together():
    # device 0: F0, then (F1 fused with nothing needing it) -- build a 1-device pipeline
    s = Schedule(linear(1), 2, ((Op("F", 0, 0), Overlap((Op("F", 0, 1), Op("B", 0, 0))), Op("B", 0, 1)),), (0, 0))
    tl = run(s, CostModel.abstract(s.placement, F=1, B=2), semantics="slot")
    # F0 [0,1], fused slot of 1+2=3 ticks [1,4], B1 [4,6]
    assert tl.makespan == 6
    assert tl.busy().tolist() == [6]
