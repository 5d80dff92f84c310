"""Durations whose ratio no float counts in ticks (``--costs F=1e-308,B=1``: 1e308 ticks of the
gcd per B) are timed in their own unit, as a table with no common tick (never drawn), instead of
overflowing. Expected makespans: 1F1B's (m + p - 1)(tF + tB) (PipeDream-Flush), in floats."""

from __future__ import annotations

import pytest

from ppverify.cli import main
from ppverify.core.costs import CostModel
from ppverify.engines import run
from ppverify.engines.table import NO_COMMON_TICK, format_table
from ppverify.schedules import build


@pytest.mark.parametrize("tf", [1e-308, 1e-310, 5e-324, 1e-200, 1e-17])
def test_tiny_forward_cost_times_the_table(tf):
    s = build("1f1b", p=4, m=8)
    tl = run(s, CostModel.abstract(s.placement, F=tf, B=1.0), semantics="slot")
    # (8 + 4 - 1) x (tF + 1) = 11 + 11 tF, which rounds to 11.0 for every tF below 2^-53
    assert tl.makespan == 11.0
    assert tl.info.ticks > NO_COMMON_TICK
    assert format_table(tl).startswith("(no table: the durations share no common tick")


def test_a_ratio_a_float_counts_keeps_the_tick():
    # F = 0.5, B = 1: the tick is 0.5, 2 ticks a B; (8 + 4 - 1) x 1.5 = 16.5 units = 33 ticks
    s = build("1f1b", p=4, m=8)
    tl = run(s, CostModel.abstract(s.placement, F=0.5, B=1.0), semantics="slot")
    assert (tl.makespan, tl.info.tick, tl.info.ticks) == (16.5, 0.5, 33)


@pytest.mark.parametrize("costs", ["F=1e-308,B=1", "F=1e-310,B=1"])
def test_show_with_a_tiny_cost_says_no_common_tick(costs, capsys):
    assert main(["show", "1f1b", "-p", "4", "-m", "8", "--costs", costs]) == 0
    out = capsys.readouterr().out
    assert "the durations share no common tick a table can draw" in out
    assert "makespan      11 units\n" in out
