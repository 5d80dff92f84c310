"""An op run before its own input on one device is a dependency violation at every problem size.

Above ``GUARDED_LIMIT`` edges the core search starts from a strongly connected component's cycle;
it used to find a deadlock through the swapped op first, set aside every edge touching it, and
then claim "proved dependencies" with the violated edge never reported. The expected values come
from the step's DAG rules (docs/verification.md: "backward after its forward", "W after its own
I"), counted by hand below.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ppverify.verify.order as order
from ppverify.schedules import build
from ppverify.verify import verify


def swapped(s, device: int, first: str, second: str):
    progs = [list(pr) for pr in s.programs]
    texts = [str(o) for o in progs[device]]
    i, j = texts.index(first), texts.index(second)
    progs[device][i], progs[device][j] = progs[device][j], progs[device][i]
    return s.with_programs(tuple(tuple(pr) for pr in progs))


def dependency_cores(report) -> list[set[str]]:
    return [set(v.ops) for v in report.violations if v.prop == "dependencies"]


@pytest.mark.parametrize("m", [64, 128])
def test_1f1b_p64_swap_is_a_dependency_violation_on_both_paths(m):
    # 1F1B's DAG per microbatch at p = 64: 63 "forward after the previous stage's forward" edges,
    # 63 "backward after the next stage's backward", 64 "backward after its forward": 190.
    # m = 64: 12,160 edges (Z3's own core); m = 128: 24,320 > GUARDED_LIMIT (20,000: the cycle path)
    r = verify(swapped(build("1f1b", p=64, m=m), 2, "2F1", "2B1"))
    assert r.stats["order_constraints"] == 190 * m
    assert (190 * m > order.GUARDED_LIMIT) == (m == 128)
    assert dependency_cores(r) == [{"2B1", "2F1"}]
    assert "dependencies" not in {p for p, _ in r.proved}
    assert not [v for v in r.violations if v.prop == "deadlock"]  # one fault, reported once


def test_zb_h1_p64_w_before_its_own_i_is_reported():
    # zb-h1 at p = 64, m = 128: 3 ops per (stage, microbatch), 63 + 63 cross-stage edges, F -> I
    # and I -> W per stage (64 + 64): 254 per microbatch, 32,512 edges in all (> GUARDED_LIMIT)
    r = verify(swapped(build("zb-h1", p=64, m=128), 10, "10I3", "10W3"))
    assert r.stats["order_constraints"] == 254 * 128 > order.GUARDED_LIMIT
    assert [v.rule for v in r.violations if v.prop == "dependencies"] == ["W after its own I"]
    assert dependency_cores(r) == [{"10W3", "10I3"}]
    assert "dependencies" not in {p for p, _ in r.proved}


# (earlier kind, later kind) on one stage and microbatch that the DAG orders directly
NEEDS = {("F", "B"), ("F", "I"), ("I", "W")}
FAMILIES = ["1f1b", "gpipe", "1f1b-split", "zb-h1", "interleaved-1f1b", "zbv", "chimera"]


@st.composite
def swaps(draw):
    family = draw(st.sampled_from(FAMILIES))
    p = draw(st.sampled_from([2, 4]))
    m = p * draw(st.integers(1, 2))
    s = build(family, p=p, m=m)
    pairs = [
        (d, str(a), str(b))
        for d, pr in enumerate(s.programs)
        for i, a in enumerate(pr)
        for b in pr[i + 1 :]
        if (a.stage, a.mb) == (b.stage, b.mb) and (a.kind, b.kind) in NEEDS
    ]
    return s, draw(st.sampled_from(pairs))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(swaps())
def test_guarded_path_reports_every_same_device_swap_as_dependencies(case):
    # the cycle path on small schedules (GUARDED_LIMIT lowered): a later op moved before the op it
    # needs on its own device is always a dependencies violation, never "proved". The swap may
    # break other edges of the device too (zbv: 1I2 moved before 2I2, the next stage's I it
    # needs, on the same device); each fault is reported once, its ops set aside, so the core
    # that names a swapped op may be one of those
    s, (device, first, second) = case
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(order, "GUARDED_LIMIT", 0)
        r = verify(swapped(s, device, first, second))
    cores = dependency_cores(r)
    assert any(core & {first, second} for core in cores)
    assert all(len(core) == 2 for core in cores)  # one edge of one device, each
    assert "dependencies" not in {p for p, _ in r.proved}
