"""The modern schedule zoo: zb-h1, zb-h2, zbv, dualpipe, dualpipev, looped-bfs.

Structural validity and deadlock freedom over a grid; formulas against the slot table (exact
claims equal, bounds on the right side); hand-derived values; and, where PyTorch ships the same
schedule, ppverify's order against PyTorch's (without torch: against PyTorch's DualPipeV fixture).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.dag import structural_problems
from ppverify.core.errors import ParameterError
from ppverify.core.ops import Overlap
from ppverify.engines import run
from ppverify.engines.formulas import EXACT, LOWER, UPPER, formula_for
from ppverify.io.torch_csv import load_csv
from ppverify.io.torch_interop import order_differences
from ppverify.schedules import build, get_family

DATA = Path(__file__).resolve().parents[1] / "data" / "torch"
ZOO = {
    "zb-h1": {},
    "zb-h2": {},
    "zbv": {},
    "dualpipe": {},
    "dualpipev": {},
    "looped-bfs": {"v": 2},
    "interleaved-zb": {"v": 2},
}
COSTS = [
    None,
    {"F": 1, "B": 2},
    {"F": 1, "I": 1, "W": 1},
    {"F": 1, "I": 2, "W": 1},
    {"F": 2, "I": 1, "W": 1},
    {"F": 1, "I": 1, "W": 2},
    {"F": 1, "I": 1, "W": 0.5},
    {"F": 2, "I": 2, "W": 1},
]


def grid(buildable, family):
    sizes = [(p, m) for p in range(1, 7) for m in (1, 2, 3, 4, 5, 6, 8, 9, 12, 16)]
    return buildable(family, sizes, **ZOO[family])


@pytest.mark.parametrize("family", sorted(ZOO))
def test_registered_with_formula(family):
    fam = get_family(family)
    assert fam.formula is not None and fam.description


@pytest.mark.parametrize("family", sorted(ZOO))
def test_structurally_valid_and_deadlock_free_on_grid(family, buildable):
    n = 0
    for p, m, s in grid(buildable, family):
        assert structural_problems(s) == [], (family, p, m)
        tl = run(s, semantics="slot")  # raises DeadlockError if the programs cannot complete
        assert tl.makespan > 0
        if m <= 8:
            # cross-check two abstractions: without idle slots or delays, the event-driven engine
            # times the same programs exactly like the table; a per-hop delay only slows it down
            costs = CostModel.abstract(s.placement, F=1, B=2)
            a = run(s, costs, semantics="async").makespan
            assert a == pytest.approx(run(s, costs, semantics="slot").makespan), (family, p, m)
            assert run(s, costs, FixedDelay(0.25), semantics="async").makespan >= a - 1e-9
        n += 1
    assert n >= 10


@pytest.mark.parametrize("family", sorted(ZOO))
def test_formula_against_table(family, buildable):
    checked = 0
    for p, m, s in grid(buildable, family):
        if p > 4 and m > 9:
            continue
        for c in COSTS:
            cm = CostModel.unit(s.placement) if c is None else CostModel.abstract(s.placement, **c)
            tl = run(s, cm, semantics="slot")
            f = formula_for(family, p, m, c, **ZOO[family])
            if f.makespan_kind == EXACT:
                assert tl.makespan == pytest.approx(f.makespan), (family, p, m, c)
            elif f.makespan_kind == LOWER:
                assert tl.makespan >= f.makespan - 1e-9, (family, p, m, c)
            peaks = tl.peak_memory().tolist()
            for got, want in zip(peaks, f.peak_activations):
                if f.peak_kind == EXACT:
                    assert got == pytest.approx(want), (family, p, m, c, peaks)
                elif f.peak_kind == UPPER:
                    assert got <= want + 1e-9, (family, p, m, c, peaks)
            checked += 1
    assert checked >= 40


def test_looped_bfs_by_hand():
    # p=2, m=2, v=2, F=B=1 per share -> chunk ops last 1/2. Forward: F(s, mb) at (s + mb)/2 since
    # m <= p, the last forward F(3,1) ends at (3+1+1)/2 = 2.5; backward mirrors: 2 * 2.5 = 5.
    s = build("looped-bfs", p=2, m=2, v=2)
    assert run(s, semantics="slot").makespan == 5.0
    # m=4 >= p: device 1 runs its 8 chunk forwards back to back from 1/2: ends at 4.5, then the
    # backward drains the same way: 4.5 + 4 + 1/2 = 9.0
    assert run(build("looped-bfs", p=2, m=4, v=2), semantics="slot").makespan == 9.0


def test_zb_h1_and_zb_h2_reach_the_one_step_bound_at_equal_costs():
    # no one-step schedule beats (p-1)tF + m(tF+tI+tW): the last device waits p-1 forwards and
    # then has 3m unit ops. 1F1B-split pays (p-1)(tF+tI) instead (here 2(p-1)).
    for p, m in [(2, 4), (4, 4), (4, 8), (6, 12)]:
        bound = (p - 1) + 3 * m
        assert run(build("zb-h1", p=p, m=m), semantics="slot").makespan == bound
        assert run(build("zb-h2", p=p, m=m), semantics="slot").makespan == bound
        assert run(build("1f1b-split", p=p, m=m), semantics="slot").makespan == 3 * m + 2 * (p - 1)


def test_zb_h2_beats_zb_h1_when_input_grad_is_dear():
    # tI = 2: ZB-H1 pays (p-1)(tF + tI - tW) = 2(p-1); the greedy ZB-H2 order (built at equal costs)
    # stays within the bound + (p-1) here; with memory 2p-1 instead of p
    c = {"F": 1, "I": 2, "W": 1}
    p, m = 4, 8
    h1 = run(build("zb-h1", p=p, m=m), CostModel.abstract(build("zb-h1", p=p, m=m).placement, **c), semantics="slot")
    h2 = run(build("zb-h2", p=p, m=m), CostModel.abstract(build("zb-h2", p=p, m=m).placement, **c), semantics="slot")
    assert h1.makespan == 4 * m + 2 * (p - 1) == 38
    assert h2.makespan == 4 * m + (p - 1) == 35
    assert max(h1.peak_memory()) == p and max(h2.peak_memory()) == 2 * p - 1


def test_zbv_zero_bubble_beyond_the_fill_at_equal_costs():
    # chunk ops are 1/2: the fill is (p-1)/2, then 3m busy
    for p, m in [(2, 4), (4, 8), (4, 12)]:
        assert run(build("zbv", p=p, m=m), semantics="slot").makespan == 3 * m + (p - 1) / 2


def test_interleaved_zb_with_one_chunk_is_zb_h1():
    for p, m in [(1, 3), (2, 4), (4, 8), (3, 7)]:
        assert order_differences(build("interleaved-zb", p=p, m=m, v=1), build("zb-h1", p=p, m=m)) == []


def test_dualpipe_parameter_rules():
    with pytest.raises(ParameterError, match="even p"):
        build("dualpipe", p=3, m=12)
    with pytest.raises(ParameterError, match="m >= 2p"):
        build("dualpipe", p=4, m=6)
    with pytest.raises(ParameterError, match="m >= 2p"):
        build("dualpipev", p=4, m=7)


def test_dualpipe_is_bidirectional_with_overlapped_slots():
    s = build("dualpipe", p=4, m=8)
    assert s.placement.name == "bidirectional" and s.pipe_of_mb == (0,) * 4 + (1,) * 4
    assert any(isinstance(a, Overlap) for prog in s.programs for a in prog)
    # each device holds two stage replicas: pipe 0 stage d and pipe 1 stage p-1-d
    for d in range(4):
        ops = list(s.ops(d))
        assert {(o.stage, s.pipe_of_mb[o.mb]) for o in ops} == {(d, 0), (3 - d, 1)}


def test_dualpipev_equals_pytorch_fixture():
    # tests/data/torch/dualpipev_4rank_10mb.csv is PyTorch's expected ScheduleDualPipeV order
    ref = load_csv(DATA / "dualpipev_4rank_10mb.csv")
    ours = build("dualpipev", p=4, m=10)
    assert ref.placement.maps == ours.placement.maps
    assert [list(map(str, p)) for p in ours.programs] == [list(map(str, p)) for p in ref.programs]


def test_overlap_changes_dualpipe_timing():
    s = build("dualpipev", p=4, m=8)
    full = run(s, CostModel.abstract(s.placement, F=1, B=2), semantics="slot").makespan
    fast = run(s, CostModel.abstract(s.placement, F=1, B=2, overlap=0.5), semantics="slot").makespan
    assert fast < full


# --- against PyTorch's own classes ------------------------------------------------------------

import ppverify.io.torch_interop as torch_interop  # torch is a test dependency

# ppverify family -> (PyTorch class, stages per rank)
SAME_AS_TORCH = {
    "looped-bfs": ("LoopedBFS", None),
    "zb-h1": ("InterleavedZeroBubble", 1),
    "interleaved-zb": ("InterleavedZeroBubble", None),
    "zbv": ("ZBVZeroBubble", 2),
    "dualpipev": ("DualPipeV", 2),
    "gpipe": ("GPipe", 1),
}


@pytest.mark.parametrize("family", sorted(SAME_AS_TORCH))
def test_order_equals_pytorch(family):
    cls, v = SAME_AS_TORCH[family]
    compared = 0
    for p in (2, 3, 4):
        for m in (1, 2, 3, 4, 6, 8, 10, 12, 16):
            for vv in [v] if v else [1, 2, 3]:
                params = {"v": vv} if family in ("looped-bfs", "interleaved-zb") else {}
                try:
                    ours = build(family, p=p, m=m, **params)
                    theirs = torch_interop.torch_schedule(cls, p, m, vv)
                except ParameterError:
                    continue
                assert order_differences(ours, theirs) == [], (family, p, m, vv)
                compared += 1
    assert compared >= 10


def test_interleaved_equals_pytorch_and_megatron_differs_only_when_m_equals_p():
    # the default order is PyTorch's for every m (m == p included); order=megatron runs every
    # forward first at m == p (Megatron-LM) and equals PyTorch elsewhere. At m == p: same makespan,
    # same peak on device 0 (both run all m*v forwards first there), lower last-device peak in PyTorch.
    for p, m, v in [(2, 4, 2), (4, 8, 2), (4, 12, 3), (3, 6, 2), (2, 2, 2), (4, 4, 2), (4, 4, 3), (5, 5, 3)]:
        theirs = torch_interop.torch_schedule("Interleaved1F1B", p, m, v)
        assert order_differences(build("interleaved-1f1b", p=p, m=m, v=v), theirs) == [], (p, m, v)
        megatron = build("interleaved-1f1b", p=p, m=m, v=v, order="megatron")
        assert (order_differences(megatron, theirs) != []) == (m == p), (p, m, v)
    for p, v in [(2, 2), (4, 2), (4, 3)]:
        ours = build("interleaved-1f1b", p=p, m=p, v=v, order="megatron")
        theirs = torch_interop.torch_schedule("Interleaved1F1B", p, p, v, strip_idle=True)
        a, b = run(ours, semantics="slot"), run(theirs, semantics="slot")
        assert a.makespan == b.makespan
        assert max(b.peak_memory()) == max(a.peak_memory())
        assert b.peak_memory()[-1] < a.peak_memory()[-1]


def test_z3_verifier_proves_the_zoo(buildable):
    from ppverify.engines.torch_steps import add_send_recv
    from ppverify.verify import verify

    for family in sorted(ZOO):
        for p, m, s in grid(buildable, family):
            if p > 4 or m > 8:
                continue
            r = verify(s)
            assert r.valid, r.to_text()
            assert {"completeness", "placement", "dependencies", "exclusivity", "deadlock"} <= {x for x, _ in r.proved}
            if family != "dualpipe":  # one pipe: also with PyTorch's SEND/RECV under rendezvous sends
                assert verify(add_send_recv(s), comm_semantics="rendezvous").valid, (family, p, m)
