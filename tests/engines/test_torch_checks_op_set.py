"""The ``torch`` engine checks the op set as the other engines do, before counting steps.

PyTorch's step simulator times any program it is given: a schedule without 0B1 took 9 steps,
one with an op twice, on the wrong device, of kind X or of microbatch 7 or -1 took 11 or 12,
and ``simulate --semantics torch`` exited 0 where ``async`` exits 2 with "op 0B1 is missing".
docs/pytorch.md: missing ops "are reported instead of shrinking the step". The two relaxations
torch_steps documents (W never checked against its I, a backward never against its own forward)
concern order, not the op set, and stay.
"""

from __future__ import annotations

import pytest

from ppverify.cli import main
from ppverify.core.errors import DeadlockError, InvalidScheduleError
from ppverify.core.ops import Op
from ppverify.core.placement import linear
from ppverify.core.schedule import Schedule
from ppverify.engines import run
from ppverify.schedules import build

P = linear(2)


def F(s, mb):
    return Op("F", s, mb)


def B(s, mb):
    return Op("B", s, mb)


DEV1 = (F(1, 0), B(1, 0), F(1, 1), B(1, 1))


def _s(dev0, dev1=DEV1):
    return Schedule(P, 2, (tuple(dev0), tuple(dev1)), (0, 0))


CASES = {
    "missing": (_s((F(0, 0), F(0, 1), B(0, 0))), "op 0B1 is missing"),
    "twice": (_s((F(0, 0), F(0, 1), B(0, 0), B(0, 1), B(0, 1))), "op 0B1 appears twice"),
    "wrong device": (_s((F(0, 0), F(0, 1), B(0, 0), B(0, 1), F(1, 0)), DEV1[1:]), "op 1F0 is on device 0"),
    "kind X": (_s((F(0, 0), F(0, 1), B(0, 0), Op("X", 0, 1))), "unknown kind 'X'"),
    "mb 7": (_s((F(0, 0), F(0, 1), B(0, 0), B(0, 1), F(0, 7))), "op 0F7 on device 0"),
    "mb -1": (_s((F(0, 0), F(0, 1), B(0, 0), B(0, 1), F(0, -1))), "op 0F-1 on device 0"),
}


@pytest.mark.parametrize("case", CASES)
def test_torch_refuses_what_async_refuses(case):
    s, words = CASES[case]
    with pytest.raises(InvalidScheduleError, match=words):
        run(s, semantics="torch")
    with pytest.raises(InvalidScheduleError):
        run(s, semantics="async")


def test_torch_refuses_a_missing_op_on_the_compiled_path_too():
    s = build("1f1b", p=2, m=5120)  # 2 * 2 * 5120 = 20,480 ops: at least COMPILED_MIN_OPS (20,000)
    last = s.programs[0][-1]
    with pytest.raises(InvalidScheduleError, match=f"op {last} is missing"):
        run(s.with_programs((s.programs[0][:-1], s.programs[1])), semantics="torch")


def test_a_complete_schedule_keeps_its_step_count():
    # the step grid torch_steps.simulate_steps documents for gpipe p=2 m=1 is 6 steps long
    # (0F0, SEND, idle, idle, RECV_B, 0B0 on rank 0)
    assert run(build("gpipe", p=2, m=1), semantics="torch").makespan == 6.0


def test_the_documented_relaxations_stay():
    # a backward before its own forward on the last stage, and W before its I: the step model
    # never checks either (module doc), while async deadlocks on both
    b_first = Schedule(P, 1, ((F(0, 0), B(0, 0)), (B(1, 0), F(1, 0))), (0,))
    w_first = Schedule(P, 1, ((F(0, 0), Op("W", 0, 0), Op("I", 0, 0)), (F(1, 0), Op("I", 1, 0), Op("W", 1, 0))), (0,))
    for s in (b_first, w_first):
        tl = run(s, semantics="torch")
        assert sorted(map(str, tl.ops)) == sorted(str(o) for prog in s.programs for o in prog)
        with pytest.raises(DeadlockError):
            run(s, semantics="async")


def test_simulate_semantics_torch_exits_2_on_a_missing_op(tmp_path, capsys):
    f = tmp_path / "missing.csv"
    f.write_text("0F0,0F1,0B0\n1F0,1B0,1F1,1B1\n")
    assert main(["simulate", str(f), "--semantics", "torch"]) == 2
    assert "op 0B1 is missing" in capsys.readouterr().err
