"""``ppverify.measure.machine_load``: the machine's CPU shares between two ``/proc/stat`` readings,
checked against shares worked out from the tick deltas written in the test."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ppverify.measure.machine_load import CpuShare, cpu_share, cpu_ticks

ticks = st.lists(st.integers(0, 10**6), min_size=8, max_size=8)


@given(before=ticks, delta=ticks)
def test_shares_are_the_tick_fractions(before, delta):
    after = [a + d for a, d in zip(before, delta)]
    got = cpu_share(tuple(before), tuple(after))
    total = sum(delta)
    if total == 0:
        assert got is None
        return
    idle = delta[3] + delta[4]  # idle and iowait
    assert got.busy == pytest.approx((total - idle) / total, abs=1e-6)
    assert got.niced == pytest.approx(delta[1] / total, abs=1e-6)
    assert got.seconds == pytest.approx(total / 100, abs=1e-6)
    assert 0 <= got.niced <= got.busy + 1e-6 <= 1 + 1e-6


def test_quiet_is_below_a_tenth_niced():
    assert CpuShare(1.0, 0.05, 1.0).quiet and not CpuShare(0.2, 0.1, 1.0).quiet


def test_a_missing_or_foreign_stat_file_gives_none(tmp_path):
    assert cpu_ticks(tmp_path / "absent") is None
    (tmp_path / "stat").write_text("intr 1 2 3\n")
    assert cpu_ticks(tmp_path / "stat") is None
    assert cpu_share(None, (1,) * 8) is None


def test_this_machine_reads_when_linux():
    t = cpu_ticks()
    assert t is None or (len(t) == 8 and all(x >= 0 for x in t))
