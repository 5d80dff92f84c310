"""An order check that Z3 found infeasible but whose cores were not found within the time budget is
a violation, never ``([], False)`` read as "proved" (hunt B, defect 1: ``verify interleaved-1f1b
-p 16 -m 256 --comm-semantics rendezvous`` said VALID, exit 0, when its first decision took longer
than the 30 s budget). A budget of 0 makes that case deterministic at any size."""

from __future__ import annotations

import re

import pytest

from ppverify.cli import main
from ppverify.core.dag import build_dag
from ppverify.core.errors import ParameterError
from ppverify.core.time_limit import TimeLimitError, time_limit
from ppverify.schedules import build
from ppverify.verify import analysis, verify
from ppverify.verify.comm_model import build_problem
from ppverify.verify.order import check_order, core_budget

# Interleaved 1F1B under rendezvous point-to-point semantics deadlocks: with the loop placement
# (stage s on rank s mod p) the forward of chunk 1 on rank 0 needs rank p-1's last stage of
# chunk 0, so the ranks' grouped SEND/RECV posts wait on each other around the whole ring
# (docs/verification.md: rendezvous = both sides block until the partner arrives)
FAMILY, P, M, SEMANTICS = "interleaved-1f1b", 4, 8, "rendezvous"


def _problem():
    pb, _ = build_problem(build_dag(build(FAMILY, p=P, m=M)), SEMANTICS)
    return pb


@pytest.fixture
def no_budget(monkeypatch):
    """The order check as verify runs it, with no seconds to find a core: the first decision
    (Z3: unsat) spends it all, as it did on the large problem on a loaded machine."""
    real = analysis.check_order
    monkeypatch.setattr(analysis, "check_order", lambda pb, mv, budget, sem: real(pb, mv, 0.0, sem))


def test_an_infeasible_problem_without_a_core_in_time_is_a_violation():
    violations, complete = check_order(_problem(), budget_s=0.0, semantics=SEMANTICS)
    assert not complete  # the cores were not searched: more may exist
    [v] = violations  # never none: Z3 said no execution exists
    assert v.prop == "deadlock" and v.ops == ()  # no core found, none invented
    assert v.message.startswith("no complete execution exists under rendezvous point-to-point semantics (Z3: unsat)")
    assert "not minimized within the 0 s budget" in v.message and "--time-limit" in v.message


def test_verify_is_invalid_when_the_budget_runs_out_before_the_first_core(no_budget):
    r = verify(build(FAMILY, p=P, m=M), comm_semantics=SEMANTICS)
    assert not r.valid
    assert "deadlock" not in [p for p, _ in r.proved]
    assert [v.prop for v in r.violations] == ["deadlock"]
    notes = dict(r.unchecked)
    assert notes["dependencies/deadlock"].startswith("stopped after 1 order violation (the 30 s budget")


def test_an_unfinished_check_with_nothing_found_is_no_verdict(monkeypatch):
    # whatever gives ([], False) (a search stopped before its first answer) is no proof that an
    # execution exists: no verdict, as a --time-limit reached, never VALID
    monkeypatch.setattr(analysis, "check_order", lambda pb, mv, budget, sem: ([], False))
    with pytest.raises(TimeLimitError, match="^the order check: no answer within 30 s$"):
        verify(build(FAMILY, p=P, m=M), comm_semantics=SEMANTICS)


def test_the_cli_verdict_is_unchanged(capsys):
    # with its budget the search finds the cycles: INVALID (exit 1), every deadlock a ring of
    # waits through all 4 ranks (rank 3 -> 2 -> 1 -> 0 -> 3 or 1 -> 2 -> 3 -> 0 -> 1)
    assert main(["verify", FAMILY, "-p", str(P), "-m", str(M), "--comm-semantics", SEMANTICS]) == 1
    out = capsys.readouterr().out
    deadlocks = [line for line in out.splitlines() if line.startswith("  VIOLATED deadlock: rank ")]
    assert deadlocks and all(len(set(re.findall(r"rank (\d+)", d))) == P for d in deadlocks)
    assert "not minimized" not in out and "dependencies/deadlock" not in out  # complete: no note


def test_none_to_find_is_refused():
    # --max-violations 0 would stop before the first violation: a deadlock read as VALID
    with pytest.raises(ParameterError, match="must be >= 1"):
        verify(build(FAMILY, p=P, m=M), comm_semantics=SEMANTICS, max_violations=0)
    with pytest.raises(ParameterError, match="must be >= 1"):
        check_order(_problem(), max_violations=0)


def test_a_time_limit_gives_the_core_search_half_of_what_is_left():
    assert core_budget() == 30.0  # no limit: the default
    with time_limit(600, clock=lambda: 0.0):
        assert core_budget() == 300.0  # 600 s left, half of it
    with time_limit(20, clock=lambda: 0.0):
        assert core_budget() == 30.0  # 10 s is less than the default: the limit stops it first
