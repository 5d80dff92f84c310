"""Bug-hunt fixes in what ``optimize`` and ``gap`` report: a limit spent building the problem still
prints the UNKNOWN report, caps below a stage activation against caps below a microbatch's share,
an INFEASIBLE ``--evaluate``'s bound, and a best schedule that is the start, not CP-SAT's. Expected
values derived by hand in the comments."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

from ppverify.cli import main
from ppverify.cli.commands import optimize as optimize_cmd
from ppverify.cli.gap_text import optimum_line


def test_a_limit_spent_building_the_problem_still_prints_the_unknown_report(capsys, monkeypatch):
    real = optimize_cmd.problem_from_args

    def slow(args):  # building the problem outlasts --time-limit 0.05 (a loaded machine)
        built = real(args)
        time.sleep(0.1)
        return built

    monkeypatch.setattr(optimize_cmd, "problem_from_args", slow)
    argv = ["optimize", "-p", "4", "-m", "8", "--costs", "F=1,I=1,W=1", "--comm-delay", "1"]
    argv += ["--memory-cap", "4", "--time-limit", "0.05", "--no-chart"]
    assert main(argv) == 2  # a limit ended the run without a schedule
    io = capsys.readouterr()
    lines = io.out.splitlines()
    assert any(ln.startswith("status     UNKNOWN") for ln in lines), io.out
    # linear p = 4: each device runs m = 8 microbatches of F + I + W = 1 + 1 + 1: work 24, the
    # bound that needs no search
    assert next(ln for ln in lines if ln.startswith("bound")).split()[1] == "24"
    assert io.err.count("\n") == 1 and "--time-limit 0.05" in io.err


def test_a_cap_below_one_stage_activation_is_refused_and_below_a_microbatch_is_infeasible(capsys):
    # linear, p = 2: one stage is a device's whole share, one activation; 0.5 of it holds no
    # forward at all: bad input, exit 2
    assert main(["optimize", "-p", "2", "-m", "2", "--memory-cap", "0.5"]) == 2
    assert "below one stage activation" in capsys.readouterr().err
    assert main(["gap", "1f1b", "-p", "2", "-m", "2", "--memory-cap", "0.5"]) == 2
    assert "below one stage activation" in capsys.readouterr().err
    # V, p = 2: device 0 holds stages 0 and 3, each half its share (0.5 activations); a
    # microbatch's forward reaches stage 3 before any backward frees stage 0, so it holds 2 x 0.5
    # = 1 activation. Cap 0.75 holds one stage (0.5) but not that: INFEASIBLE, exit 1
    argv = ["optimize", "-p", "2", "-m", "2", "--placement", "v", "--memory-cap", "0.75", "--json"]
    assert main(argv) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "INFEASIBLE" and out["bound"] is None


def test_an_infeasible_evaluate_has_no_finite_bound(capsys):
    # 1F1B, p = 4: device 0 runs p = 4 forwards before its first backward, so it holds 4
    # activations whatever the timing; cap 2 cannot hold: no timing of this order exists, its
    # bound is infinite (null in JSON), as an INFEASIBLE optimize's
    argv = ["optimize", "1f1b", "-p", "4", "-m", "8", "--memory-cap", "2", "--evaluate"]
    assert main([*argv, "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "INFEASIBLE" and out["bound"] is None
    assert main([*argv, "--no-chart"]) == 1
    bound = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("bound"))
    assert bound.split()[1] == "inf"


def test_a_best_that_is_the_start_is_credited_to_the_start():
    # the search ran out before CP-SAT improved on the start v-min (69.5): the start is the best
    res = SimpleNamespace(
        status="FEASIBLE", exact=True, time_unit="units", tick=0.5, objective=69.5, hint="v-min", hint_objective=69.5
    )
    line = optimum_line(res, 69.5, 69.5, False, 0.05, False, "2")
    assert line.startswith("best found   69.5  (the start v-min, nothing better found within 0.05 s")
    assert "CP-SAT" not in line
    # CP-SAT's own better schedule (64 < 69.5) keeps the CP-SAT wording
    res.objective = 64.0
    assert "(CP-SAT FEASIBLE within 0.05 s, peak 2)" in optimum_line(res, 64.0, 69.5, False, 0.05, False, "2")
