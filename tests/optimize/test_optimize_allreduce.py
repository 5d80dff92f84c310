"""The replica gradient all-reduce (and data-parallel all-reduce) in the CP-SAT model and bounds.

* evaluate mode (program order fixed) equals the async engine on two-pipe families, every sync
  mode, abstract delays and a system preset;
* on tiny instances CP-SAT's optimum equals an exhaustive search over every per-device order,
  timed by a recurrence written here (dependencies and the ring all-reduce cost by hand);
* the analytic and CP-SAT bounds stay below every family's async makespan over a grid;
* compare marks no two-pipe gap as unlike, and gap says the all-reduce is included.
"""

from __future__ import annotations

import argparse
import itertools
import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ppverify.cli import main
from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.errors import PPVerifyError
from ppverify.core.ops import compute_ops
from ppverify.core.placement import bidirectional
from ppverify.engines import run
from ppverify.optimize import Problem, evaluate, optimize, problem_for
from ppverify.optimize.bounds import lower_bounds
from ppverify.optimize.problem import instance
from ppverify.schedules import build, families

SYNCS = ("eager", "after-flush", "none")
TWO_PIPE = (
    ("chimera", 2, 2),
    ("chimera", 4, 4),
    ("chimera", 4, 8),
    ("chimera-asym", 2, 2),
    ("chimera-asym", 4, 4),
    ("dualpipe", 2, 4),
    ("dualpipe", 4, 8),
)


def sequential(s):
    """The schedule with overlapped F&B slots run one op after the other (what the solver times)."""
    return s.with_programs(tuple(tuple(compute_ops(prog)) for prog in s.programs))


def preset(s, system="ethernet-100g", model="gpt3-1.3b"):
    from ppverify.cli.presets_args import preset_context_from_args

    ctx = preset_context_from_args(argparse.Namespace(system=system, model=model), s)
    return ctx.costs, ctx.comm


# ---- evaluate mode == async engine, two pipes, every sync mode ------------------------------------


@pytest.mark.parametrize("sync", SYNCS)
@pytest.mark.parametrize("fam,p,m", TWO_PIPE)
def test_evaluate_equals_async_two_pipes_abstract(fam, p, m, sync):
    s = sequential(build(fam, p=p, m=m))
    cm = CostModel.abstract(s.placement, F=1, B=2, I=1, W=1)
    for c in (0.5, 1.25):
        want = run(s, cm, FixedDelay(c), "async", sync=sync).makespan
        got = evaluate(s, cm, FixedDelay(c), time_limit=10, sync=sync)
        assert got.status == "OPTIMAL" and got.objective == pytest.approx(want), (s.describe(), c)
        # the solver's timeline carries the all-reduces, so its makespan is the step's
        assert got.timeline.makespan == pytest.approx(want)


@pytest.mark.parametrize("sync", SYNCS)
@pytest.mark.parametrize("fam,p,m", [("chimera", 4, 8), ("chimera-asym", 4, 4), ("dualpipe", 4, 8)])
def test_evaluate_equals_async_two_pipes_system_preset(fam, p, m, sync):
    s = sequential(build(fam, p=p, m=m))
    costs, comm = preset(s)
    want = run(s, costs, comm, "async", sync=sync).makespan
    got = evaluate(s, costs, comm, time_limit=10, sync=sync)
    assert got.status == "OPTIMAL"
    assert got.objective == pytest.approx(want, rel=1e-4)  # 0.1 us ticks, rounded down
    if sync != "none":  # the all-reduce of 1.3B gradients over 100 GbE is not negligible here
        assert want > run(s, costs, comm, "async", sync="none").makespan * 1.05


def test_evaluate_with_data_parallel_allreduce():
    s = build("chimera", p=4, m=4)
    costs, comm = preset(s, "ib-ndr-cluster")
    for sync in SYNCS:
        want = run(s, costs, comm, "async", sync=sync, dp_allreduce=4).makespan
        got = evaluate(s, costs, comm, time_limit=10, sync=sync, dp_allreduce=4)
        assert got.status == "OPTIMAL" and got.objective == pytest.approx(want, rel=1e-4)


# ---- exhaustive search over device orders == CP-SAT optimum ---------------------------------------


def _deps(op, S):
    """Inputs of an op by the step's rules: F after the previous stage's F; the gradient op (B or I)
    after its own F and the next stage's gradient op; W after I."""
    k, s, mb = op
    if k == "F":
        return [("F", s - 1, mb)] if s > 0 else []
    if k == "W":
        return [("I", s, mb)]
    grad = "B" if k == "B" else "I"
    return [("F", s, mb)] + ([(grad, s + 1, mb)] if s < S - 1 else [])


def _time(orders, dev, dur, S, c, sync, groups):
    """ASAP times of per-device orders; the makespan including each replica group's all-reduce
    (a ring of two ranks with no bytes: two steps of one latency c each). None on a deadlock."""
    end = {}
    free = [0.0] * len(orders)
    ptr = [0] * len(orders)
    total = sum(len(o) for o in orders)
    while len(end) < total:
        moved = False
        for d, order in enumerate(orders):
            while ptr[d] < len(order):
                op = order[ptr[d]]
                ins = _deps(op, S)
                if any(q not in end for q in ins):
                    break
                t0 = max([free[d]] + [end[q] + (c if dev[q] != d else 0.0) for q in ins])
                end[op] = free[d] = t0 + dur[op[0]]
                ptr[d] += 1
                moved = True
        if not moved:
            return None
    last = max(end.values())
    if sync == "none":
        return last
    for s, devs in groups:
        if sync == "eager":
            ready = max(t for op, t in end.items() if op[1] == s and op[0] in ("B", "W"))
        else:
            ready = max(t for op, t in end.items() if dev[op] in devs)
        last = max(last, ready + 2 * c)
    return last


def _orders_of(ops, kinds):
    """Every order of one device's ops in which each (stage, mb)'s kinds keep their order."""
    rank = {k: n for n, k in enumerate(kinds)}
    out = []

    def rec(left, acc):
        if not left:
            out.append(tuple(acc))
            return
        for op in left:
            k, s, mb = op
            if any(o[1:] == (s, mb) and rank[o[0]] < rank[k] for o in left):
                continue
            rec([o for o in left if o != op], acc + [op])

    rec(list(ops), [])
    return out


def exhaustive_optimum(p, pipes, split, dur, c, sync):
    pl = bidirectional(p)
    S = pl.num_stages
    kinds = ("F", "I", "W") if split else ("F", "B")
    dev = {}
    for mb, pipe in enumerate(pipes):
        for s in range(S):
            for k in kinds:
                dev[(k, s, mb)] = pl.maps[pipe][s]
    used = sorted(set(pipes))
    groups = [(s, {pl.maps[q][s] for q in used}) for s in range(S) if len({pl.maps[q][s] for q in used}) > 1]
    per_dev = [_orders_of([op for op in dev if dev[op] == d], kinds) for d in range(p)]
    best = None
    for combo in itertools.product(*per_dev):
        t = _time(combo, dev, dur, S, c, sync, groups)
        if t is not None and (best is None or t < best):
            best = t
    return best


TINY = [(2, (0, 1), False), (2, (0, 1), True), (2, (0, 1, 0), False), (4, (0, 1), False)]


@settings(max_examples=12, deadline=None)
@example(case=TINY[3], f=1, g=2, w=1, c=1.0, sync="eager")
@example(case=TINY[3], f=2, g=1, w=1, c=3.0, sync="after-flush")
@example(case=TINY[2], f=1, g=3, w=1, c=0.5, sync="eager")
@example(case=TINY[1], f=1, g=1, w=2, c=1.0, sync="after-flush")
@given(
    case=st.sampled_from(TINY),
    f=st.integers(1, 3),
    g=st.integers(1, 4),
    w=st.integers(1, 2),
    c=st.sampled_from([0.0, 0.5, 1.0, 3.0]),
    sync=st.sampled_from(SYNCS),
)
def test_cp_sat_optimum_equals_exhaustive_search(case, f, g, w, c, sync):
    p, pipes, split = case
    dur = {"F": float(f), "B": float(g + w), "I": float(g), "W": float(w)}
    pl = bidirectional(p)
    costs = CostModel.abstract(pl, **({"F": f, "I": g, "W": w} if split else {"F": f, "B": g + w}))
    pr = Problem(pl, len(pipes), costs, FixedDelay(c), split=split, pipe_of_mb=pipes, sync=sync)
    want = exhaustive_optimum(p, pipes, split, dur, c, sync)
    res = optimize(pr, time_limit=10, workers=1)
    assert res.status == "OPTIMAL" and res.objective == pytest.approx(want)
    assert res.bound == pytest.approx(want)
    assert lower_bounds(instance(pr)).best * instance(pr).tick <= want + 1e-9
    # the schedule found, run by the engine with the same sync, has that makespan
    assert run(res.schedule, costs, FixedDelay(c), "async", sync=sync).makespan == pytest.approx(want)


def test_exhaustive_by_hand_chimera_two_devices():
    # p=2, one microbatch per pipe, F=1, B=2, c=1: each pipe is F (1) + hop (1) + F (1) + B (2) +
    # hop (1) + B (2) = 8, both pipes in parallel on opposite devices. Stage 0's replicas finish
    # their B at 8 on both devices; the ring of two ranks costs 2 latencies: eager makespan 10.
    assert exhaustive_optimum(2, (0, 1), False, {"F": 1.0, "B": 2.0}, 1.0, "none") == 8.0
    assert exhaustive_optimum(2, (0, 1), False, {"F": 1.0, "B": 2.0}, 1.0, "eager") == 10.0
    pl = bidirectional(2)
    pr = Problem(pl, 2, CostModel.abstract(pl, F=1, B=2), FixedDelay(1.0), split=False, pipe_of_mb=(0, 1))
    assert optimize(pr, time_limit=5, workers=1).objective == 10.0


# ---- the bound stays below every family's async makespan ------------------------------------------


def _grid_schedules(p):
    for fam in families():
        for m in (p, 2 * p):
            try:
                yield build(fam.name, p=p, m=m)
            except PPVerifyError:
                continue


@pytest.mark.parametrize("p", [2, 4])
def test_analytic_bound_below_every_family_async(p):
    comms = [("abstract", None)] + [(name, name) for name in ("ethernet-100g", "dgx-h100")]
    checked = 0
    for s in _grid_schedules(p):
        for label, system in comms:
            if system is None:
                costs, comm = CostModel.abstract(s.placement, F=1, B=2, I=1, W=1), FixedDelay(0.75)
            else:
                costs, comm = preset(s, system)
            for sync in SYNCS if s.placement.num_pipes > 1 else ("eager",):
                inst = instance(problem_for(s, costs, comm, sync=sync))
                fam = run(s, costs, comm, "async", sync=sync).makespan
                # second-valued costs go on 0.1 us ticks rounded down: no slack needed
                assert lower_bounds(inst).best * inst.tick <= fam * (1 + 1e-9), (s.describe(), label, sync)
                checked += 1
    assert checked >= 40


@pytest.mark.parametrize("fam,p,m", [("chimera", 2, 4), ("chimera", 4, 4), ("chimera-asym", 4, 4), ("dualpipe", 4, 8)])
def test_cp_sat_bound_below_two_pipe_family(fam, p, m):
    s = build(fam, p=p, m=m)
    costs, comm = preset(s)
    for sync in SYNCS:
        res = optimize(problem_for(s, costs, comm, sync=sync), time_limit=1, workers=1)
        fam_ms = run(s, costs, comm, "async", sync=sync).makespan
        assert res.bound <= fam_ms * (1 + 1e-9), sync
        assert "all-reduce" in res.collectives


# ---- what users read -------------------------------------------------------------------------------


def test_gap_states_the_allreduce_is_included(capsys):
    code = main(
        [
            "gap",
            "chimera",
            "-p",
            "4",
            "-m",
            "4",
            "--system",
            "ethernet-100g",
            "--model",
            "gpt3-1.3b",
            "--time-limit",
            "5",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert (
        "replica all-reduce included (sync eager): 4 stages" in out.splitlines()[2]
    )  # after the family and memory lines
    code = main(
        [
            "gap",
            "chimera",
            "-p",
            "4",
            "-m",
            "4",
            "--system",
            "ethernet-100g",
            "--model",
            "gpt3-1.3b",
            "--time-limit",
            "5",
            "--sync",
            "none",
            "--json",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert data["collectives"] == "replica all-reduce left out (sync none)"
    assert data["bound"] <= data["family_value"]


def test_cli_optimize_evaluate_sync_matches_simulate(capsys):
    for sync in SYNCS:
        code = main(
            [
                "optimize",
                "chimera",
                "-p",
                "4",
                "-m",
                "4",
                "--costs",
                "F=1,B=2",
                "--comm-delay",
                "0.5",
                "--evaluate",
                "--json",
                "--time-limit",
                "10",
                "--sync",
                sync,
            ]
        )
        assert code == 0
        data = json.loads(capsys.readouterr().out)
        s = build("chimera", p=4, m=4)
        want = run(s, CostModel.abstract(s.placement, F=1, B=2), FixedDelay(0.5), "async", sync=sync).makespan
        assert data["value"] == pytest.approx(want)


def test_compare_two_pipe_gaps_are_like_for_like():
    from ppverify.compare.config import Config, ScheduleEntry
    from ppverify.compare.evaluate import evaluate_point
    from ppverify.compare.table import format_config_table, to_frame

    cfg = Config(4, 4, "ethernet-100g", "gpt3-1.3b")
    entries = [ScheduleEntry(n, n) for n in ("1f1b", "chimera", "chimera-asym")]
    points = [evaluate_point(e, cfg, ("async", "optimum"), time_limit=2.0, optimum_cache={}) for e in entries]
    for pt in points:
        asy, opt = pt.level("async"), pt.level("optimum")
        assert not opt.note.startswith("unlike ops")
        assert opt.lower_bound <= asy.makespan * (1 + 1e-9), pt.entry.label
    df = to_frame(points)
    assert "%+" not in format_config_table(df, cfg.label)
    # a family whose ops the solver does not model keeps the mark
    dp = evaluate_point(
        ScheduleEntry("dualpipe", "dualpipe"),
        Config(4, 8, "ethernet-100g", "gpt3-1.3b"),
        ("async", "optimum"),
        time_limit=2.0,
    )
    assert dp.level("optimum").note.startswith("unlike ops")
