"""Chimera with the paper's concatenated basic units (``units=concat``).

Expected values come from the Chimera paper (Li & Hoefler SC'21, arXiv 2107.06925: p=4, m=8 takes 18 units at
tF = tB and 30 at tB = 2tF; m=4 takes 16; activations between p/2+1 and p) and from small cases
worked out by hand below; none is copied from ppverify's output.
"""

from __future__ import annotations

import numpy as np
import pytest

from ppverify.cli import main
from ppverify.core.costs import CostModel
from ppverify.core.dag import build_dag, structural_problems
from ppverify.core.errors import ParameterError
from ppverify.engines import run
from ppverify.engines.formulas import EXACT, LOWER, UPPER, chimera_asym_formula, chimera_formula
from ppverify.schedules import build


def table(schedule, F=1, B=1):
    return run(schedule, CostModel.abstract(schedule.placement, F=F, B=B), semantics="slot")


def prog(schedule, d):
    return [str(o) for o in schedule.programs[d]]


def dag_violations(schedule, tl) -> int:
    """Ops that start before one of their inputs ends, plus overlapping ops on one device."""
    dag = build_dag(schedule)
    start, end = np.asarray(tl.start), np.asarray(tl.end)
    bad = 0
    for i, preds in enumerate(dag.pred):
        bad += sum(1 for q in preds if q >= 0 and start[i] < end[q] - 1e-9)
    for d in range(schedule.p):
        idx = sorted((i for i in range(dag.num_ops) if dag.device[i] == d), key=lambda i: start[i])
        bad += sum(1 for a, b in zip(idx, idx[1:]) if start[b] < end[a] - 1e-9)
    return bad


# ---- the paper's numbers ----------------------------------------------------------------------------


def test_reference_numbers_p4():
    s = build("chimera", 4, 8, units="concat")
    assert table(s).makespan == 18  # 2m + p - 2: seamless at tF = tB
    assert table(s, F=1, B=2).makespan == 30  # the paper's intermediate bubbles
    assert table(build("chimera", 4, 4, units="concat"), F=1, B=2).makespan == 16
    # activations between p/2 + 1 (edge devices) and p (middle devices), never above p
    for c in ({}, {"F": 1, "B": 2}, {"F": 2, "B": 1}):
        assert table(s, **c).peak_memory().tolist() == [3, 4, 4, 3]


def test_continuous_default_is_unchanged():
    # the other construction stays the default: 28 at F=1,B=2 with p+1 activations (module doc)
    s = build("chimera", 4, 8)
    assert "units" not in s.params
    assert table(s, F=1, B=2).makespan == 28 and table(s).peak_memory().max() == 5
    assert build("chimera", 4, 8, units="continuous").programs == s.programs


# ---- small cases by hand -------------------------------------------------------------------------


def test_p2_units_run_back_to_back():
    # p=2 unit: slot 0 dev0 0F0 / dev1 0F1; slot 1 1F1 / 1F0; slot 2 1B1 / 1B0; slot 3 0B0 / 0B1:
    # no idle slot, so nothing of unit 2 can move earlier: k units take k * 2(tF+tB)
    s = build("chimera", 2, 4, units="concat")
    assert prog(s, 0) == ["0F0", "1F1", "1B1", "0B0", "0F2", "1F3", "1B3", "0B2"]
    assert prog(s, 1) == ["0F1", "1F0", "1B0", "0B1", "0F3", "1F2", "1B2", "0B3"]
    assert table(s).makespan == 8 and table(s, F=1, B=2).makespan == 12
    assert table(s).peak_memory().tolist() == [2, 2]


def test_p4_device0_fills_the_drain_with_the_next_units_forwards():
    # The p=4 unit on device 0 (paper Fig. 3): 0F0 0F1 . 3F2 3B2 3F3 3B3 0B0 . 0B1 (slots 0..9).
    # Its drain starts after 3F3; slot 8 is idle, so unit 2's first forward 0F4 goes there
    # (1 activation held < 3); slot 9 is 0B1 (its input 1B1 ended at 9); unit 2 then runs its own
    # order from 0F5 on, 8 slots after unit 1 except 0F5, which takes its unit's idle slot 2 + 8.
    s = build("chimera", 4, 8, units="concat")
    assert prog(s, 0) == [
        "0F0",
        "0F1",
        "3F2",
        "3B2",
        "3F3",
        "3B3",
        "0B0",
        "0F4",
        "0B1",
        "0F5",
        "3F6",
        "3B6",
        "3F7",
        "3B7",
        "0B4",
        "0B5",
    ]
    tl = table(s)
    starts = {str(op): int(t) for op, t in zip(tl.ops, tl.start)}
    assert [starts[o] for o in ("0B0", "0F4", "0B1", "0F5", "3F6", "0B5")] == [7, 8, 9, 10, 11, 17]


def test_one_unit_is_the_basic_unit():
    for p in (2, 4, 6):
        assert build("chimera", p, p, units="concat").programs == build("chimera", p, p).programs


# ---- validity --------------------------------------------------------------------------------------


@pytest.mark.parametrize("p", [2, 4, 6, 8, 10, 12, 14, 16])
def test_structure_and_dag_over_the_grid(p):
    for m in range(p, 65, p):
        s = build("chimera", p, m, units="concat")
        assert structural_problems(s) == [], (p, m)
        for c in ({}, {"F": 1, "B": 2}):
            tl = table(s, **c)
            assert dag_violations(s, tl) == 0, (p, m, c)
            assert tl.peak_memory().max() <= p


def test_asym_concat_valid_and_within_one_unit_of_memory():
    for p in (2, 4, 6, 8):
        for offset in range(p):
            for down in range(1, p):
                unit = table(build("chimera-asym", p, p, offset=offset, down=down))
                s = build("chimera-asym", p, 3 * p, offset=offset, down=down, units="concat")
                assert structural_problems(s) == []
                tl = table(s, F=1, B=2)
                assert dag_violations(s, tl) == 0, (p, offset, down)
                assert (tl.peak_memory() <= unit.peak_memory()).all()
    sym = build("chimera-asym", 6, 18, offset=0, down=3, units="concat")
    assert sym.programs == build("chimera", 6, 18, units="concat").programs


# ---- formula ---------------------------------------------------------------------------------------


def test_formula_reference_values():
    assert chimera_formula(4, 8, units="concat").makespan == 18
    f = chimera_formula(4, 8, {"F": 1, "B": 2}, units="concat")
    assert (f.makespan, f.peak_activations, f.exact) == (30, (3, 4, 4, 3), True)
    assert chimera_formula(4, 4, {"F": 1, "B": 2}, units="concat").makespan == 16
    # p >= 6 with tF != tB: only the fill/drain lower bound (m + p/2 - 1)(tF+tB) = (12+2)*3
    g = chimera_formula(6, 12, {"F": 1, "B": 2}, units="concat")
    assert (g.makespan, g.makespan_kind, g.peak_kind) == (42, LOWER, EXACT)
    a = chimera_asym_formula(4, 8, units="concat")
    assert (a.makespan_kind, a.peak_kind) == (LOWER, UPPER)


def test_formula_against_table_over_the_grid():
    # p even 2..16, m a multiple of p up to 64; exact claims must equal the table, bounds must hold
    for p in range(2, 17, 2):
        for m in range(p, 65, p):
            s = build("chimera", p, m, units="concat")
            for c in (None, {"F": 1, "B": 2}, {"F": 2, "B": 1}, {"F": 2, "B": 3}):
                f = chimera_formula(p, m, c, units="concat")
                tl = table(s, **(c or {}))
                if f.makespan_kind == EXACT:
                    assert tl.makespan == f.makespan, (p, m, c)
                    assert tl.bubble_ratio == pytest.approx(f.bubble_ratio)
                else:
                    assert tl.makespan >= f.makespan, (p, m, c)
                assert tl.peak_memory().tolist() == list(f.peak_activations), (p, m, c)


def test_concat_at_equal_costs_seamless_up_to_p4_then_not():
    # the paper's bubble (p-2)/(2m+p-2) holds for p = 2, 4; from p = 6 on, filling only the drain
    # leaves 2*floor((p-2)/4) idle slots per unit boundary (p=6, m=12: 30 > 28)
    for p, m in ((2, 8), (4, 16)):
        assert table(build("chimera", p, m, units="concat")).makespan == 2 * m + p - 2
    assert table(build("chimera", 6, 12, units="concat")).makespan == 30


# ---- parameters and CLI ----------------------------------------------------------------------------


def test_bad_units_named():
    for fam in ("chimera", "chimera-asym"):
        with pytest.raises(ParameterError) as err:
            build(fam, 4, 8, units="seamless")
        assert err.value.name == "units" and "continuous, concat" in str(err.value)
    with pytest.raises(ParameterError):
        chimera_formula(4, 8, units="seamless")
    assert build("chimera", 4, 8, units=" Concat ").params["units"] == "concat"


def test_cli_show_concat(capsys):
    assert main(["show", "chimera", "-p", "4", "-m", "8", "--units", "concat", "--costs", "F=1,B=2"]) == 0
    out = capsys.readouterr().out
    assert "units=concat" in out and "makespan      30 units" in out
    assert main(["show", "chimera", "-p", "4", "-m", "8", "--units", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "units" in err


def test_json_round_trip_keeps_units_and_order(capsys):
    from ppverify.io.json_format import schedule_from_dict, schedule_to_dict

    s = build("chimera-asym", 4, 12, offset=1, down=1, units="concat")
    back = schedule_from_dict(schedule_to_dict(s))
    assert back.programs == s.programs and back.params["units"] == "concat"
    assert main(["show", "chimera", "-p", "4", "-m", "8", "--units", "concat", "--json"]) == 0
    import json

    d = json.loads(capsys.readouterr().out)
    # at the default costs F=1, B=2 the concatenated Chimera finishes at 30 (the reference claim the
    # Z3 test below proves: by 30, not by 29)
    assert d["makespan"] == 30 and d["peak_activations"] == [3, 4, 4, 3]


def test_z3_verifier_proves_the_reference_claims():
    # cross-check with the Z3 verifier (ppverify.verify), independent of the slot engine: the
    # programs are complete, ordered, deadlock-free, within p activations, and finish by 30 at
    # F=1,B=2 but not by 29; the default construction does not fit in p activations
    from ppverify.verify import verify

    s = build("chimera", 4, 8, units="concat")
    c = CostModel.abstract(s.placement, F=1, B=2)
    r = verify(s, costs=c, memory_cap=4, makespan_le=30)
    assert r.valid and {"deadlock", "memory", "timing"} <= {name for name, _ in r.proved}
    late = verify(s, costs=c, makespan_le=29)
    assert not late.valid and [v.to_text().split(":")[0] for v in late.violations] == ["timing"]
    assert not verify(build("chimera", 4, 8), memory_cap=4).valid
    assert verify(build("chimera", 8, 24, units="concat"), memory_cap=8).valid


def test_cli_verify_says_valid(capsys):
    pytest.importorskip("ppverify.cli.commands.verify", reason="the verify command is not in this tree yet")
    assert main(["verify", "chimera", "-p", "4", "-m", "8", "--units", "concat"]) == 0
    assert capsys.readouterr().out.startswith("VALID: chimera p=4 m=8 units=concat")
