"""Schedule families: hand-derived programs and tables, parameter rules, structural validity.

Expected values come from the papers' figures and formulas or are worked out by hand in the
comments (ppverify's conventions: costs per device share, unit slots by default).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppverify.core.costs import CostModel
from ppverify.core.dag import build_dag, structural_problems
from ppverify.core.errors import ParameterError
from ppverify.engines import run
from ppverify.schedules import build, get_family
from ppverify.schedules.hanayo import OUTSIDE_REGIME

NEW_FAMILIES = ("interleaved-1f1b", "chimera", "chimera-asym", "hanayo", "1f1b-split")


def table(schedule, **costs):
    cm = CostModel.abstract(schedule.placement, **costs) if costs else CostModel.unit(schedule.placement)
    return run(schedule, cm, semantics="slot")


def prog(schedule, d):
    return [str(o) for o in schedule.programs[d]]


def table_problems(schedule, tl) -> list[str]:
    """Independent check of a timeline against the step DAG: every edge respected, one op at a time."""
    dag = build_dag(schedule)
    assert [str(o) for o in dag.ops] == [str(o) for o in tl.ops]
    start, end = np.asarray(tl.start), np.asarray(tl.end)
    pred = np.asarray(dag.pred)
    out = []
    for k in (0, 1):
        has = pred[:, k] >= 0
        late = has & (start < end[np.maximum(pred[:, k], 0)] - 1e-9)
        out += [f"{dag.ops[i]} starts before its predecessor {dag.ops[pred[i, k]]} ends" for i in np.flatnonzero(late)]
    for d in range(schedule.p):
        sel = np.flatnonzero(np.asarray(tl.device) == d)
        order = sel[np.argsort(start[sel], kind="stable")]
        overlap = end[order[:-1]] > start[order[1:]] + 1e-9
        out += [f"device {d} runs two ops at once" for _ in np.flatnonzero(overlap)]
    return out


# ---- the numbers of issue 2, item 6 -------------------------------------------------------------


def test_issue_numbers_unit_costs():
    g = table(build("gpipe", 4, 4))
    assert g.makespan == 14 and round(g.bubble_ratio, 4) == 0.4286  # (p-1)/(m+p-1) = 3/7
    o = table(build("1f1b", 4, 4))
    assert o.makespan == 14 and o.peak_memory().tolist() == [4, 3, 2, 1]
    c = table(build("chimera", 4, 4))
    assert c.makespan == 10 and c.bubble_ratio == pytest.approx(0.20)  # (p-2)/(2m+p-2) = 2/10
    assert c.peak_memory().tolist() == [3, 4, 4, 3]  # p/2+1 at the edges, p in the middle
    h = table(build("hanayo", 4, 4, waves=1))
    assert h.makespan == 11  # 2m + (p-1)/W
    assert h.peak_memory().tolist() == [2.5, 3, 3.5, 4]  # chunks of 1/2: 5, 6, 7, 8
    assert table(build("hanayo", 4, 4, waves=2), F=1, B=1).makespan == 9.5  # 8 + 3/2


def test_issue_numbers_f1_b2_and_m8():
    for fam in ("gpipe", "1f1b"):
        assert table(build(fam, 4, 4), F=1, B=2).makespan == 21  # (m+p-1)(tF+tB) = 7*3
        assert table(build(fam, 4, 8), F=1, B=1).makespan == 22  # 11*2
        assert table(build(fam, 4, 8), F=1, B=2).makespan == 33  # 11*3
    assert table(build("chimera", 4, 4), F=1, B=2).makespan == 16  # Li & Hoefler SC'21
    assert table(build("chimera", 4, 8), F=1, B=1).makespan == 18  # 2m + p - 2
    assert table(build("interleaved-1f1b", 4, 8, v=2), F=1, B=1).makespan == 19  # 16 + 3*2/2


# ---- programs worked out by hand ------------------------------------------------------------------


def test_chimera_basic_unit_programs_match_the_paper_figure():
    # Li & Hoefler Fig. 3 (D=4, N=4): down pipe mbs 0,1 (stage s on device s), up pipe mbs 2,3
    # (stage s on device 3-s). Device 0 = stage 0 down / stage 3 up; device 1 = stage 1 / stage 2.
    s = build("chimera", 4, 4)
    assert s.pipe_of_mb == (0, 0, 1, 1)
    assert prog(s, 0) == ["0F0", "0F1", "3F2", "3B2", "3F3", "3B3", "0B0", "0B1"]
    assert prog(s, 1) == ["1F0", "2F2", "1F1", "2F3", "2B2", "1B0", "2B3", "1B1"]
    # device 3 mirrors device 0 with the pipes swapped
    assert prog(s, 3) == ["0F2", "0F3", "3F0", "3B0", "3F1", "3B1", "0B2", "0B3"]
    tl = table(s)
    # device 0 idles exactly in slots 2 and 8 (the figure's two bubbles)
    busy = {int(t) for t, d in zip(tl.start, tl.device) if d == 0}
    assert set(range(10)) - busy == {2, 8}


def test_interleaved_program_follows_megatron_order():
    # p=2, m=4, v=2: forward k runs chunk (k mod 4) div 2 of mb (k div 4)*2 + k mod 2;
    # device 0 warm-up 2*(p-d-1) + (v-1)*p = 4, device 1: 2.
    s = build("interleaved-1f1b", 2, 4, v=2)
    assert s.placement.maps == ((0, 1, 0, 1),)
    assert prog(s, 0) == [
        "0F0",
        "0F1",
        "2F0",
        "2F1",  # warm-up
        "0F2",
        "2B0",
        "0F3",
        "2B1",
        "2F2",
        "0B0",
        "2F3",
        "0B1",
        "2B2",
        "2B3",
        "0B2",
        "0B3",
    ]
    assert prog(s, 1) == [
        "1F0",
        "1F1",
        "3F0",
        "3B0",
        "3F1",
        "3B1",
        "1F2",
        "1B0",
        "1F3",
        "1B1",
        "3F2",
        "3B2",
        "3F3",
        "3B3",
        "1B2",
        "1B3",
    ]


def test_interleaved_v1_is_1f1b():
    for p, m in ((1, 1), (3, 5), (4, 4), (5, 2), (4, 9)):
        assert build("interleaved-1f1b", p, m, v=1).programs == build("1f1b", p, m).programs


def test_hanayo_program_follows_elf_order():
    # p=2, m=2, W=1: device 0 holds stages 0 and 3, device 1 stages 1 and 2.
    # warm-up: device 0 F(0, mb<2), device 1 F(1, mb<1); then per mb, devices descending:
    # up-leg forward, then the next down-leg forward or (all issued) the next up-leg backward.
    s = build("hanayo", 2, 2)
    assert s.placement.maps == ((0, 1, 1, 0),)
    assert prog(s, 1) == ["1F0", "2F0", "1F1", "2F1", "2B0", "1B0", "2B1", "1B1"]
    assert prog(s, 0) == ["0F0", "0F1", "3F0", "3B0", "3F1", "3B1", "0B0", "0B1"]


def test_1f1b_split_replaces_each_backward_by_i_then_w():
    s = build("1f1b-split", 3, 3)
    base = build("1f1b", 3, 3)
    for d in range(3):
        expect = []
        for o in prog(base, d):
            expect += [o.replace("B", "I"), o.replace("B", "W")] if "B" in o else [o]
        assert prog(s, d) == expect
    # unit slots (F = I = W = 1): m(tF+tI+tW) + (p-1)(tF+tI) = 9 + 4
    assert table(s).makespan == 13


def test_chimera_asym_defaults_and_its_symmetric_case():
    s = build("chimera-asym", 4, 8)
    assert s.params["offset"] == 1 and s.params["down"] == 2
    assert s.placement.maps[1] == (0, 3, 2, 1)  # (p-1-s+1) mod 4
    sym = build("chimera-asym", 4, 8, offset=0, down=2)
    assert sym.programs == build("chimera", 4, 8).programs
    uneven = build("chimera-asym", 6, 12, offset=0, down=2)
    assert uneven.pipe_of_mb == (0, 0, 1, 1, 1, 1) * 2


def test_hanayo_reports_outside_regime():
    assert "regime" not in build("hanayo", 4, 4).params
    assert build("hanayo", 4, 8).params["regime"] == OUTSIDE_REGIME
    assert build("hanayo", 4, 2, waves=2).params["regime"] == OUTSIDE_REGIME


def test_every_family_has_formula_params_and_rules():
    for name in NEW_FAMILIES + ("gpipe", "1f1b"):
        fam = get_family(name)
        assert fam.formula is not None and fam.rules
    assert [p.name for p in get_family("interleaved-1f1b").params] == ["v", "order"]
    assert [p.name for p in get_family("hanayo").params] == ["waves"]
    assert [p.name for p in get_family("chimera-asym").params] == ["offset", "down", "units"]
    assert [p.name for p in get_family("chimera").params] == ["units"]


# ---- bad parameters: one ParameterError naming the parameter and the rule -------------------------


@pytest.mark.parametrize(
    "name, p, m, kw, param, words",
    [
        ("chimera", 3, 3, {}, "p", "even"),
        ("chimera", 4, 6, {}, "m", "multiple of p=4"),
        ("chimera-asym", 5, 5, {}, "p", "even"),
        ("chimera-asym", 4, 4, {"down": 0}, "down", "1 <= down <= p-1"),
        ("chimera-asym", 4, 4, {"down": 4}, "down", "1 <= down <= p-1"),
        ("interleaved-1f1b", 4, 9, {"v": 2}, "m", "multiple of the number of rounds"),
        ("interleaved-1f1b", 4, 4, {"v": 0}, "v", ">= 1"),
        ("hanayo", 4, 4, {"waves": 0}, "waves", ">= 1"),
        ("hanayo", 4, 0, {}, "m", ">= 1"),
        ("1f1b-split", 0, 4, {}, "p", ">= 1"),
        ("chimera", 4, 0, {}, "m", ">= 1"),
        ("chimera", 4, 8, {"units": "pipelined"}, "units", "one of continuous, concat"),
        ("chimera-asym", 4, 8, {"units": 2}, "units", "one of continuous, concat"),
    ],
)
def test_bad_parameters(name, p, m, kw, param, words):
    with pytest.raises(ParameterError) as err:
        build(name, p, m, **kw)
    assert err.value.name == param
    assert words in str(err.value)


# ---- structural validity: fast sample here, the full grid in the slow test ---------------------


def _cases(p: int, m: int):
    yield "gpipe", {}
    yield "1f1b", {}
    yield "1f1b-split", {}
    for w in (1, 2):
        yield "hanayo", {"waves": w}
    for v in (1, 2, 3, 4):
        if v == 1 or m % max(1, m // p) == 0:  # PyTorch's rounds rule
            yield "interleaved-1f1b", {"v": v}
    if p % 2 == 0 and m % p == 0:
        yield "chimera", {}
        yield "chimera", {"units": "concat"}
        yield "chimera-asym", {}
        yield "chimera-asym", {"offset": p // 2, "down": 1}
        yield "chimera-asym", {"offset": p // 2, "down": 1, "units": "concat"}


def _check_valid(p: int, m: int, **costs) -> None:
    for name, kw in _cases(p, m):
        s = build(name, p, m, **kw)
        assert structural_problems(s) == [], (name, p, m, kw)
        tl = table(s, **costs)  # raises DeadlockError if the order cannot complete
        assert table_problems(s, tl) == [], (name, p, m, kw)


@settings(max_examples=25, deadline=None)
@given(p=st.integers(1, 8), k=st.integers(1, 4), extra=st.integers(0, 7))
def test_generated_schedules_are_valid_sample(p, k, extra):
    _check_valid(p, k * p)  # multiples of p exercise every family
    _check_valid(p, extra + 1, F=1, B=2)  # any m (families with an m rule are skipped)


@settings(max_examples=15, deadline=None)
@given(
    half=st.integers(1, 4),
    k=st.integers(1, 3),
    offset=st.integers(0, 7),
    down=st.integers(1, 7),
    units=st.sampled_from(["continuous", "concat"]),
)
def test_chimera_asym_never_deadlocks_sample(half, k, offset, down, units):
    p = 2 * half
    s = build("chimera-asym", p, k * p, offset=offset, down=min(down, p - 1), units=units)
    assert structural_problems(s) == []
    assert table_problems(s, table(s, F=1, B=2)) == []


@pytest.mark.slow
def test_generated_schedules_are_valid_strided_grid():
    # the full p in 2..16 x m in 1..64 grid runs in tests/schedules/test_formulas.py (structure + formula);
    # here a strided subset also checks one op at a time per device, under F=1,B=2
    for p in range(2, 17, 2):
        for m in sorted({1, p - 1, p, p + 1, 2 * p, 64 // p * p} - {0}):
            _check_valid(p, m, F=1, B=2)


@pytest.mark.slow
def test_chimera_asym_valid_every_offset_and_split():
    for p in range(2, 11, 2):
        for m in (p, 2 * p, 3 * p):
            for offset in range(p):
                for down in range(1, p):
                    for units in ("continuous", "concat"):
                        s = build("chimera-asym", p, m, offset=offset, down=down, units=units)
                        assert structural_problems(s) == []
                        assert table_problems(s, table(s)) == [], (p, m, offset, down, units)
