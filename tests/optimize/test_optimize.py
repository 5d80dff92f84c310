"""CP-SAT optimizer: known optima, evaluate mode against the async engine, validity of every
schedule it emits, bounds never above a feasible schedule, bad input, time limits, CLI."""

from __future__ import annotations

import json
import time

import pytest

from ppverify.cli import main
from ppverify.core.comm import FixedDelay
from ppverify.core.costs import CostModel
from ppverify.core.dag import build_dag, structural_problems
from ppverify.core.errors import ParameterError
from ppverify.core.placement import linear, v_shape
from ppverify.engines import run
from ppverify.optimize import Problem, evaluate, optimize, problem_for, zero_bubble
from ppverify.optimize.problem import edge_delays
from ppverify.schedules import build, families


def check_valid(res, problem):
    """Every schedule the optimizer emits: complete op set; the solver's own times respect the
    DAG with delays, one op at a time per device, the memory cap; the async engine running its
    program order is never slower than the solver's times (makespan objective)."""
    sched, tl = res.schedule, res.timeline
    assert structural_problems(sched) == []
    dag = build_dag(sched)
    when = {op: (s, e) for op, s, e in zip(tl.ops, tl.start, tl.end)}
    delays = edge_delays(dag, problem.costs, problem.comm)
    for i, op in enumerate(dag.ops):
        for k, q in enumerate(dag.pred[i]):
            if q >= 0:
                assert when[op][0] >= when[dag.ops[q]][1] + delays[i][k] - 1e-9, (op, dag.ops[q])
        assert when[op][1] - when[op][0] == pytest.approx(problem.costs.op_duration(op))
    for d in range(sched.p):
        iv = sorted(when[op] for op in sched.ops(d))
        assert all(a[1] <= b[0] + 1e-9 for a, b in zip(iv, iv[1:])), f"overlap on device {d}"
    if problem.memory_cap is not None:
        assert tl.peak_memory().max() <= problem.memory_cap + 1e-9
        assert run(sched, problem.costs, problem.comm, "async").peak_memory().max() <= problem.memory_cap + 1e-9
    if problem.objective == "makespan":
        assert run(sched, problem.costs, problem.comm, "async").makespan <= res.objective + 1e-9


# ---- known optima -------------------------------------------------------------------------------


@pytest.mark.parametrize("p,m,c", [(2, 1, 0.0), (2, 3, 0.5), (3, 4, 1.0), (4, 6, 0.25), (4, 8, 1.0), (5, 3, 2.0)])
def test_full_backward_optimum_is_gpipe_formula(p, m, c):
    tf, tb = 1.0, 2.0
    pl = linear(p)
    pr = Problem(pl, m, CostModel.abstract(pl, F=tf, B=tb), FixedDelay(c), split=False)
    res = optimize(pr, time_limit=20)
    expected = (m + p - 1) * (tf + tb) + 2 * (p - 1) * c  # by hand: GPipe/1F1B optimum
    assert res.status == "OPTIMAL"
    assert res.objective == pytest.approx(expected) and res.bound == pytest.approx(expected)
    # GPipe pays the 2(p-1)c hops once: it is optimal under async timing (worked out by hand)
    assert run(build("gpipe", p=p, m=m), pr.costs, pr.comm, "async").makespan == pytest.approx(expected)
    check_valid(res, pr)


@pytest.mark.parametrize("p,m", [(2, 4), (3, 6), (4, 8)])
def test_equal_fiw_without_cap_reaches_zero_bubble(p, m):
    pl = linear(p)
    costs = CostModel.abstract(pl, F=1, I=1, W=1)
    span = optimize(Problem(pl, m, costs, split=True, objective="span"), time_limit=20)
    assert span.status == "OPTIMAL" and span.objective == 3 * m  # every device busy from first to last op
    mk = optimize(Problem(pl, m, costs, split=True), time_limit=20)
    assert mk.status == "OPTIMAL" and mk.objective == (p - 1) * 1 + 3 * m  # last device starts after p-1 forwards
    # ZB-H2 reaches the same zero bubble
    zb = run(build("zb-h2", p=p, m=m), costs, semantics="async")
    assert zb.makespan == mk.objective
    check_valid(mk, Problem(pl, m, costs, split=True))


def test_memory_cap_one_f_one_b_memory_h1_optimum():
    # cap p*M_F, F=I=W=1, no comm: the zero-bubble paper's ZB-H1 is optimal: makespan = ZB-H1's
    # bubble (p-1)(tF+tI-tW) on top of the work, from device 0's point of view (by hand: 3m + (p-1)*1)
    p, m = 4, 8
    pl = linear(p)
    costs = zero_bubble(2304, 24, 1024).apply(CostModel.abstract(pl, F=1, I=1, W=1))
    pr = Problem(pl, m, costs, split=True, memory_cap=p, objective="span")
    res = optimize(pr, time_limit=20)
    assert res.status == "OPTIMAL" and res.objective == 3 * m + (p - 1) * (1 + 1 - 1)
    check_valid(res, pr)


# ---- evaluate mode: CP-SAT with the program order fixed == async engine -------------------------


def _families_without_overlap(p, m):
    out = []
    for fam in families():
        try:
            s = build(fam.name, p=p, m=m)
        except ParameterError:
            continue
        if any(type(a).__name__ == "Overlap" for prog in s.programs for a in prog):
            continue
        out.append(s)
    return out


@pytest.mark.parametrize("c", [0.0, 0.5, 1.25])
@pytest.mark.parametrize("costs", ["F=1,B=2", "F=1,I=1,W=1", "F=2,I=1.5,W=0.5"])
def test_evaluate_equals_async_engine(c, costs):
    from ppverify.core.costs import parse_costs

    scheds = _families_without_overlap(4, 8)
    assert len(scheds) >= 8
    for s in scheds:
        cm = CostModel.abstract(s.placement, **parse_costs(costs))
        want = run(s, cm, FixedDelay(c), "async").makespan
        got = evaluate(s, cm, FixedDelay(c), time_limit=20)
        assert got.status == "OPTIMAL", s.describe()
        assert got.objective == pytest.approx(want), s.describe()


def test_evaluate_with_system_preset():
    import argparse

    from ppverify.cli.presets_args import preset_context_from_args

    s = build("1f1b", p=4, m=8)
    ctx = preset_context_from_args(argparse.Namespace(system="dgx-h100", model="gpt3-1.3b"), s)
    want = run(s, ctx.costs, ctx.comm, "async").makespan
    got = evaluate(s, ctx.costs, ctx.comm, time_limit=20)
    assert got.status == "OPTIMAL"
    assert got.objective == pytest.approx(want, rel=1e-4)  # 0.1 us ticks


def test_evaluate_rejects_order_over_the_cap():
    s = build("gpipe", p=2, m=4)  # holds m activations
    res = evaluate(s, CostModel.abstract(s.placement, F=1, B=2), memory_cap=2, time_limit=10)
    assert res.status == "INFEASIBLE" and "memory cap" in res.reason


# ---- bounds never above a feasible schedule, schedules always valid ------------------------------


@pytest.mark.parametrize("p,m,c", [(4, 8, 0.0), (4, 8, 1.0), (2, 6, 0.5)])
def test_bound_never_exceeds_any_family(p, m, c):
    for s in _families_without_overlap(p, m):
        for costs in ("F=1,B=2", "F=1,I=1,W=1"):
            from ppverify.core.costs import parse_costs

            if "I" in costs and not s.has_split_backward:
                continue
            cm = CostModel.abstract(s.placement, **parse_costs(costs))
            pr = problem_for(s, cm, FixedDelay(c))
            # 5 deterministic seconds of search (what time_limit=5 gave); the wall clock only
            # guards a hang: a 5 s one cut the starting schedules, where the family is a hint, in 2
            # of these 63 runs with three CPU burners on the 2-core machine
            res = optimize(pr, time_limit=600, work_limit=5, relax_share=0.0)
            fam = run(s, cm, FixedDelay(c), "async").makespan
            assert res.bound <= fam + 1e-9, s.describe()
            assert res.objective <= fam + 1e-9, s.describe()  # the family is a hint candidate
            check_valid(res, pr)


def test_v_placement_with_cap_is_valid():
    pl = v_shape(3)
    costs = zero_bubble(2304, 24, 1024).apply(CostModel.abstract(pl, F=1, I=1, W=1))
    pr = Problem(pl, 6, costs, FixedDelay(0.5), split=True, memory_cap=1.5)
    res = optimize(pr, time_limit=10)
    assert res.status in ("OPTIMAL", "FEASIBLE")
    assert res.bound <= res.objective
    check_valid(res, pr)


@pytest.mark.parametrize(
    "placement,split,cap,c",
    [
        (linear(3), True, None, 1.0),
        (linear(4), True, 4.0, 0.5),
        (linear(3), False, 2.0, 0.0),
        (v_shape(2), True, 1.0, 0.5),
    ],
)
def test_z3_checker_proves_optimizer_schedules_valid(placement, split, cap, c):
    """Every schedule the optimizer emits verifies VALID with Z3 (dependencies, exclusivity,
    deadlock freedom, the memory cap) and Z3 confirms the makespan claim under the same costs."""
    from ppverify.verify import verify

    kw = dict(F=1, I=1, W=1) if split else dict(F=1, B=2)
    costs = zero_bubble(2304, 24, 1024).apply(CostModel.abstract(placement, **kw))
    pr = Problem(placement, 4, costs, FixedDelay(c), split=split, memory_cap=cap)
    res = optimize(pr, time_limit=10)
    assert res.status in ("OPTIMAL", "FEASIBLE")
    report = verify(res.schedule, costs, FixedDelay(c), memory_cap=cap, makespan_le=res.objective)
    assert report.valid, report.to_text()
    assert "memory" in [p for p, _ in report.proved] or cap is None


# ---- bad input and limits -------------------------------------------------------------------------


def test_cap_below_one_activation_is_infeasible_with_reason():
    pl = linear(2)
    pr = Problem(pl, 2, CostModel.abstract(pl, F=1, B=2), split=False, memory_cap=0.5)
    res = optimize(pr, time_limit=5)
    # linear, one stage per device: each stage's activation is one activation, above the cap of 0.5
    assert (
        res.status == "INFEASIBLE"
        and "below stage 0's activation (1 activation)" in res.reason
        and res.schedule is None
    )


@pytest.mark.parametrize("split", [False, True])
def test_cap_below_a_devices_stages_of_one_microbatch_is_infeasible_with_reason(split):
    # V, p = 2: device 0 holds stages 0 and 3, half a share each (0.5 activations). Stage 3's forward
    # comes before stage 0's backward, so one microbatch alone needs 0.5 + 0.5 = 1 there; a cap of
    # 0.75 admits every single activation but no schedule, and 1 admits the one-at-a-time schedule
    pl = v_shape(2)
    costs = CostModel.abstract(pl, F=1, I=1, W=1) if split else CostModel.abstract(pl, F=1, B=2)
    res = optimize(Problem(pl, 2, costs, split=split, memory_cap=0.75), time_limit=5)
    assert res.status == "INFEASIBLE" and res.schedule is None
    assert "one microbatch's activations on device 0 (1 activation: stages 0, 3)" in res.reason
    fits = optimize(Problem(pl, 2, costs, split=split, memory_cap=1.0), time_limit=5)
    assert fits.status == "OPTIMAL" and fits.timeline.peak_memory().max() <= 1.0 + 1e-9


def test_m_below_one_rejected():
    pl = linear(2)
    with pytest.raises(ParameterError, match="m=0"):
        Problem(pl, 0, CostModel.abstract(pl), split=False)
    assert main(["optimize", "-p", "2", "-m", "0", "--time-limit", "1"]) == 2
    assert main(["optimize", "-p", "2", "--memory-cap", "lots", "--time-limit", "1"]) == 2
    assert main(["optimize", "-p", "2", "--time-limit", "-1"]) == 2


def test_time_limit_is_respected():
    pl = linear(8)
    costs = zero_bubble(2304, 24, 1024).apply(CostModel.abstract(pl, F=1, I=1, W=1))
    pr = Problem(pl, 32, costs, FixedDelay(1), split=True, memory_cap=8)
    t = time.monotonic()
    res = optimize(pr, time_limit=3)
    assert time.monotonic() - t < 3 + 15  # at its limit, not at the end of the search (loaded-machine margin)
    assert res.status in ("OPTIMAL", "FEASIBLE") and res.bound <= res.objective


# ---- CLI -----------------------------------------------------------------------------------------


def test_cli_optimize_json_and_save(tmp_path, capsys):
    from ppverify.io import load_schedule

    out = tmp_path / "opt.json"
    code = main(
        [
            "optimize",
            "-p",
            "3",
            "-m",
            "4",
            "--costs",
            "F=1,B=2",
            "--comm-delay",
            "1",
            "--time-limit",
            "10",
            "--json",
            "--save",
            str(out),
        ]
    )
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["status"] == "OPTIMAL" and data["value"] == (4 + 3 - 1) * 3 + 2 * 2 * 1
    assert data["gap"] == data["gap_to_bound"] == 0 and data["bound"] == data["value"]
    loaded = load_schedule(out)
    assert structural_problems(loaded) == []
    cm = CostModel.abstract(loaded.placement, F=1, B=2)
    assert run(loaded, cm, FixedDelay(1), "async").makespan == data["value"]


def test_cli_gap_text(capsys):
    argv = ["gap", "1f1b", "-p", "4", "-m", "8", "--costs", "F=1,B=2", "--comm-delay", "1", "--time-limit", "10"]
    fam = run(build("1f1b", p=4, m=8), CostModel.abstract(linear(4), F=1, B=2), FixedDelay(1), "async").makespan
    # unlimited memory: by hand, optimum (8+3)*3 + 2*3*1 = 39; 1F1B pays round trips under async timing
    assert main([*argv, "--memory-cap", "none"]) == 0
    text = capsys.readouterr().out
    assert "optimum      39" in text and "bound        39" in text and "memory       unlimited memory" in text
    assert f"gap to bound {100 * (fam - 39) / fam:.2f}%" in text
    # by default like for like: capped at 1F1B's own peak, p = 4 activations on its first device
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["memory_cap"] == 4 and data["family_peak_memory"] == 4 and data["optimum_peak"] <= 4
    assert data["memory_cap_label"] == "cap 4 activations: the family's own peak"
    # the cap can only slow the optimum; 1F1B itself is a schedule within it
    assert 39 < data["optimum"] <= fam == data["family_value"]
    assert data["gap_to_bound"] == pytest.approx((fam - data["bound"]) / fam)


def test_cli_optimize_placement_and_table(capsys):
    code = main(
        [
            "optimize",
            "--placement",
            "v",
            "-p",
            "2",
            "-m",
            "2",
            "--costs",
            "F=1,I=1,W=1",
            "--time-limit",
            "10",
            "--table",
            "--no-chart",
        ]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "v placement" in text and "dev 1" in text


def test_memory_cap_in_bytes_matches_multiple():
    from ppverify.cli.commands.optimize import build_namespace, problem_from_args

    mf = zero_bubble(2304, 24, 1024, layers=2).bytes_per_activation
    a = problem_from_args(
        build_namespace(
            ["-p", "2", "--memory-cap", f"{int(3 * mf)}B", "--memory-model", "zero-bubble:h=2304,a=24,s=1024,layers=2"]
        )
    )[0]
    b = problem_from_args(build_namespace(["-p", "2", "--memory-cap", "3"]))[0]
    assert a.memory_cap == pytest.approx(b.memory_cap) == pytest.approx(3.0)


# ---- issue targets (the benchmark's points that are quick enough for tests) ---------------------


def test_unit_costs_cap_p_no_comm_is_zb_h1_bubble():
    """F=I=W=1, c=0, cap p*M_F (zero-bubble memory model): proven optimal at the ZB-H1 value
    m(tF+tI+tW) + (p-1)(tF+tI-tW) (Qi et al. 2024's ZB-H1 bubble)."""
    p, m = 8, 32
    pl = linear(p)
    costs = zero_bubble(2304, 24, 1024).apply(CostModel.abstract(pl, F=1, I=1, W=1))
    res = optimize(Problem(pl, m, costs, FixedDelay(0), split=True, memory_cap=p), time_limit=60)
    assert res.status == "OPTIMAL" and res.objective == 3 * m + (p - 1) * 1
    assert res.wall_s < 60


def test_zero_bubble_reference_span_proven_optimal_at_cap_p():
    from ppverify.optimize.memory import zb_settings

    row = zb_settings()[0]
    p, m, f, i, w, c = (row[k] for k in ["p", "m", "f", "i", "w", "c"])
    pl = linear(p)
    costs = zero_bubble(int(row["h"]), int(row["a"]), 1024).apply(CostModel.abstract(pl, F=f, I=i, W=w))
    pr = Problem(pl, m, costs, FixedDelay(c), split=True, memory_cap=p, objective="span")
    res = optimize(pr, time_limit=60)
    assert res.status == "OPTIMAL" and res.objective == int(row["zb1p_span"])
    check_valid(res, pr)


def test_zero_bubble_reference_span_proven_optimal_at_cap_2p_row0():
    """Row 0 at cap 2p*M_F: the cross-device one-machine bound m(tF+tI) + (p-1)(tF+tI+2c) + tW
    equals the zero-bubble repository's reference span, and the paper's own heuristic
    (zbheuristic.py) starts at that span, so it is proven optimal before any search (fast now;
    the search alone ended 0.12 % above it)."""
    from ppverify.optimize.memory import zb_settings

    row = zb_settings()[0]
    p, m, f, i, w, c = (row[k] for k in ["p", "m", "f", "i", "w", "c"])
    pl = linear(p)
    costs = zero_bubble(int(row["h"]), int(row["a"]), 1024).apply(CostModel.abstract(pl, F=f, I=i, W=w))
    pr = Problem(pl, m, costs, FixedDelay(c), split=True, memory_cap=2 * p, objective="span")
    res = optimize(pr, time_limit=120)
    assert res.status == "OPTIMAL" and res.objective == int(row["zb2p_span"])
    assert res.hint is not None and res.hint.startswith("zb-heuristic")
    tl = res.timeline
    spans = [tl.end[tl.device == d].max() - tl.start[tl.device == d].min() for d in range(p)]
    assert max(spans) == pytest.approx(res.objective)
    check_valid(res, pr)
    from ppverify.verify import verify

    report = verify(res.schedule, costs, FixedDelay(c), memory_cap=2 * p)
    assert report.valid, report.to_text()
    assert "memory" in [name for name, _ in report.proved]


@pytest.mark.slow
def test_unit_costs_cap_p_with_comm_proven_optimal():
    p, m = 8, 32
    pl = linear(p)
    costs = zero_bubble(2304, 24, 1024).apply(CostModel.abstract(pl, F=1, I=1, W=1))
    pr = Problem(pl, m, costs, FixedDelay(1), split=True, memory_cap=p)
    # a deterministic budget: the proof must not depend on how loaded the machine is
    res = optimize(pr, time_limit=600, workers=1, work_limit=20)
    assert res.status == "OPTIMAL"
    for fam in ("zb-h1", "1f1b-split"):
        tl = run(build(fam, p=p, m=m), costs, FixedDelay(1), "async")
        if tl.peak_memory().max() <= p:  # only schedules within the cap compete
            assert res.objective <= tl.makespan
    check_valid(res, pr)


def test_evaluate_reports_a_deadlocking_order():
    from ppverify.core.ops import Op

    s = build("1f1b", p=2, m=2)
    F0, B0, F1, B1 = (Op(k, 0, mb) for k, mb in (("F", 0), ("B", 0), ("F", 1), ("B", 1)))
    # device 1 runs microbatch 1 first, device 0 waits for 1B0 before 0F1: a deadlock
    bad = s.with_programs(
        ((F0, B0, F1, B1), (F1._replace(stage=1), F0._replace(stage=1), B0._replace(stage=1), B1._replace(stage=1)))
    )
    res = evaluate(bad, CostModel.abstract(s.placement, F=1, B=2), time_limit=5)
    assert res.status == "INFEASIBLE" and "deadlock" in res.reason


def test_cli_evaluate_matches_async(capsys):
    code = main(
        [
            "optimize",
            "zb-h1",
            "-p",
            "4",
            "-m",
            "8",
            "--costs",
            "F=1,I=1,W=1",
            "--comm-delay",
            "0.5",
            "--evaluate",
            "--json",
            "--time-limit",
            "10",
        ]
    )
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    want = run(
        build("zb-h1", p=4, m=8), CostModel.abstract(linear(4), F=1, I=1, W=1), FixedDelay(0.5), "async"
    ).makespan
    assert data["status"] == "OPTIMAL" and data["value"] == pytest.approx(want)


def test_cli_gap_two_pipes_json(capsys):
    code = main(
        [
            "gap",
            "chimera",
            "-p",
            "4",
            "-m",
            "4",
            "--costs",
            "F=1,B=2",
            "--comm-delay",
            "0.5",
            "--time-limit",
            "10",
            "--json",
        ]
    )
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["placement"] == "bidirectional"
    assert data["bound"] <= data["family_value"] and 0 <= data["gap_to_bound"] < 1
