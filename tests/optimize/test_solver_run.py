"""Deterministic, talkative, interruptible solver runs (ppverify/optimize/solver_run.py): the work
limit under a wall-clock ceiling gives the same JSON on repeated runs, the progress line only
ever improves, and Ctrl-C keeps the best schedule and bound found so far (exit 130)."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppverify.cli import main
from ppverify.cli.commands.optimize import build_namespace, problem_from_args
from ppverify.core.errors import ParameterError
from ppverify.engines import run as run_engine
from ppverify.io import load_schedule
from ppverify.optimize import optimize
from ppverify.optimize.deadline import Deadline
from ppverify.optimize.interrupt import stop_all
from ppverify.optimize.solver_run import DEFAULT_WORK, WALL_FACTOR, Progress, run_limits

# a loop placement with a cap: the starting schedules do not meet the bound, so CP-SAT searches
SEARCHED = ["--placement", "loop", "--v", "2", "-p", "2", "-m", "4", "--memory-cap", "3"]
SEARCHED += ["--costs", "F=1,I=1,W=1", "--comm-delay", "1"]


def test_run_limits_keep_the_clock_a_ceiling_over_the_work():
    assert (DEFAULT_WORK, WALL_FACTOR) == (60.0, 4.0)
    assert run_limits() == (60.0, 270.0)  # the work, and four times it + 30 s on the clock
    assert run_limits(None, 2.0) == (2.0, 38.0)  # 4 x 2 + 30
    assert run_limits(10.0) == (10.0, 10.0) and run_limits(100.0) == (60.0, 100.0)  # a clock alone still bounds
    assert run_limits(8.0, 0.5) == (0.5, 8.0)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ParameterError, match="work-limit"):
            run_limits(10.0, bad)
        with pytest.raises(ParameterError, match="time-limit"):
            run_limits(bad, 1.0)


def test_a_bad_work_limit_is_one_line_exit_2(capsys):
    assert main(["optimize", "-p", "2", "--work-limit", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "parameter --work-limit=0.0" in err


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["inc", "bound"]), st.integers(0, 200)), max_size=30))
def test_progress_lines_only_improve_and_state_their_gap(updates):
    out = io.StringIO()
    p = Progress(out, "optimize", clock=lambda: 0.0)
    p.phase("search")
    best, bound = None, None
    for kind, x in updates:
        if kind == "inc":
            p.update(incumbent=float(x))
            best = x if best is None else min(best, x)
        else:
            p.update(bound=float(x))
            bound = x if bound is None else max(bound, x)
    lines = out.getvalue().splitlines()
    assert lines[0] == "optimize: search  (0.0 s)"
    incs = [float(ln.split("incumbent ")[1].split()[0]) for ln in lines if "incumbent" in ln]
    bnds = [float(ln.split("bound ")[1].split()[0]) for ln in lines if "bound" in ln]
    assert incs == sorted(incs, reverse=True) and bnds == sorted(bnds)
    assert len(set(lines)) == len(lines)  # a line is written only when something changed
    last = lines[-1]
    if best is not None:
        assert f"incumbent {best:g}" in last
    if bound is not None:
        assert f"bound {bound:g}" in last
    if best is not None and bound is not None:
        gap = 0.0 if best <= 0 else max(0.0, (best - bound) / best)
        assert f"gap {100 * gap:.2f} %" in last


def test_progress_rewrites_one_line_on_a_terminal():
    out = io.StringIO()
    p = Progress(out, "gap", live=True, clock=lambda: 1.0)
    p.phase("search", 10.0, 8.0)
    p.update(incumbent=9.0)
    p.close()
    assert out.getvalue() == (
        "\r" + "gap: search  incumbent 10  bound 8  gap 20.00 %  (0.0 s)\x1b[K"
        "\r" + "gap: search  incumbent 9  bound 8  gap 11.11 %  (0.0 s)\x1b[K\n"
    )
    assert Progress.for_command("gap", asked=True, stream=io.StringIO()) is not None


def _strip_walls(doc):
    # what the machine's speed changes: measured wall times, and CP-SAT's own tally of its
    # deterministic seconds (its helper threads add a few thousandths; the search itself is fixed)
    doc = dict(doc, solver={k: v for k, v in doc["solver"].items() if "wall" not in k and k != "deterministic_s"})
    doc.pop("wall_s")
    return doc


def test_the_same_command_gives_the_same_json(capsys):
    # the work decides; the wall-clock ceiling is set far off, so a loaded machine cannot cut a run
    argv = ["optimize", *SEARCHED, "--workers", "2", "--work-limit", "0.2", "--time-limit", "300", "--json"]
    docs = []
    for _ in range(2):
        assert main(argv) == 0
        docs.append(json.loads(capsys.readouterr().out))
    assert docs[0]["solver"]["deterministic"] is True and docs[0]["solver"]["work_limit_s"] == 0.2
    assert _strip_walls(docs[0]) == _strip_walls(docs[1])


class _StopAtFirstSolution(Progress):
    """A progress line that presses Ctrl-C (sets the stop event, stops CP-SAT) at the search's first
    incumbent, as the command's signal watcher does."""

    def __init__(self, stop: threading.Event) -> None:
        super().__init__(io.StringIO(), "optimize")
        self.stop = stop

    def update(self, incumbent=None, bound=None):
        super().update(incumbent, bound)
        if incumbent is not None and self.name == "search":
            self.stop.set()
            stop_all()


def test_an_interrupt_keeps_the_best_schedule_and_bound():
    pr = problem_from_args(build_namespace(SEARCHED))[0]
    stop = threading.Event()
    progress = _StopAtFirstSolution(stop)
    res = optimize(pr, 60.0, 1, 0, hints=False, deadline=Deadline.after(60.0, stop), progress=progress)
    assert stop.is_set()
    assert res.schedule is not None and res.objective is not None
    assert res.bound <= res.objective
    # the schedule kept is a real one: the async engine runs its program order at least as fast
    tl = run_engine(res.schedule, pr.costs, pr.comm, "async")
    assert tl.makespan <= res.objective + 1e-9
    if res.status != "OPTIMAL":
        # no signal set the event (Python code did): the reason says only "interrupted"
        assert res.reason.startswith("interrupted in: search")
        assert "search" in res.solver["interrupted"] and "wall_limited" not in res.solver


@pytest.mark.slow
def test_ctrl_c_prints_and_saves_the_best_so_far_then_exits_130(tmp_path):
    out = tmp_path / "best.json"
    argv = ["--placement", "loop", "--v", "2", "-p", "4", "-m", "8", "--costs", "F=1,I=1,W=1", "--comm-delay", "1"]
    argv += ["--memory-cap", "3", "--work-limit", "150", "--progress", "--no-chart", "--save", str(out)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ppverify", "optimize", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    seen = []
    for line in proc.stderr:  # wait for the search's first incumbent
        seen.append(line)
        if line.startswith("optimize: search") and "incumbent" in line:
            break
    else:
        pytest.fail(f"no incumbent during the search: {seen}")
    proc.send_signal(signal.SIGINT)
    stdout, rest = proc.communicate(timeout=120)
    assert proc.returncode == 130
    lines = {ln.split()[0]: ln for ln in stdout.splitlines() if ln.strip()}
    value = float(lines["makespan"].split()[1])
    assert lines["status"].split()[1] in ("FEASIBLE", "OPTIMAL")
    assert float(lines["bound"].split()[1]) <= value
    assert rest.splitlines()[-1].startswith("ppverify optimize: interrupted (Ctrl-C); printed the best schedule")
    pr = problem_from_args(build_namespace(argv[:-6]))[0]
    tl = run_engine(load_schedule(str(out)), pr.costs, pr.comm, "async")
    assert tl.makespan <= value + 1e-9


def test_gap_takes_the_same_limits(capsys):
    argv = ["gap", "1f1b", "-p", "3", "-m", "4", "--costs", "F=1,B=2", "--comm-delay", "1", "--work-limit", "1"]
    argv += ["--memory-cap", "none"]  # the unlimited optimum, whose value the formula below gives
    assert main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    # the optimum (m+p-1)(tF+tB) + 2(p-1)c = 18 + 4, proven; the gap is the family's distance to it
    value = doc["family_value"]
    assert (doc["bound"], doc["optimum"], doc["gap_to_bound"]) == (22.0, 22.0, pytest.approx((value - 22) / value))
    assert main([*argv, "--progress"]) == 0
    err = capsys.readouterr().err
    assert err.splitlines()[0].startswith("gap: bounds")


@pytest.mark.parametrize("command", ["optimize", "gap", "design"])
@pytest.mark.parametrize("seed", [2**31, -(2**31) - 1, 99999999999])
def test_a_seed_cp_sat_cannot_take_is_refused_before_any_work(command, seed, capsys):
    # CP-SAT's random_seed is a signed 32-bit field: 2**31 and beyond failed inside the solver
    # (an internal error, exit 3) after the starting schedules had run
    args = {
        "optimize": ["optimize", *SEARCHED],
        "gap": ["gap", "1f1b", "-p", "2", "-m", "2"],
        "design": ["design", "-p", "2", "-m", "2", "--placements", "linear", "--budgets", "2"],
    }[command]
    assert main([*args, "--seed", str(seed)]) == 2
    err = capsys.readouterr().err
    assert f"parameter --seed={seed}: must be an integer from -2147483648 to 2147483647" in err
    assert "Traceback" not in err and "internal error" not in err


def test_the_seed_range_ends_reach_the_solver():
    from ppverify.optimize.solver_setup import check_seed, make_solver

    for seed in (-(2**31), 2**31 - 1):
        check_seed(seed)
        assert make_solver(1.0, 1, seed).parameters.random_seed == seed


def test_library_ctrl_c_names_itself_in_the_status():
    # a library caller's Ctrl-C (no CLI signal watcher) is named as the CLI names it
    import os
    import signal
    import time

    from ppverify.optimize.solver_run import interruptible
    from ppverify.optimize.solver_setup import cut_reason

    with interruptible() as stop:
        assert cut_reason(["search"], interrupted=True) == "interrupted in: search"  # nothing yet
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):
            if stop.is_set():
                break
            time.sleep(0.001)
        assert cut_reason(["search"], interrupted=True) == "interrupted (Ctrl-C) in: search"
    assert cut_reason(["search"], interrupted=True) == "interrupted in: search"  # outside the block
