"""Every timing engine refuses an overlapped slot that holds an op and its own input, as the
verifier does (tests/verify/test_overlap_self_dependency.py).

docs/verification.md: "ops of an overlapped F&B slot share their time", and the DAG's edge
``0F0 -> 0B0`` (docs: "first backward after its F") needs ``t(0B0) - t(0F0) >= 1``. In the slot
``(0F0;0B0)OVERLAP_F_B`` both get one time, ``0 >= 1`` fails: 0B0 would read an output not yet
made. The engines used to skip an input made inside the slot and time the slot as F + B
(makespan 1 + 2 = 3 at F=1, B=2), a number for a schedule verify calls INVALID.

By hand:

- ``(0F0;0B0)`` and ``(0B0;0F0)`` (p=1, m=1; the written order does not change the shared
  time): refused, naming device 0, the slot, 0B0 and 0F0, and the rule.
- ``(0F0;0I0),0W0``: 0I0 needs 0F0 as 0B0 does; 0W0 (after the slot) needs 0I0 only.
- two ranks, ``0F0,(0F1;0B0),0B1`` / ``1F0,(1F1;1B0),1B1``: no slot holds an op and its input
  (0B0 needs 0F0, run before, and 1B0 on rank 1; 1F1 needs 0F1 on rank 0), but each slot waits
  for one op of the other's: a deadlock, as verify says ("rank 1 waits in 1F1 for rank 0, which
  waits in 0B0 for rank 1").
- rank 1 ``1F0,1B0,1F1,1B1`` instead: the slot ``(0F1;0B0)`` is independent; F=1, B=2, no
  communication, overlap factor 1 (a slot lasts its ops' sum): rank 0 runs 0F0 [0,1], waits for
  1B0 (1F0 [1,2], 1B0 [2,4]), the slot [4,7], 0B1 needs 1B1: 1F1 needs 0F1 (ends 7) so 1F1
  [7,8], 1B1 [8,10], 0B1 [10,12]: makespan 12.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ppverify.cli import main
from ppverify.core.costs import CostModel
from ppverify.core.dag import build_dag_arrays, slot_dependency_problems
from ppverify.core.errors import DeadlockError, InvalidScheduleError
from ppverify.engines import run
from ppverify.engines.runtime import Handover
from ppverify.io.torch_csv import parse_rows
from ppverify.schedules import build

RULE = "the ops of an overlapped slot run at the same time"
CROSSED = ["0F0,(0F1;0B0)OVERLAP_F_B,0B1", "1F0,(1F1;1B0)OVERLAP_F_B,1B1"]
INDEPENDENT = ["0F0,(0F1;0B0)OVERLAP_F_B,0B1", "1F0,1B0,1F1,1B1"]
ENGINES = ["slot", "async", "contention", "torch", "runtime"]


def _rows(lines: list[str]):
    return parse_rows([line.split(",") for line in lines], "x.csv")


def _run(s, semantics: str):
    costs = CostModel.abstract(s.placement, F=1, B=2)
    extra = {"model": Handover()} if semantics == "runtime" else {}  # the runtime needs a hand-over model
    return run(s, costs, semantics=semantics, **extra)


@pytest.mark.parametrize("semantics", ENGINES)
@pytest.mark.parametrize(
    ("line", "slot", "later"),
    [
        ("(0F0;0B0)OVERLAP_F_B", "(0F0;0B0)OVERLAP_F_B", "0B0"),
        ("(0B0;0F0)OVERLAP_F_B", "(0B0;0F0)OVERLAP_F_B", "0B0"),
        ("(0F0;0I0)OVERLAP_F_B,0W0", "(0F0;0I0)OVERLAP_F_B", "0I0"),
    ],
)
def test_every_engine_refuses_a_slot_holding_an_op_and_its_input(semantics: str, line: str, slot: str, later: str):
    s = _rows([line])
    with pytest.raises(InvalidScheduleError) as exc:
        _run(s, semantics)
    assert not isinstance(exc.value, DeadlockError)  # the slot's own fault, not a wait between devices
    assert str(exc.value) == f"{s.describe()}: device 0's slot {slot} runs {later} with 0F0, which it needs: {RULE}"


def test_simulate_cli_names_the_file_slot_ops_and_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    path = tmp_path / "own.csv"
    path.write_text("(0F0;0B0)OVERLAP_F_B\n")
    assert main(["simulate", str(path)]) == 2  # bad input, as a deadlock
    err = capsys.readouterr().err.strip()
    assert err.endswith(
        f"own.csv: programs: device 0's slot (0F0;0B0)OVERLAP_F_B runs 0B0 with 0F0, which it needs: {RULE}"
    )
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize("semantics", ENGINES)
def test_two_slots_feeding_each_other_deadlock_as_verify_says(semantics: str):
    with pytest.raises(DeadlockError) as exc:
        _run(_rows(CROSSED), semantics)
    text = str(exc.value)
    # each device waits in its slot (both named, in either engine's spelling)
    assert text.startswith("deadlock: device 0 waits in ")
    assert "0F1" in text and "0B0" in text and "device 1 waits in " in text and "1F1" in text


@pytest.mark.parametrize("semantics", ["slot", "async", "contention"])
def test_an_independent_slot_is_timed(semantics: str):
    s = _rows(INDEPENDENT)
    assert slot_dependency_problems(build_dag_arrays(s)) == []
    assert _run(s, semantics).makespan == pytest.approx(12.0)  # by hand in the module doc


@pytest.mark.parametrize(("family", "p", "m"), [("dualpipe", 4, 8), ("dualpipev", 4, 8), ("dualpipev", 2, 6)])
def test_dualpipe_families_hold_only_independent_slots(family: str, p: int, m: int):
    # DualPipe(V) overlaps the forward of one microbatch with the backward of another
    s = build(family, p=p, m=m)
    a = build_dag_arrays(s)
    assert a.fused.any() and slot_dependency_problems(a) == []


def test_the_verifier_still_reports_it_itself():
    # check=False (the verifier's build) leaves the slot to the dependencies property
    a = build_dag_arrays(_rows(["(0F0;0B0)OVERLAP_F_B"]), check=False)
    assert slot_dependency_problems(a) == ["device 0's slot (0F0;0B0)OVERLAP_F_B runs 0B0 with 0F0, which it needs"]
