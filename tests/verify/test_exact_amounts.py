"""Memory and timing proofs decide the numbers given, not a rounding of them.

Before, every amount was read as ``Fraction(x).limit_denominator(10**6)``: an activation of 1e-7
became 0 (so no cap could be exceeded) and a forward of 1.0000004 became 1 (so a bound below the
true makespan was "proved"). Expected values are worked out by hand from 1F1B's closed form:
device 0 of 1F1B with p=2 holds both warm-up forwards' activations when its second forward
starts, and 1F1B's makespan is ``(m + p - 1)(f + b)``.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from ppverify.core.costs import CostModel
from ppverify.schedules import build
from ppverify.verify import verify
from ppverify.verify.smt import exact_fraction


def _costs(schedule, F: float, B: float, activation: float = 1.0) -> CostModel:
    c = CostModel.abstract(schedule.placement, F=F, B=B)
    return CostModel(**{**c.__dict__, "activation": (activation,) * schedule.num_stages})


def test_exact_fraction_keeps_small_and_close_values():
    assert exact_fraction(1e-7) == Fraction(1, 10**7)
    assert exact_fraction(1.0000004) == Fraction(10000004, 10**7)
    assert exact_fraction(0.1) == Fraction(1, 10)


@pytest.mark.parametrize("certificates", [True, False])
def test_tiny_activations_are_not_rounded_to_zero(certificates):
    s = build("1f1b", p=2, m=3)
    costs = _costs(s, 1, 2, activation=1e-7)
    # device 0 holds 0F0 and 0F1 (2e-7) when 0F1 starts: over a cap of one activation
    over = verify(s, costs, memory_cap=1e-7, certificates=certificates)
    assert not over.valid
    assert [v.prop for v in over.violations] == ["memory"]
    assert set(over.violations[0].ops) == {"0F0", "0F1"}
    assert verify(s, costs, memory_cap=2e-7, certificates=certificates).valid


@pytest.mark.parametrize("certificates", [True, False])
def test_tiny_durations_are_not_rounded_to_zero(certificates):
    s = build("1f1b", p=4, m=8)
    costs = _costs(s, 1e-7, 1e-7)
    # (m + p - 1)(f + b) = 11 * 2e-7 = 2.2e-6
    assert not verify(s, costs, makespan_le=1e-7, certificates=certificates).valid
    assert not verify(s, costs, makespan_le=2.1e-6, certificates=certificates).valid
    assert verify(s, costs, makespan_le=2.2e-6, certificates=certificates).valid


def test_close_durations_are_not_rounded_to_a_shorter_one():
    s = build("1f1b", p=2, m=2)
    costs = _costs(s, 1.0000004, 1.0)
    # (2 + 2 - 1)(1.0000004 + 1) = 6.0000012
    short = verify(s, costs, makespan_le=6.0000008)
    assert not short.valid
    # the message tells the two numbers apart (it printed "by 6 ... earliest finish is 6")
    msg = short.violations[0].message
    assert "finishes by 6.0000008 " in msg and "earliest finish is 6.0000012" in msg
    assert verify(s, costs, makespan_le=6.0000012).valid


@pytest.mark.parametrize("certificates", [True, False])
def test_a_share_made_by_division_is_the_quotient(certificates):
    # an eleventh of a device's share: its float's shortest decimal, 0.09090909090909091, lies
    # above 1/11, so read as that decimal eleven of them would exceed a cap of 1; GPipe on one
    # device holds all m = 11 forwards at once: 11 x 1/11 = 1, exactly the cap
    s = build("gpipe", p=1, m=11)
    costs = _costs(s, 1, 2, activation=1 / 11)
    assert exact_fraction(1 / 11) == Fraction(1, 11)
    assert verify(s, costs, memory_cap=1.0, certificates=certificates).valid
    assert not verify(s, costs, memory_cap=10 / 11 + 0.01, certificates=certificates).valid


def test_the_earliest_finish_is_printed_exactly(capsys):
    # 1F1B, p = 3, m = 7, F = 0.1, B = 0.3, 0.7 per transfer: each of the three rounds of
    # microbatches 0, 3, 6 is F+c+F+c+F+B+c+B+c+B = 4.0, so the step takes exactly 12; the float
    # just below it is refuted, and the message must not say the finish is that float (a float sum)
    from ppverify.cli import main

    argv = ["verify", "1f1b", "-p", "3", "-m", "7", "--costs", "F=0.1,B=0.3", "--comm-delay", "0.7"]
    assert main([*argv, "--makespan-le", "11.999999999999998"]) == 1
    out = capsys.readouterr().out
    assert "finishes by 11.999999999999998 units " in out and "earliest finish is 12 units)" in out
