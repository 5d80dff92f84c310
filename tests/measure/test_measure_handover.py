"""The hand-over model of PyTorch's runtime on gloo (ppverify.measure.handover): its walk against
hand-derived step times and against the async engine, and its terms recovered from events."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppverify.core.comm import NO_COMM
from ppverify.core.costs import CostModel
from ppverify.core.errors import ParameterError
from ppverify.core.ops import Comm
from ppverify.engines import run
from ppverify.measure.handover import (
    Handover,
    fit_handover,
    fit_level,
    handover_samples,
    lowered_programs,
    predict_runtime,
)
from ppverify.measure.record import Event
from ppverify.schedules import build

ROOT = Path(__file__).resolve().parents[2]
ONE_PIPE = ["gpipe", "1f1b", "1f1b-split", "zb-h1", "zb-h2", "interleaved-1f1b", "looped-bfs", "zbv", "hanayo"]


def _costs(s, F=0.01, B=0.02):
    return CostModel.abstract(s.placement, F=F, B=B)


def test_gpipe_by_hand():
    # gpipe p=2 m=2, F=1, B=2 (per stage), late=3, wake=0.5, everything else 0. Rank 0: F0 [0,1],
    # SEND_F0 at 1, F1 [1,2], SEND_F1 at 2, RECV_B0 at 2. Rank 1: RECV_F0 at 0 < SEND at 1: early,
    # F0 at 1 + 0.5 -> [1.5, 2.5]; RECV_F1 at 2.5 after its SEND at 2: late, F1 at 5.5 -> [5.5, 6.5];
    # B0 [6.5, 8.5], SEND_B0 at 8.5, B1 [8.5, 10.5], SEND_B1 at 10.5. Rank 0: RECV_B0 at 2 early:
    # B0 at 9 -> [9, 11]; RECV_B1 at 11 after its SEND at 10.5: late, B1 at 14 -> [14, 16].
    s = build("gpipe", p=2, m=2)
    walk = predict_runtime(s, CostModel.abstract(s.placement, F=1, B=2), Handover(late=3.0, wake=0.5))
    got = {str(op): t for op, t in walk.ops.items()}
    assert got == {
        "0F0": (0.0, 1.0),
        "0F1": (1.0, 2.0),
        "1F0": (1.5, 2.5),
        "1F1": (5.5, 6.5),
        "1B0": (6.5, 8.5),
        "1B1": (8.5, 10.5),
        "0B0": (9.0, 11.0),
        "0B1": (14.0, 16.0),
    }
    assert walk.makespan == 16.0
    assert walk.recvs[(1, Comm("RECV_F", 1, 1))] == 2.5 and walk.sends[(0, Comm("SEND_F", 0, 1))] == 2.0


def test_local_terms_by_hand():
    # 1f1b p=2 m=1 has ranks 0: F0 SEND_F0 RECV_B0 B0, 1: RECV_F0 F0 B0 SEND_B0. With head h, gap g,
    # send s, recv q, overshoot o and wake w (all RECVs are posted early): rank 0 F0 [h, h+1+o];
    # rank 1 F0 at h+1+o+w, B0 after g, SEND_B0 at its end; rank 0 B0 at that + w.
    h, g, s_, q, o, w = 0.5, 0.25, 0.125, 0.0625, 0.03125, 0.75
    sch = build("1f1b", p=2, m=1)
    walk = predict_runtime(sch, CostModel.abstract(sch.placement, F=1, B=2), Handover(h, o, g, s_, q, 10.0, w))
    f1 = h + 1 + o + w
    b1_end = f1 + 1 + o + g + 2 + o
    assert walk.makespan == pytest.approx(b1_end + w + 2 + o)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(ONE_PIPE), st.integers(2, 4), st.sampled_from([2, 4, 8]))
def test_zero_terms_equal_the_async_engine(fam, p, m):
    """Without overheads the walk is the async engine without communication (another implementation)."""
    try:
        s = build(fam, p=p, m=m)
    except ParameterError:
        return
    c = _costs(s)
    assert predict_runtime(s, c, Handover()).makespan == pytest.approx(run(s, c, NO_COMM, semantics="async").makespan)


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(ONE_PIPE), st.integers(2, 4), st.sampled_from([4, 8]), st.floats(1e-5, 2e-3))
def test_makespan_grows_with_every_term(fam, p, m, x):
    try:
        s = build(fam, p=p, m=m)
    except ParameterError:
        return
    c = _costs(s)
    base = predict_runtime(s, c, Handover()).makespan
    for term in ("head", "overshoot", "gap"):
        assert predict_runtime(s, c, Handover(**{term: x})).makespan > base
    full = Handover(x, x, x, x, x, 4 * x, 2 * x)
    assert predict_runtime(s, c, full).makespan >= predict_runtime(s, c, Handover(x, x, x, x, x, 0, 0)).makespan


def _events(schedule, walk):
    # the walk as each rank's recorded events (ns), as the runtime records them
    ns = lambda t: round(t * 1e9)  # noqa: E731
    per_rank: list[list[Event]] = [[] for _ in range(schedule.p)]
    ranks = schedule.placement.maps[0]
    for op, (a, b) in walk.ops.items():
        per_rank[ranks[op.stage]].append(Event(op.kind, op.stage, op.mb, ns(a), ns(b)))
    for (r, c), t in list(walk.sends.items()) + list(walk.recvs.items()):
        per_rank[r].append(Event(c.kind, c.stage, c.mb, ns(t), ns(t)))
    return per_rank


@pytest.mark.parametrize("fam,p,m", [("gpipe", 2, 4), ("1f1b", 3, 6), ("looped-bfs", 2, 4), ("interleaved-1f1b", 2, 4)])
def test_terms_recovered_from_events(fam, p, m):
    """Events of a step walked with known terms give those terms back (wake > gap + send + recv,
    late > recv + gap, so each sample is one term alone)."""
    truth = Handover(head=3e-4, overshoot=1e-4, gap=2e-4, send=1e-4, recv=1.5e-4, late=2e-3, wake=5e-4)
    s = build(fam, p=p, m=m, **({"v": 2} if fam == "interleaved-1f1b" else {}))
    c = _costs(s)
    d = handover_samples(s, c, _events(s, predict_runtime(s, c, truth)), 0)
    assert d["late"] or d["wake"]
    got = fit_handover([d])
    for term in ("head", "overshoot", "gap", "late", "wake"):
        if term in ("late", "wake") and not d[term]:
            continue
        assert getattr(got, term) == pytest.approx(getattr(truth, term), abs=2e-8), term
    ns = {(a, b) for a, b, _ in d["gap"]}
    if any(a for a, _ in ns):
        assert got.send == pytest.approx(truth.send, abs=2e-8)
    if any(b for _, b in ns):
        assert got.recv == pytest.approx(truth.recv, abs=2e-8)


@pytest.mark.parametrize("fam,p,m,v", [("interleaved-1f1b", 2, 4, 2), ("interleaved-1f1b", 2, 6, 3), ("1f1b", 3, 6, 1)])
def test_async_terms_read_off_the_events_are_never_degenerate(fam, p, m, v):
    """The async terms ``calibrate --from-trace`` writes come from the events of a step (here the
    walk of known terms, several stages per rank included), each term from its own samples, none
    traded for another: action = gap + overshoot = 200 + 100 us, transfer = the mean of a SEND's
    and a RECV's post = (100 + 150) / 2 us, latency = what a wake-up holds beyond the gap and the
    two posts = 1200 - 200 - 250 us (by hand from the walk's terms)."""
    from ppverify.measure.handover import async_terms

    truth = Handover(head=3e-4, overshoot=1e-4, gap=2e-4, send=1e-4, recv=1.5e-4, late=2e-3, wake=1.2e-3)
    sch = build(fam, p=p, m=m, **({"v": v} if v > 1 else {}))
    c = _costs(sch)
    d = handover_samples(sch, c, _events(sch, predict_runtime(sch, c, truth)), 0)
    a, t, lat = async_terms(fit_handover([d]))
    assert a == pytest.approx(3e-4, abs=1e-8) and t == pytest.approx(1.25e-4, abs=1e-8)
    assert d["wake"] and lat == pytest.approx(7.5e-4, abs=1e-8)


def test_gpipe_forward_chain_is_late_and_1f1b_steady_state_is_early():
    """The structural difference: GPipe's last rank posts every RECV after its SEND (late),
    1F1B's first rank waits for its gradients (early)."""
    truth = Handover(gap=1e-4, late=2e-3, wake=5e-4)
    gp = build("gpipe", p=2, m=8)
    d = handover_samples(gp, _costs(gp), _events(gp, predict_runtime(gp, _costs(gp), truth)), 0)
    assert len(d["late"]) >= 7 + 7  # rank 1's F1..F7 and rank 0's B1..B7
    ob = build("1f1b", p=2, m=8)
    d1 = handover_samples(ob, _costs(ob), _events(ob, predict_runtime(ob, _costs(ob), truth)), 0)
    assert len(d1["wake"]) > len(d1["late"])


def test_drawn_walk_is_never_shorter_than_its_lowest_draws_and_is_deterministic():
    s = build("1f1b", p=3, m=6)
    c = _costs(s)
    q = tuple(k * 2e-4 for k in range(10))
    h = Handover(late=9e-4, wake=9e-4, deciles=(("late", q), ("wake", q)))
    lo = predict_runtime(s, c, Handover()).makespan
    hi = predict_runtime(s, c, Handover(late=q[-1], wake=q[-1])).makespan
    got = predict_runtime(s, c, h, draws=15, seed=3).makespan
    assert lo <= got <= hi
    assert got == predict_runtime(s, c, h, draws=15, seed=3).makespan


def test_deciles_fitted_from_samples():
    d = {"head": [1e-4] * 5, "overshoot": [], "late": [float(k) for k in range(100)], "wake": [], "gap": []}
    got = dict(fit_handover([d]).deciles)
    assert set(got) == {"head", "late"}
    assert got["late"] == pytest.approx([99 * (k + 0.5) / 10 for k in range(10)])  # linear interpolation over 0..99


def test_terms_whose_samples_average_below_zero_fit_as_zero_and_load_as_a_preset(tmp_path):
    # costs fitted as each op's median duration centre its overshoots on 0: a mean of -0.1 us
    # must give 0, never a preset that does not load ("overshoot_us: must be >= 0")
    from ppverify.measure.calibrate import Calibration, preset_text
    from ppverify.systems.system import load_system

    d = {"head": [-2e-6, 1e-6], "overshoot": [-3e-7, 1e-7], "late": [-1e-6], "wake": [2e-4], "gap": []}
    h = fit_handover([d])
    assert (h.head, h.overshoot, h.late, h.wake) == (0.0, 0.0, 0.0, pytest.approx(2e-4))
    path = tmp_path / "cal.yaml"
    path.write_text(preset_text(Calibration(1e-4, 1e-4, 5e-5, 1e9, handover=h)), encoding="utf-8")
    assert load_system(str(path)).handover_s[1] == 0.0


def test_fit_level_recovers_a_common_factor():
    ss = [build("gpipe", p=2, m=4), build("1f1b", p=3, m=6), build("looped-bfs", p=2, m=4)]
    h = Handover(head=2e-4, overshoot=1e-4, gap=2e-4, send=1e-4, recv=1e-4, late=1.5e-3, wake=4e-4)
    runs = [(s, _costs(s), predict_runtime(s, _costs(s), h.scaled(1.7)).makespan) for s in ss]
    k, res = fit_level(runs, h)
    assert k == pytest.approx(1.7, abs=1e-3) and res < 1e-5


def test_lowered_programs_keep_a_comms_file_as_written():
    from ppverify.io.torch_lowering import lower_like_pytorch

    s = build("1f1b", p=2, m=2)
    lowered = lower_like_pytorch(s)
    assert [list(map(str, p)) for p in lowered_programs(lowered)] == [
        [str(a) for a in p if a is not None] for p in lowered.programs
    ]


def test_preset_round_trip(tmp_path):
    from ppverify.measure.calibrate import DRAWS, Calibration, predict_on, preset_text
    from ppverify.systems.system import load_system

    dec = tuple((t, tuple(k * 1e-4 for k in range(10))) for t in ("late", "wake", "gap"))
    h = Handover(head=2e-4, overshoot=1e-4, gap=2e-4, send=1e-4, recv=1e-4, late=1.5e-3, wake=4e-4, deciles=dec)
    path = tmp_path / "cal.yaml"
    path.write_text(preset_text(Calibration(1e-4, 1e-4, 5e-5, 1e9, handover=h)), encoding="utf-8")
    sysm = load_system(str(path))
    assert sysm.handover_s == pytest.approx((2e-4, 1e-4, 2e-4, 1e-4, 1e-4, 1.5e-3, 4e-4))
    assert dict(sysm.handover_deciles_s)["late"] == pytest.approx(dict(dec)["late"])
    s = build("gpipe", p=2, m=4)
    want = predict_runtime(s, _costs(s), h, draws=DRAWS).makespan
    assert predict_on(s, {"F": 0.01, "B": 0.02}, sysm) == pytest.approx(want)
    assert predict_on(s, {"F": 0.01, "B": 0.02}, sysm) == pytest.approx(want)  # seeded: the same every time
    # two-pipe schedules keep the folded overheads (their runner is ppverify's own)
    ch = build("chimera", p=2, m=4)
    assert predict_on(ch, {"F": 0.01, "B": 0.02}, sysm) > 0


def test_preset_terms_per_rank_count(tmp_path):
    # a preset with terms for 2 and 4 ranks: a 2-rank schedule walks with the 2-rank terms, a
    # 4-rank one with the 4-rank terms, a 3-rank one with the nearest count's (4: the larger on a
    # tie), each exactly as the walk with that model (no deciles: one walk)
    from ppverify.measure.calibrate import Calibration, predict_on, preset_text
    from ppverify.systems.system import load_system

    pooled = Handover(late=1e-3, wake=3e-4)
    h2, h4 = Handover(late=2e-4, wake=1e-4), Handover(late=3e-3, wake=6e-4, head=5e-4)
    cal = Calibration(1e-4, 1e-4, 5e-5, 1e9, handover=pooled, handover_by_ranks=((2, h2), (4, h4)))
    path = tmp_path / "cal.yaml"
    path.write_text(preset_text(cal), encoding="utf-8")
    sysm = load_system(str(path))
    assert [n for n, *_ in sysm.handover_by_ranks_s] == [2, 4]
    for p, h in ((2, h2), (3, h4), (4, h4)):
        s = build("gpipe", p=p, m=4)
        assert predict_on(s, {"F": 0.01, "B": 0.02}, sysm) == pytest.approx(predict_runtime(s, _costs(s), h).makespan)
    # late receivers cost more with 4 ranks' terms: the same schedule predicts slower than with 2's
    s = build("gpipe", p=4, m=4)
    assert predict_runtime(s, _costs(s), h4).makespan > predict_runtime(s, _costs(s), h2).makespan


def test_preset_refuses_a_bad_rank_section(tmp_path):
    from ppverify.systems.presets import PresetError
    from ppverify.systems.system import load_system

    path = tmp_path / "bad.yaml"
    text = (ROOT / "examples" / "systems" / "calibrated-2core.yaml").read_text(encoding="utf-8")
    path.write_text(text.replace("  handover:\n", "  handover:\n    ranks_9: {late_us: -5}\n", 1), encoding="utf-8")
    with pytest.raises(PresetError, match=r"runtime\.handover\.ranks_9\.late_us"):
        load_system(str(path))


def test_no_handover_section_changes_nothing():
    from ppverify.measure.calibrate import predict_on
    from ppverify.systems.system import load_system

    sysm = load_system("dgx-h100")
    assert sysm.handover_s is None
    s = build("gpipe", p=2, m=1)
    assert predict_on(s, {"F": 0.01, "B": 0.02}, sysm) == pytest.approx(0.06001)


def test_a_deadlocking_file_names_each_rank_and_the_send_it_waits_for(tmp_path):
    from ppverify.core.errors import DeadlockError
    from ppverify.io import load_schedule

    f = tmp_path / "dead.csv"
    f.write_text("0F0,0RECV_B0,0B0,0SEND_F0\n1RECV_F0,1F0,1B0,1SEND_B0\n")
    s = load_schedule(str(f))
    with pytest.raises(DeadlockError, match="device 0 waits in 0B0 for 1SEND_B0; device 1 waits in 1F0 for 0SEND_F0"):
        predict_runtime(s, CostModel.abstract(s.placement), Handover())
