"""The verifier, the async engine and the optimizer agree on the same numbers.

Expected makespans and peaks are worked out here with exact fractions, from the schedule's own
programs and the step's dependency rules (F after the previous stage's F; the first backward, B
or I, after its own F and the next stage's backward; W after its own I; a transfer ``c`` between
devices), never read from ppverify: the earliest start of every op in program order, and the
activation level at each forward's start. The engine, which sums floats, must land within float
noise of them; Z3 must prove the claim at the exact value and refute it just below.
"""

from __future__ import annotations

import math
from fractions import Fraction

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.placement import linear
from ppverify.engines import run
from ppverify.optimize import optimize
from ppverify.optimize.problem import Problem
from ppverify.schedules import build
from ppverify.verify import verify
from ppverify.verify.smt import exact_fraction

#: amounts as the rationals a user means: integers, decimals, thirds and elevenths, tiny and large
AMOUNTS = [Fraction(1), Fraction(2), Fraction(1, 10), Fraction(7, 10), Fraction(1, 3), Fraction(1, 11)]
AMOUNTS += [Fraction(1, 10**7), Fraction(10**6)]
DELAYS = [Fraction(0), Fraction(1, 10), Fraction(1, 3), Fraction(1, 10**7)]
#: families without overlapped slots (their ops time one by one), with the sizes their rules allow
FAMILIES = {
    "1f1b": [(2, 2), (3, 4), (4, 3)],
    "gpipe": [(2, 3), (3, 2)],
    "1f1b-split": [(2, 3), (3, 4)],
    "zb-h1": [(2, 4), (3, 3)],
    "zb-h2": [(2, 3), (4, 4)],
    "zbv": [(2, 4), (3, 6)],
    "interleaved-1f1b": [(2, 4), (2, 2)],
    "chimera": [(2, 2), (2, 4), (4, 4)],
}


def exact_timing(schedule, dur: dict[str, Fraction], c: Fraction, share: Fraction) -> Fraction:
    """Earliest finish of the programs: each device in program order, each op after its inputs
    plus ``c`` when they ran on another device (durations per device share, scaled by ``share``)."""
    where: dict[tuple[str, int, int], int] = {}
    for d, prog in enumerate(schedule.programs):
        for op in prog:
            where[(op.kind, op.stage, op.mb)] = d
    S = schedule.num_stages
    backward = {(s, mb): ("I" if ("I", s, mb) in where else "B") for (_, s, mb) in where}

    def inputs(kind: str, s: int, mb: int) -> list[tuple[str, int, int]]:
        if kind == "F":
            return [("F", s - 1, mb)] if s > 0 else []
        if kind == "W":
            return [("I", s, mb)]
        return [("F", s, mb)] + ([(backward[(s + 1, mb)], s + 1, mb)] if s + 1 < S else [])

    end: dict[tuple[str, int, int], Fraction] = {}
    free = [Fraction(0)] * schedule.p
    pos = [0] * schedule.p
    while any(pos[d] < len(prog) for d, prog in enumerate(schedule.programs)):
        moved = False
        for d, prog in enumerate(schedule.programs):
            while pos[d] < len(prog):
                op = prog[pos[d]]
                key = (op.kind, op.stage, op.mb)
                need = inputs(*key)
                if any(q not in end for q in need):
                    break
                t = max([free[d]] + [end[q] + (c if where[q] != d else 0) for q in need])
                end[key] = free[d] = t + dur[op.kind] * share
                pos[d] += 1
                moved = True
        assert moved, "the programs deadlock"
    return max(end.values())


def exact_peak(schedule, share: Fraction, freed_by_i: Fraction) -> Fraction:
    """Highest activation level at a forward's start: earlier ops of the device have ended (each
    device runs its program one op at a time), so the level is a running sum in program order."""
    peak = Fraction(0)
    for prog in schedule.programs:
        level = Fraction(0)
        for op in prog:
            if op.kind == "F":
                level += share
                peak = max(peak, level)
            else:
                level -= {"B": share, "I": share * freed_by_i, "W": share * (1 - freed_by_i)}[op.kind]
    return peak


def below(x: float) -> float:
    """The next float down: a claim there is about a smaller number."""
    return math.nextafter(x, -math.inf)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    family=st.sampled_from(sorted(FAMILIES)),
    pick=st.integers(0, 2),
    f=st.sampled_from(AMOUNTS),
    i=st.sampled_from(AMOUNTS),
    w=st.sampled_from(AMOUNTS),
    c=st.sampled_from(DELAYS),
    freed=st.sampled_from([Fraction(0), Fraction(3, 10), Fraction(1, 3)]),
)
def test_verify_engine_and_hand_agree(family, pick, f, i, w, c, freed):
    sizes = FAMILIES[family]
    p, m = sizes[pick % len(sizes)]
    s = build(family, p=p, m=m)
    costs = CostModel.abstract(s.placement, F=float(f), I=float(i), W=float(w), freed_by_I=float(freed))
    comm = FixedDelay(float(c))
    share = Fraction(s.placement.share_per_stage).limit_denominator(100)
    makespan = exact_timing(s, {"F": f, "B": i + w, "I": i, "W": w}, c, share)
    peak = exact_peak(s, share, freed)
    tl = run(s, costs, comm, semantics="async", sync="none")  # no replica all-reduce: the programs alone
    # the engine sums floats: within their noise of the exact values
    assert math.isclose(tl.makespan, makespan, rel_tol=1e-12)
    assert math.isclose(max(tl.peak_memory()), peak, rel_tol=1e-12)
    # the exact makespan and peak as the floats that stand for them
    ms, pk = float(makespan), float(peak)
    # a float stands for one rational; a makespan of denominator 3 * 11 * 10**7 has no float of its own
    assume(exact_fraction(ms) == makespan and exact_fraction(pk) == peak)
    assert verify(s, costs, comm, makespan_le=ms, sync="none").valid
    assert not verify(s, costs, comm, makespan_le=below(ms), sync="none").valid
    assert verify(s, costs, comm, memory_cap=pk).valid
    over = verify(s, costs, comm, memory_cap=below(pk))
    assert [v.prop for v in over.violations][:1] == ["memory"]


def test_1f1b_closed_form_with_decimals_and_tiny_costs():
    # 1F1B takes (m + p - 1)(F + B): p=3, m=5, F=0.7, B=1e-7 -> 7 * 0.7000001 = 4.9000007
    s = build("1f1b", p=3, m=5)
    costs = CostModel.abstract(s.placement, F=0.7, B=1e-7)
    assert verify(s, costs, makespan_le=4.9000007).valid
    assert not verify(s, costs, makespan_le=4.9000006).valid
    assert math.isclose(run(s, costs).makespan, 4.9000007, rel_tol=1e-12)


def test_split_backward_frees_all_of_an_activation():
    # I frees 1/3 and W 2/3 of one activation: together all of it. Device 0 of 1F1B-split at
    # p=2, m=3 holds 0F1 and 0F2 (2 activations) when 0F2 starts, after 0I0 and 0W0 freed 0F0's.
    # Read one by one, the floats 1/3 and 2/3 of 1.0 left 1/30000000000000000 of it held.
    s = build("1f1b-split", p=2, m=3)
    costs = CostModel.abstract(s.placement, F=1, I=1, W=1, freed_by_I=1 / 3)
    for certificates in (True, False):
        assert verify(s, costs, memory_cap=2, certificates=certificates).valid
        assert not verify(s, costs, memory_cap=below(2.0), certificates=certificates).valid


def test_optimize_reads_tiny_and_close_costs_exactly():
    # 1F1B's order is optimal at a cap of p = 2 activations: (m + p - 1)(F + B) for m = 3.
    # F = 1e-7 was read as 0 (then one tick of 2): "OPTIMAL 16" with a bound of 16, not 8.0000004;
    # F = 1.0000004 as 1: "OPTIMAL 8", which no schedule reaches.
    pl = linear(2)
    for f, b, want in ((1e-7, 2.0, 8.0000004), (1.0000004, 1.0, 8.0000016)):
        costs = CostModel.abstract(pl, F=f, B=b)
        res = optimize(Problem(pl, 3, costs, split=False, memory_cap=2), work_limit=1)
        assert res.status == "OPTIMAL"
        assert math.isclose(res.objective, want, rel_tol=1e-12) and math.isclose(res.bound, want, rel_tol=1e-12)
        assert verify(res.schedule, costs, makespan_le=want, memory_cap=2).valid
        assert not verify(res.schedule, costs, makespan_le=below(want)).valid
