"""UNSHARD/RESHARD of a rank holding more than ``MAX_ACTIVE_STAGES = 3`` stages: the only case
where one action both evicts and fetches, so the order of the two matters. PyTorch 2.13's
``_add_unshard_reshard`` writes every RESHARD of the action before its UNSHARDs (never 4 stages
active at once); ppverify's compute_comms rows must do the same."""

from __future__ import annotations

import pytest

from ppverify.io.torch_csv import to_rows
from ppverify.io.torch_lowering import RESHARD, UNSHARD
from ppverify.schedules import build


def _sharding_and_compute(row: list[str]) -> list[str]:
    return [c for c in row if "SEND" not in c and "RECV" not in c]


def test_reshard_comes_before_unshard_on_a_rank_with_four_stages():
    s = build("interleaved-1f1b", p=2, m=4, v=4)
    row0 = _sharding_and_compute(to_rows(s, "compute_comms")[0])
    # by hand: rank 0 holds stages 0, 2, 4, 6 and runs 0F0 0F1 2F0 2F1 4F0 ...; PyTorch's window
    # is the next 3 distinct stages from the current action: at 0F0 {0, 2, 4} (all fetched), at
    # 0F1 the same, at 2F0 {2, 4, 6}: 0 leaves (RESHARD first), then 6 comes (UNSHARD)
    assert row0[:8] == ["0UNSHARD", "2UNSHARD", "4UNSHARD", "0F0", "0F1", "0RESHARD", "6UNSHARD", "2F0"]
    # and at no point more than 3 stages active on any rank
    for row in to_rows(s, "compute_comms"):
        active: set[str] = set()
        for c in row:
            if c.endswith(UNSHARD):
                active.add(c)
                assert len(active) <= 3, row
            elif c.endswith(RESHARD):
                active.discard(c.replace(RESHARD, UNSHARD))


@pytest.mark.parametrize(("p", "m"), [(2, 4), (2, 6)])
def test_four_stages_per_rank_equal_pytorchs_lowering(p, m):
    ti = pytest.importorskip("ppverify.io.torch_interop")
    pytest.importorskip("torch")
    s = build("interleaved-1f1b", p=p, m=m, v=4)
    theirs = ti.torch_runtime_load_schedule(s, "compute_only")
    assert [theirs[r] for r in sorted(theirs)] == to_rows(s, "compute_comms")
