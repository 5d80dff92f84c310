"""Zero false positives: every registered family verifies VALID for every p in 2..16 and m in
1..64 inside its rules (build raises ParameterError outside them). Slow.

The whole grid (every m in 1..64) takes about 7 min on a 2-core machine, one test per family so
``pytest -n 2`` spreads it; ``scripts/bench_verify.py --grid`` runs it too."""

from __future__ import annotations

import pytest

from ppverify.errors import ParameterError
from ppverify.schedules import build, families
from ppverify.verify import verify


@pytest.mark.slow
@pytest.mark.parametrize("family", [f.name for f in families()])
def test_family_grid_all_valid(family):
    checked, invalid = 0, []
    ms = range(1, 65)
    for p in range(2, 17):
        for m in ms:
            try:
                s = build(family, p=p, m=m)
            except ParameterError:
                continue
            checked += 1
            r = verify(s)
            if not r.valid:
                invalid.append(f"p={p} m={m}: {r.violations[0].to_text()}")
    assert not invalid, invalid[:5]
    assert checked > 0
