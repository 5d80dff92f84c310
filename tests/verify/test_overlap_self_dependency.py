"""A dependency inside one overlapped slot is a violation: ops fused into one ``OVERLAP_F_B`` slot
share their logical time, and every edge ``q -> i`` of the step's DAG needs ``t_i - t_q >= 1``
(ppverify/verify/order.py module doc). Found by mutation testing: with the edge's constant 1
turned into 0 no other test failed, and ``verify`` called such a slot VALID.

By hand:

- ``(0F0;0B0)OVERLAP_F_B`` (p=1, m=1): 0B0 needs 0F0's output (edge F0 -> B0); in the one slot
  ``t(0B0) - t(0F0) = 0 < 1``: INVALID, ``dependencies``. The same for ``(0B0;0F0)`` (the written
  order does not change the shared time) and ``(0F0;0I0)`` (I needs its forward too).
- two ranks, one overlapped slot on each, each slot feeding the other:
  rank 0 ``0F0,(0F1;0B0),0B1``, rank 1 ``1F0,(1F1;1B0),1B1``. 0F1 -> 1F1 (activation) and
  1B0 -> 0B0 (gradient); with the slots' shared times the cycle
  ``t(0F1) +1 <= t(1F1) = t(1B0), t(1B0) + 1 <= t(0B0) = t(0F1)`` sums to ``0 >= 2``: no execution
  exists, a deadlock (each slot waits for the other's). With the constant 0 it sums to ``0 >= 0``.
- rank 1 running ``1F0,1B0,1F1,1B1`` instead: the slot ``(0F1;0B0)`` holds two independent ops
  (0F1 feeds 1F1 at t >= 2, 0B0 waits for 1B0 at t = 1): VALID, so the tests check the rule and
  not merely that an overlapped slot is refused.
- one device's slot cannot hold an op and a successor on another stage of that device: the only
  one-op edges between stages join two forwards or two backwards, which an ``OVERLAP_F_B`` slot
  refuses (it holds one forward and one backward), so the within-device form is the op and its
  own input alone.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ppverify.cli import main
from ppverify.core.ops import ActionSyntaxError, parse_action
from ppverify.io.torch_csv import parse_rows
from ppverify.schedules import build
from ppverify.verify import verify

OWN = ["(0F0;0B0)OVERLAP_F_B"]
CROSSED = ["0F0,(0F1;0B0)OVERLAP_F_B,0B1", "1F0,(1F1;1B0)OVERLAP_F_B,1B1"]
INDEPENDENT = ["0F0,(0F1;0B0)OVERLAP_F_B,0B1", "1F0,1B0,1F1,1B1"]


def _csv(lines: list[str]):
    return parse_rows([line.split(",") for line in lines])


def _derived(lines: list[str], m: int):
    """The same programs as a ppverify schedule (no PyTorch lowering: the derived policy)."""
    programs = tuple(tuple(parse_action(a) for a in line.split(",")) for line in lines)
    return build("1f1b", p=len(lines), m=m).with_programs(programs)


def _violations(report) -> list[tuple[str, str]]:
    return [(v.prop, v.message) for v in report.violations]


def test_verify_cli_refuses_a_slot_holding_an_op_and_its_input(tmp_path: Path, capsys) -> None:
    path = tmp_path / "fused_own.csv"
    path.write_text(OWN[0] + "\n")
    assert main(["verify", str(path)]) == 1  # exit 1: invalid
    out = capsys.readouterr().out
    assert out.startswith("INVALID: fused_own.csv p=1 m=1")
    assert "VIOLATED dependencies: device 0 runs 0B0 before 0F0, which it needs" in out
    assert "proved  dependencies" not in out


@pytest.mark.parametrize("how", ["csv", "derived"])
@pytest.mark.parametrize(
    ("line", "later"),
    [("(0F0;0B0)OVERLAP_F_B", "0B0"), ("(0B0;0F0)OVERLAP_F_B", "0B0"), ("(0F0;0I0)OVERLAP_F_B,0W0", "0I0")],
)
def test_verifier_finds_the_dependency_inside_the_slot(how: str, line: str, later: str) -> None:
    s = _csv([line]) if how == "csv" else _derived([line], m=1)
    r = verify(s, pytorch=how == "csv")
    assert not r.valid
    assert ("dependencies", f"device 0 runs {later} before 0F0, which it needs") in _violations(r)


@pytest.mark.parametrize("how", ["csv", "derived"])
def test_two_slots_feeding_each_other_deadlock(how: str) -> None:
    s = _csv(CROSSED) if how == "csv" else _derived(CROSSED, m=2)
    r = verify(s, pytorch=how == "csv")
    assert _violations(r) == [("deadlock", "rank 1 waits in 1F1 for rank 0, which waits in 0B0 for rank 1")]


@pytest.mark.parametrize("how", ["csv", "derived"])
def test_an_independent_overlapped_slot_stays_valid(how: str) -> None:
    s = _csv(INDEPENDENT) if how == "csv" else _derived(INDEPENDENT, m=2)
    r = verify(s, pytorch=how == "csv")
    assert r.valid and _violations(r) == []


def test_a_slot_cannot_fuse_two_stages_of_one_kind() -> None:
    # on V (stages 1 and 2 on one device) 1F0 -> 2F0 is a one-device edge, but no slot holds both
    with pytest.raises(ActionSyntaxError, match="exactly one forward"):
        parse_action("(1F0;2F0)OVERLAP_F_B")
