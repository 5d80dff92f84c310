"""``ppverify design``: the frontier against exhaustive search on small sizes, dominance over every
family of the searched placements, Z3 on every frontier schedule, the saved files, executors,
interruption and bad input."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import cast

import pytest

from ppverify.cli import main
from ppverify.core.costs import CostModel
from ppverify.core.errors import DeadlockError, ParameterError
from ppverify.core.ops import Op
from ppverify.core.placement import linear
from ppverify.core.schedule import Schedule
from ppverify.design import DesignRequest, Limits, design, frontier, value_at
from ppverify.design.execute import run_points
from ppverify.design.points import EPS, Point
from ppverify.design.run import plan
from ppverify.design.spec import setups
from ppverify.engines import run
from ppverify.io import load_schedule
from ppverify.schedules import build
from ppverify.systems.preset_models import PresetSettings
from ppverify.verify import verify

FULL = PresetSettings(costs="F=1,B=2", comm_delay=1.0)


def _orders(ops: list[Op]) -> list[tuple[Op, ...]]:
    """Every order of one device's ops with each microbatch's forward before its backward."""
    out = []
    for perm in itertools.permutations(ops):
        seen: set[int] = set()
        ok = True
        for op in perm:
            if op.kind == "F":
                seen.add(op.mb)
            elif op.mb not in seen:
                ok = False
                break
        if ok:
            out.append(perm)
    return out


def exhaustive(p: int, m: int, delay: float) -> list[tuple[float, float]]:
    """(peak, makespan) of every deadlock-free program order of linear(p), F=1, B=2, fixed delay,
    timed by the async engine (a different abstraction from CP-SAT's model)."""
    pl = linear(p)
    costs = CostModel.abstract(pl, F=1, B=2)
    from ppverify.core.comm import FixedDelay

    per_device = [_orders([Op(k, d, mb) for mb in range(m) for k in "FB"]) for d in range(p)]
    out = []
    for progs in itertools.product(*per_device):
        s = Schedule(pl, m, tuple(progs), (0,) * m)
        try:
            tl = run(s, costs, FixedDelay(delay), semantics="async")
        except DeadlockError:
            continue
        out.append((float(max(tl.peak_memory())), float(tl.makespan)))
    return out


@pytest.mark.parametrize("p,m", [(2, 2), pytest.param(2, 3, marks=pytest.mark.slow)])
def test_frontier_equals_exhaustive_search_and_beats_every_family(p: int, m: int) -> None:
    rq = DesignRequest(p, m, "linear", "auto", FULL, Limits(5.0, gap=0.0))
    d = design(rq, progress=False)
    every = exhaustive(p, m, 1.0)
    for q in d.points:
        best = min(t for pk, t in every if pk <= q.budget + EPS)
        assert q.bound <= best + EPS  # a certified bound never exceeds the true optimum
        if q.status == "OPTIMAL":
            assert q.time == pytest.approx(best)
    # the exhaustive Pareto frontier, point for point
    truth: list[tuple[float, float]] = []
    for pk, t in sorted(every):
        if not truth or t < truth[-1][1] - EPS:
            truth.append((pk, t))
    assert [(q.peak, q.time) for q in d.front] == truth
    assert all(v == "valid" for v in d.verified)
    for row in d.family_rows():
        if row["placement"] == "linear" and row["family"] in ("1f1b", "gpipe"):
            assert row["difference"] <= EPS  # never slower than a family that fits


def test_a_family_above_every_budget_says_so() -> None:
    # linear, p = 2, m = 4, budget 1: one microbatch at a time; 1F1B holds 2 and GPipe 4 (by hand)
    d = design(DesignRequest(2, 4, "linear", "1", FULL, Limits(2.0)), progress=False)
    rows = {r["family"]: r for r in d.family_rows() if r["placement"] == "linear"}
    assert rows["1f1b"]["peak"] == 2 and rows["gpipe"]["peak"] == 4
    for fam in ("1f1b", "gpipe"):
        assert rows[fam]["difference"] > 0  # one at a time is slower
        peak = rows[fam]["peak"]
        assert (
            rows[fam]["note"]
            == f"faster than the frontier: its peak {peak:g} is above every budget searched (the largest: 1)"
        )


def test_unconstrained_point_is_the_critical_path() -> None:
    # without a budget: the critical path (m+p-1)(tF+tB) + 2(p-1)c, all m forwards held at once
    d = design(DesignRequest(3, 4, "linear", "none", FULL, Limits(5.0)), progress=False)
    (q,) = d.points
    assert q.status == "OPTIMAL" and q.time == (4 + 3 - 1) * 3 + 2 * 2 * 1.0 and q.peak == 4


def test_frontier_and_value_at_by_hand() -> None:
    pts = [
        Point("linear", 1.0, "OPTIMAL", 30.0, 30.0, 1.0, None, None),
        Point("linear", 2.0, "OPTIMAL", 30.0, 30.0, 1.0, None, None),  # same peak and time: dominated
        Point("v", 2.0, "FEASIBLE", 25.0, 24.0, 2.0, None, None),
        Point("v", math.inf, "OPTIMAL", 26.0, 26.0, 3.0, None, None),  # more memory, slower
    ]
    front = frontier(pts)
    assert [(q.placement, q.budget) for q in front] == [("linear", 1.0), ("v", 2.0)]
    assert cast(Point, value_at(front, 2.5)).time == 25.0 and value_at(front, 0.5) is None


def test_saved_files_load_verify_and_equal(tmp_path) -> None:
    out = tmp_path / "d"
    args = ["design", "-p", "2", "-m", "4", "--costs", "F=1,I=1,W=1", "--placements", "v", "--budgets", "1,2"]
    assert main([*args, "--work-limit", "2", "--save-dir", str(out), "--no-progress", "--json"]) == 0
    result = json.loads((out / "design.json").read_text())
    assert len(result["frontier"]) >= 1
    for i, q in enumerate(result["frontier"]):
        stem = out / f"frontier-{i:02d}-v-budget{q['budget']:g}"
        loaded = [load_schedule(f"{stem}.json"), load_schedule(f"{stem}.compute_only.csv", placement="v")]
        loaded.append(load_schedule(f"{stem}.compute_comms.csv", placement="v"))
        for s in loaded:
            rep = verify(s, memory_cap=q["budget"])
            assert rep.valid, rep.to_text()
        assert [[str(a) for a in prog] for prog in loaded[0].programs] == q["programs"]
        assert loaded[1].programs == loaded[0].programs


def test_saved_files_carry_the_design_communication(tmp_path, capsys) -> None:
    # simulate FILE timed a saved frontier schedule without its transfers (34.5 for 59.5 here)
    out = tmp_path / "d"
    argv = ["design", "-p", "4", "-m", "8", "--costs", "F=1,I=1,W=1", "--comm-delay", "1", "--placements", "v"]
    assert main([*argv, "--budgets", "2", "--work-limit", "2", "--save-dir", str(out), "--no-progress"]) == 0
    result = json.loads((out / "design.json").read_text())
    (q,) = result["frontier"]
    capsys.readouterr()
    assert main(["simulate", str(out / "frontier-00-v-budget2.json"), "--json"]) == 0
    sim = json.loads(capsys.readouterr().out)
    # the async engine runs the saved order as early as it can: never later than CP-SAT's timing,
    # never faster than the bound proven for every schedule of the point
    assert q["bound"] - 1e-9 <= sim["makespan"] <= q["time"] + 1e-9
    # V, p = 4: stages on devices 0 1 2 3 3 2 1 0, so 6 cross-device hops each way per microbatch
    assert sim["transfer_time"] == 2 * 6 * 8 * 1.0


def test_pool_gives_the_same_result_as_one_process(same_result_on) -> None:
    same_result_on("pool", DesignRequest(2, 4, "linear,v", "1,2", PresetSettings(costs="F=1,I=1,W=1"), Limits(1.0)))


def test_ctrl_c_keeps_the_points_done() -> None:
    # m = 3: at m = 2 budget 2 is what a device can hold at most, the same point as none (refused)
    rq = DesignRequest(2, 3, "linear", "1,2,none", FULL, Limits(1.0))
    tasks = plan(rq, setups("linear", 2, 3, FULL), [1.0, 2.0, math.inf])
    seen = []

    def report(pt: Point) -> None:
        seen.append(pt)
        if len(seen) == 2:
            raise KeyboardInterrupt

    points, interrupted = run_points(tasks, report=report)
    assert interrupted and [q.budget for q in points] == [1.0, 2.0]


def test_bad_input_is_one_line(capsys) -> None:
    assert main(["design", "-p", "2", "-m", "2", "--budgets", "0.5", "--placements", "linear"]) == 2
    err = capsys.readouterr().err
    assert "budgets=0.5: below the least feasible budget 1" in err and "Traceback" not in err
    assert main(["design", "-p", "3", "-m", "3", "--placements", "linear,bidirectional"]) == 2
    assert "placements=bidirectional: needs an even p (p=3)" in capsys.readouterr().err
    assert main(["design", "-p", "2", "-m", "2", "--budgets", "2,1,2", "--placements", "linear"]) == 2
    assert "budgets=2,1,2: 2 is named twice" in capsys.readouterr().err
    assert main(["design", "-p", "2", "--placements", "ring"]) == 2
    assert "placements=ring: expected one of linear, v, loop:V, wave:W, bidirectional" in capsys.readouterr().err
    with pytest.raises(ParameterError, match="loop:V needs a whole number"):
        setups("loop:0", 2, 2, FULL)


def test_bad_outputs_are_refused_before_the_search(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # short relative names: the error shows them whole
    Path("taken").write_text("")
    argv = ["design", "-p", "2", "-m", "2", "--placements", "linear", "--budgets", "2"]
    assert main([*argv, "--save-dir", "taken"]) == 2
    err = capsys.readouterr().err
    assert "save-dir=taken: exists and is not a folder" in err
    assert "design [" not in err  # no point searched: the progress line never came
    assert main([*argv, "--save-dir", "taken/sub"]) == 2  # under a file: cannot be made
    err = capsys.readouterr().err
    assert "save-dir=taken/sub: cannot write there: Not a directory" in err and "design [" not in err
    assert main([*argv, "--report", "missing/page.html"]) == 2
    err = capsys.readouterr().err
    assert "report=missing/page.html: folder missing does not exist" in err and "design [" not in err
    assert main([*argv, "--plot", "frontier.txt"]) == 2  # named as the user spells it (it said "output")
    err = capsys.readouterr().err
    assert "parameter --plot=frontier.txt: expected a file ending in .png" in err and "design [" not in err
    assert main([*argv, "--save-dir", "new/frontier", "--no-progress"]) == 0  # made, and filled
    assert Path("new/frontier/design.json").is_file()


@pytest.mark.slow
def test_ray_cluster_gives_the_same_result(same_result_on) -> None:
    same_result_on("ray", DesignRequest(2, 4, "linear,v", "1,2", PresetSettings(costs="F=1,I=1,W=1"), Limits(1.0)))


def test_monotone_points_by_generated_budgets() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from ppverify.design.points import monotone

    @settings(max_examples=100, deadline=None)
    @given(st.lists(st.tuples(st.integers(10, 40), st.integers(0, 10), st.integers(0, 10)), min_size=1, max_size=6))
    def check(rows: list[tuple[int, int, int]]) -> None:
        # a consistent truth: the optimum never grows with the budget; each search lands above it
        # (by ``up``) and proves a bound below it (by ``down``)
        opts = sorted((o for o, _, _ in rows), reverse=True)
        pts = [
            Point("linear", float(b + 1), "FEASIBLE", float(o + up), float(o - down), float(b + 1), None, None)
            for b, (o, (_, up, down)) in enumerate(zip(opts, rows))
        ]
        out = monotone(pts)
        # every point here has a schedule: its time is a float. More memory: never slower, never a higher floor
        for a, b in zip(out, out[1:]):
            assert cast(float, b.time) <= cast(float, a.time) and b.bound <= a.bound
        for q, orig in zip(out, pts):
            q_time, orig_time = cast(float, q.time), cast(float, orig.time)
            assert q.bound <= q_time and q_time <= orig_time and q.bound >= orig.bound
            assert q_time == min(cast(float, p.time) for p in pts if p.budget <= q.budget)

    check()


def test_report_of_a_design_result(tmp_path, capsys) -> None:
    out = tmp_path / "d"
    argv = ["design", "-p", "2", "-m", "2", "--costs", "F=1,B=2", "--placements", "linear", "--budgets", "1,2"]
    assert main([*argv, "--work-limit", "2", "--no-progress", "--save-dir", str(out)]) == 0
    capsys.readouterr()
    page = tmp_path / "page.html"
    assert main(["report", "--from", str(out / "design.json"), "-o", str(page)]) == 0
    text = page.read_text()
    # two frontier points by hand: budget 1, one microbatch at a time (2 * 2 * 3 = 12); budget 2, 1F1B's 9
    assert text.count('class="pt frontier"') == 2 and "time 12, bound 12" in text and "time 9, bound 9" in text
    assert text.count('<details id="point-') == 2
    # --title heads the page; what only the comparison page reads is refused, not ignored
    assert main(["report", "--from", str(out / "design.json"), "--title", "My <plan>", "-o", str(page)]) == 0
    assert "<h1>My &lt;plan&gt;</h1>" in page.read_text()
    capsys.readouterr()
    for extra in (["--time-limit", "5"], ["--max-chart-ops", "10"], ["--findings-json", "f.json"], ["-p", "4"]):
        assert main(["report", "--from", str(out / "design.json"), *extra, "-o", str(page)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and f"parameter {extra[0]}=" in err and "leave it out" in err


def test_v_at_its_least_budget_is_proven_optimal_and_verified() -> None:
    """V, p = 4, m = 12, F = I = W = 1 per device share, budget 1 (one microbatch's two stage
    activations per device): the greedy rules deadlock there; the periodic start and the
    relaxation's memory-slot precedences give the optimum 11 * 6 + 8.5 = 74.5 by hand (device 3:
    gradient back 3.5 after F(4), then I(4), I(3), two W's and the next F(3), 2.5, per microbatch;
    8.5 one microbatch's whole step), and Z3 accepts it within the budget."""
    rq = DesignRequest(4, 12, "v", "1", PresetSettings(costs="F=1,I=1,W=1"), Limits(5.0))
    d = design(rq, progress=False)
    (pt,) = [q for q in d.points if q.placement == "v"]
    assert (pt.status, pt.time, pt.bound) == ("OPTIMAL", 11 * 6 + 8.5, 11 * 6 + 8.5)
    assert pt.peak is not None and pt.peak <= 1.0 + EPS
    assert list(d.verified) == ["valid"] * len(d.front)


def _fastest(d, budget: float) -> float:
    return min(q.time for q in d.points if q.time is not None and q.budget <= budget + EPS)


def test_skipped_points_leave_the_fastest_step_at_every_budget_unchanged(tmp_path) -> None:
    """A point is skipped when its bound is no faster than a step found within its budget by an
    earlier placement's point or a family: the same request with every point searched
    (``--all-points``) has the same fastest step at every budget and the same frontier times,
    every skipped point's bound is no faster than what its full search found (a bound holds
    for every schedule), and the skips are the same on a process pool."""
    from ppverify.design.output import load_design

    settings = PresetSettings(costs="F=1,I=1,W=1", comm_delay=1.0)
    budgets = [1.0, 2.0, math.inf]

    def request(skip: bool) -> DesignRequest:
        return DesignRequest(2, 4, "linear,v,loop:2", "1,2,none", settings, Limits(0.3, bound_work=0), skip=skip)

    fast = design(request(True), progress=False)
    every = design(request(False), progress=False)
    assert every.skipped == 0
    skipped = [q for q in fast.points if q.skipped]
    # loop:2 at budget 1 by hand: its bound (30.5) is above V's point at budget 1 (26.5)
    assert any(q.placement == "loop:2" and q.budget == 1.0 and "found by v at budget 1" in q.note for q in skipped)
    searched = {(q.placement, q.budget): q for q in every.points}
    for q in skipped:
        full = searched[(q.placement, q.budget)]
        assert full.time is not None and q.bound <= full.time + EPS
        step = float(q.note.split(" is no faster than ")[1].split(",")[0])
        assert step <= q.bound + EPS and full.time >= step - EPS  # the search could not have beaten it
    for b in budgets:
        assert _fastest(fast, b) == _fastest(every, b)
    assert [q.time for q in fast.front] == [q.time for q in every.front]
    assert all(v == "valid" for v in fast.verified)
    # the skipped points in the JSON, and back
    data = fast.to_dict()
    assert data["points_skipped"] == len(skipped) and data["design"]["all_points"] is False
    assert sum(bool(r.get("skipped")) for r in data["points"]) == len(skipped)
    path = tmp_path / "design.json"
    path.write_text(json.dumps(data))
    assert load_design(path).to_dict() == data
    assert design(request(True), workers=2, progress=False).to_dict() == data


def test_all_points_flag(capsys) -> None:
    argv = ["design", "-p", "2", "-m", "4", "--costs", "F=1,I=1,W=1", "--comm-delay", "1", "--budgets", "1"]
    argv += ["--work-limit", "0.3", "--bound-work", "0", "--json"]
    assert main([*argv, "--no-progress"]) == 0
    skipping = json.loads(capsys.readouterr().out)
    assert main([*argv, "--all-points"]) == 0
    captured = capsys.readouterr()
    every = json.loads(captured.out)
    assert every["design"]["all_points"] is True and every["points_skipped"] == 0
    assert skipping["points_skipped"] >= 1
    # progress names every point searched, none skipped
    assert "skipped" not in captured.err and captured.err.count("design [") == len(every["points"])


def test_a_family_that_is_the_frontier_point_differs_by_exactly_zero(capsys):
    """Profiled costs (ms with three decimals) sum to a step whose float value depends on the
    order of the sum: ZB-V at its own peak 4 is the frontier point there (its schedule is the
    point's start and no search beats it within one deterministic second), so the difference is
    0 by construction, not a float residue such as -2.3e-13."""
    argv = ["design", "-p", "4", "-m", "12", "--costs", "F=18.522,I=18.086,W=9.337", "--comm-delay", "0.601"]
    assert main([*argv, "--placements", "v", "--budgets", "4", "--work-limit", "1", "--no-progress", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (zbv,) = [r for r in out["families"] if r["family"] == "zbv"]
    assert out["frontier"][-1]["start"] == "zbv"  # V-Min and V-Half, at their own smaller peaks, before it
    assert zbv["difference"] == 0.0 and zbv["frontier"] == pytest.approx(zbv["time"], abs=1e-9)


def test_frontier_times_with_presets_are_the_schedules_own():
    # preset durations in seconds share no small tick: CP-SAT sees them rounded down, so its value
    # is a little under the schedule's time; the frontier reports the schedule's own async time (the
    # families' level), never a rounded one that would look faster than the family it started from
    settings = PresetSettings(system="dgx-h100", model="gpt3-1.3b")
    d = design(DesignRequest(2, 4, "linear", "1,2", settings, Limits(2.0)), progress=False)
    setup = d.setups[0]
    assert d.front and all(q.schedule is not None for q in d.front)
    for q in d.front:
        own = run(q.schedule, setup.costs, setup.comm, semantics="async").makespan
        assert q.time == pytest.approx(own, rel=1e-12) and q.bound <= q.time
    fam = {r["family"]: r for r in d.family_rows()}["1f1b"]  # 1F1B fits budget 2: the frontier is never slower
    assert fam["frontier"] <= fam["time"] * (1 + 1e-12) and fam["difference"] <= 1e-12
    one_f_one_b = run(build("1f1b", p=2, m=4), setup.costs, setup.comm, semantics="async").makespan
    assert fam["time"] == pytest.approx(one_f_one_b, rel=1e-12)
