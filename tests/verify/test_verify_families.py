"""Zero false positives, decided by Z3 alone (``certificates=False``): every registered family
verifies VALID on a stated sample of the grid p in 2..16, m in 1..64, inside its rules (build
raises ParameterError outside them). Slow.

The sample: every p in 2..16 with m in {1, p-1, p+1, 2p, 3p+1, 4p, 64}, i.e. 97 of the 960
(p, m) points per family (fewer inside a family's rules: 14 for Chimera, 74 for the interleaved
ones), chosen for the boundaries of the families' rules (m < p, m = p +- 1, multiples of p, the
largest m). The fast suite covers the points (p, m) = (2, 1), (2, 4), (4, 4), (4, 8), (6, 12),
(8, 16), (3, 7), (16, 32) with the default verifier (``tests/verify/test_verify.py``) and checks the
certificates against Z3 on random schedules (``tests/verify/test_verify_certify.py``); those points are
left out here. The whole grid, on both paths, is ``scripts/verify_grid.py`` (about 7 min for
Z3 alone on a 2-core machine)."""

from __future__ import annotations

import pytest

from ppverify.schedules import families
from ppverify.verify import verify

FAST_POINTS = {(2, 1), (2, 4), (4, 4), (4, 8), (6, 12), (8, 16), (3, 7), (16, 32)}
SAMPLE = sorted(
    {(p, m) for p in range(2, 17) for m in (1, p - 1, p + 1, 2 * p, 3 * p + 1, 4 * p, 64) if 1 <= m <= 64} - FAST_POINTS
)


def test_sample_size_is_as_stated():
    assert len(SAMPLE) == 97


@pytest.mark.slow
@pytest.mark.parametrize("family", [f.name for f in families()])
def test_family_sample_all_valid_by_z3(family, buildable):
    checked, invalid = 0, []
    for p, m, s in buildable(family, SAMPLE):
        checked += 1
        r = verify(s, certificates=False)
        if not r.valid:
            invalid.append(f"p={p} m={m}: {r.violations[0].to_text()}")
    assert not invalid, invalid[:5]
    assert checked > 0
