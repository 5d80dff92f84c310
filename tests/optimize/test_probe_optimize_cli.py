"""``ppverify optimize`` probed as a user would: ``--evaluate`` of an order over the cap, the
options ``--evaluate`` would ignore, what ``--save`` writes (or does not), ``--json`` that strict
parsers read, and the limit an UNKNOWN run's error names. Expected values are derived by hand in
the comments, not copied from ppverify's output."""

from __future__ import annotations

import json
import os

import pytest

from ppverify.cli import main
from ppverify.core.costs import CostModel
from ppverify.optimize.cap_text import cap_breach
from ppverify.optimize.evaluate import order_peaks, problem_for
from ppverify.optimize.problem import instance
from ppverify.schedules import build


def _strict_json(text: str) -> dict:
    """JSON as strict parsers (jq, JavaScript) read it: NaN and Infinity are not JSON."""

    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def _cpu_here() -> float:
    """CPU seconds of this process and of its children that have ended (a CP-SAT search in a forked
    child counts once reaped): the work done, which a test process descheduled for seconds on a
    loaded machine does not stretch as it stretches the wall clock."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def test_an_order_over_the_cap_is_infeasible_at_once_not_unknown(capsys, tmp_path):
    # 1F1B, p = 8: device 0 runs p = 8 forwards before its first backward, so it holds 8
    # activations whatever the times; cap 7 cannot hold. It used to run CP-SAT to the wall
    # ceiling (8 s for --work-limit 2) and end UNKNOWN, exit 2, naming --time-limit 8.
    out = tmp_path / "o.json"
    argv = ["optimize", "1f1b", "-p", "8", "-m", "32", "--costs", "F=1,B=2", "--comm-delay", "1", "--evaluate"]
    argv += ["--memory-cap", "7", "--work-limit", "2", "--no-chart", "--save", str(out), "--table"]
    t0 = _cpu_here()
    assert main(argv) == 1
    assert _cpu_here() - t0 < 6.0  # no search: decided from the order (a loaded machine's margin)
    text = capsys.readouterr().out
    status = next(ln for ln in text.splitlines() if ln.startswith("status"))
    assert status == (
        "status     INFEASIBLE (the program order breaks the memory cap: "
        "device 0 holds 8 activations at its peak, over the cap 7 activations)"
    )
    # nothing found, nothing written: the family's order was saved as if it were a result
    assert not out.exists()
    assert text.rstrip().endswith(f"not saved  {out}: no schedule found (INFEASIBLE)")
    assert "\ndev 0 " not in text  # no slot table of an order that was refused


def test_order_peaks_follow_the_order_and_the_memory_model():
    # 1F1B, p = 4, m = 8: device d runs p - d forwards before its first backward
    s = build("1f1b", p=4, m=8)
    inst = instance(problem_for(s, CostModel.abstract(s.placement, F=1, B=2)), s)
    assert order_peaks(inst, [list(inst.device_ops(d)) for d in range(4)]) == [4, 3, 2, 1]
    # 1F1B-split, p = 2, m = 2, I frees half: device 0 runs F0 F1 I0 W0 I1 W1 and holds 1, 2,
    # 1.5, 1, 0.5, 0 (peak 2); device 1 runs F0 I0 W0 F1 I1 W1 (peak 1). In halves: 4 and 2.
    s = build("1f1b-split", p=2, m=2)
    costs = CostModel.abstract(s.placement, F=1, I=1, W=1)
    from dataclasses import replace

    costs = replace(costs, freed_by_I=(0.5, 0.5))
    inst = instance(problem_for(s, costs, memory_cap=1.5), s)
    order = [list(inst.device_ops(d)) for d in range(2)]
    assert [x * inst.mem_unit for x in order_peaks(inst, order)] == [2, 1]
    assert cap_breach(inst, order) == "device 0 holds 2 activations at its peak, over the cap 1.5 activations"
    assert cap_breach(instance(problem_for(s, costs, memory_cap=2), s), order) == ""


def test_evaluate_reports_the_orders_own_backward(capsys):
    # 1f1b runs B; costs naming I and W used to describe the problem as "split backward" while
    # the order's Bs (B = I + W = 2) were timed. p = 2, m = 2, c = 0: (m + p - 1)(F + B) = 9.
    argv = ["optimize", "1f1b", "-p", "2", "-m", "2", "--costs", "F=1,I=1,W=1", "--evaluate", "--no-chart"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert ", full backward, " in lines[0]
    assert lines[3] == "makespan   9"


@pytest.mark.parametrize(
    "extra, says",
    [
        (["1f1b", "--evaluate", "--backward", "split"], "parameter --backward=split: --evaluate times 1f1b p=2 m=2"),
        (["1f1b", "--evaluate", "--gap-limit", "0.1"], "parameter --gap-limit=0.1: --evaluate times one fixed order"),
        (["--json", "--table"], "parameter --table=True: --json prints no slot table"),
    ],
)
def test_options_the_run_would_ignore_are_refused(capsys, extra, says):
    assert main(["optimize", "-p", "2", "-m", "2", "--work-limit", "1", *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"ppverify optimize: error: {says}")


def test_an_infeasible_problems_json_is_strict_json(capsys):
    # V, p = 4: device 0 holds stages 0 and 7, half a share each; one microbatch's forward holds
    # both (1 activation) before any backward frees one, so cap 0.75 admits no schedule
    argv = ["optimize", "--placement", "v", "-p", "4", "-m", "1", "--costs", "F=1,I=1,W=1", "--memory-cap", "0.75"]
    assert main([*argv, "--json", "--save", "never.json"]) == 1
    data = _strict_json(capsys.readouterr().out)  # "bound": Infinity used to be printed
    assert data["status"] == "INFEASIBLE" and data["bound"] is None and data["value"] is None
    assert data["saved"] is None and "stage 7" in data["reason"]


def test_the_saved_comment_gives_value_bound_and_cap(capsys, tmp_path):
    # p = 2, m = 3, F = 1, B = 2, c = 1, device 0 holds at most 2: F0 F1 [0, 2]; device 1 F0
    # [2, 3] B0 [3, 5] F1 [5, 6] B1 [6, 8]; device 0 B0 [6, 8], then F2 (a slot is free) [8, 9];
    # B1 [9, 11]; device 1 F2 [10, 11] B2 [11, 13]; device 0 B2 [14, 16]: 16, the bound too
    out = tmp_path / "best.json"
    argv = ["optimize", "-p", "2", "-m", "3", "--costs", "F=1,B=2", "--comm-delay", "1", "--memory-cap", "2"]
    assert main([*argv, "--work-limit", "2", "--no-chart", "--save", str(out)]) == 0
    assert capsys.readouterr().out.rstrip().endswith(f"saved      {out}")
    comment = json.loads(out.read_text())["comment"]
    assert comment == "ppverify optimize: OPTIMAL makespan 16 bound 16, cap 2 activations"


# test_a_clock_the_user_did_not_set_is_named_as_the_default: moved to tests/optimize/test_wall_ceiling.py
# (test_a_clock_the_user_did_not_set_is_named_with_its_formula), the default ceiling now being
# 4 x the work + 30 s


def test_unknown_after_the_work_names_the_work_limit():
    from types import SimpleNamespace

    from ppverify.cli.optimize_args import unknown_error

    # CP-SAT's deterministic work ran out, the clock cut nothing: the work limit ended the run
    res = SimpleNamespace(solver={"cp_sat_status": "UNKNOWN"}, reason="", bound=12.5, time_unit="s")
    assert str(unknown_error(res, "--time-limit", 8.0, 2.0)) == (
        "--work-limit 2: no schedule found within that work (status UNKNOWN, best bound 12.5 s)"
    )


def test_a_saved_files_activation_memory_is_kept(capsys, tmp_path):
    # one device running F0 I0 F1 I1 W0 W1, saved with costs whose I frees nothing (W frees all):
    # it holds 1, 1, 2, 2, 1, 0, peak 2 > cap 1.5, as verify of the file says. optimize re-applied
    # the default zero-bubble model (I frees 63 %: peak 1 + 0.37 = 1.37) and called it OPTIMAL.
    from ppverify.core.ops import Op
    from ppverify.core.placement import linear
    from ppverify.core.schedule import Schedule
    from ppverify.io.json_format import save_json

    pl = linear(1)
    prog = tuple(Op(k, 0, mb) for k, mb in (("F", 0), ("I", 0), ("F", 1), ("I", 1), ("W", 0), ("W", 1)))
    path = str(
        save_json(Schedule(pl, 2, (prog,), (0, 0), "mine"), tmp_path / "w.json", CostModel.abstract(pl, F=1, I=1, W=1))
    )
    assert main(["verify", path, "--memory-cap", "1.5"]) == 1
    capsys.readouterr()
    assert main(["optimize", path, "--evaluate", "--memory-cap", "1.5", "--no-chart", "--work-limit", "1"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "memory     cap 1.5 activations, the file's activation memory (I frees 0 %, W the rest)"
    assert lines[2].endswith("device 0 holds 2 activations at its peak, over the cap 1.5 activations)")
    # a memory model given still replaces it: zero-bubble's peak 1.37 fits, 6 units of work on one device
    argv = ["optimize", path, "--evaluate", "--memory-cap", "1.5", "--memory-model", "zero-bubble", "--no-chart"]
    assert main(argv) == 0
    assert "makespan   6" in capsys.readouterr().out.splitlines()


def test_progress_reports_the_evaluated_order(capsys):
    # --progress with --evaluate printed nothing. 1F1B p = 2, m = 1, F = 1, B = 2, c = 1: F [0, 1]
    # on device 0, [2, 3] on device 1, B [3, 5] there and [6, 8] back on device 0: 8
    argv = ["optimize", "1f1b", "-p", "2", "-m", "1", "--costs", "F=1,B=2", "--comm-delay", "1", "--evaluate"]
    assert main([*argv, "--progress", "--no-chart"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("optimize: timing the order  incumbent 8  (")
    assert err[-1].startswith("optimize: done  incumbent 8  bound 8  gap 0.00 %  (")


def test_bounds_the_clock_cut_are_not_printed_as_zero():
    # a run cut in its bounds phase keeps only the device work (p = 8, m = 32, F = I = W = 1:
    # 32 x 3 = 96 per device); the critical path and memory window were printed as proven 0
    from ppverify.optimize.request import summary_lines
    from ppverify.optimize.result import OptimizeResult

    bounds = {"critical_path": 0.0, "device_work": 96.0, "memory_window": 0.0}
    cut = {"wall_limited": "bounds, starting schedules, model building", "workers": 2, "seed": 0}
    res = OptimizeResult(
        "UNKNOWN", "makespan", None, 96.0, 0.0, None, None, bounds, None, None, 1.0, True, "units", cut
    )
    info = {"placement": "linear", "p": 8, "m": 32, "stages": 8, "backward": "split", "costs": "c", "comm": "d"}
    line = next(ln for ln in summary_lines(res, dict(info, memory_model="m")) if ln.startswith("bound"))
    assert line == "bound      96  (critical path -, device work 96, memory window -)"
    uncut = OptimizeResult("OPTIMAL", "makespan", 96.0, 96.0, 0.0, None, None, bounds, None, None, 1.0, True, "units")
    line = next(ln for ln in summary_lines(uncut, dict(info, memory_model="m")) if ln.startswith("bound"))
    assert line == "bound      96  (critical path 0, device work 96, memory window 0)"  # computed: printed as is


def test_evaluate_answers_the_makespan_when_the_clock_stops_cp_sat(monkeypatch):
    # a fixed order's least makespan is its as-soon-as-possible timing: the clock cutting the
    # CP-SAT model (here forced) used to leave it UNKNOWN (exit 2) with the value beside it.
    # 1F1B p = 2, m = 3, F = 1, B = 2, no delay: (m + p - 1)(F + B) = 12
    import importlib

    from ppverify.optimize.deadline import WallLimitReached

    ev = importlib.import_module("ppverify.optimize.evaluate")  # the package's name is the function

    def cut(*args, **kwargs):
        raise WallLimitReached("model building")

    monkeypatch.setattr(ev, "build_model", cut)
    s = build("1f1b", p=2, m=3)
    res = ev.evaluate(s, CostModel.abstract(s.placement, F=1, B=2), time_limit=10)
    assert (res.status, res.objective, res.bound) == ("OPTIMAL", 12.0, 12.0)
    assert res.solver["wall_limited"] == "model building" and "as soon as possible" in res.solver["proof"]
    # the span lets devices start late: no such shortcut, still UNKNOWN
    res = ev.evaluate(s, CostModel.abstract(s.placement, F=1, B=2), objective="span", time_limit=10)
    assert res.status == "UNKNOWN" and res.objective is None
