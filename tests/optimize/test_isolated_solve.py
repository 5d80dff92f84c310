"""The interleaved CP-SAT search runs in a forked child (ppverify/optimize/isolated.py): OR-Tools
9.15 can abort the process there (``Check failed: heuristics.fixed_search != nullptr``, exit 134,
nothing printed). The child's answer reads as the parent's own solve, an aborted child is solved
again, and one that always aborts ends as one line, exit 2. Expected values derived by hand."""

from __future__ import annotations

import faulthandler
import os
import threading
import time

import pytest
from ortools.sat.python import cp_model

from ppverify.optimize import isolated
from ppverify.optimize.interrupt import stop_all
from ppverify.optimize.solver_setup import make_solver, run_solver


def _abort() -> None:
    """Die as OR-Tools' failed CHECK does (SIGABRT), without pytest's fault handler's traceback."""
    faulthandler.disable()
    os.abort()


def _two_jobs() -> tuple[cp_model.CpModel, list[cp_model.IntVar], cp_model.IntVar]:
    """Jobs of 3 and 4 ticks on one machine, the second not before tick 1: the makespan is at
    least 3 + 4 = 7 (one machine) and 7 is reached (job 0 at 0..3, job 1 at 3..7)."""
    model = cp_model.CpModel()
    starts = [model.new_int_var(0, 20, f"s{i}") for i in range(2)]
    model.add(starts[1] >= 1)
    ivs = [model.new_fixed_size_interval_var(s, d, f"iv{i}") for i, (s, d) in enumerate(zip(starts, (3, 4)))]
    model.add_no_overlap(ivs)
    end = model.new_int_var(0, 30, "end")
    model.add_max_equality(end, [starts[0] + 3, starts[1] + 4])
    model.minimize(end)
    return model, starts, end


def test_a_deterministic_solve_runs_in_a_child_and_reads_as_its_own(monkeypatch):
    forks: list[int] = []
    real_fork = os.fork

    def counting_fork() -> int:
        forks.append(1)
        return real_fork()

    monkeypatch.setattr(isolated.os, "fork", counting_fork)
    model, starts, end = _two_jobs()
    solver = make_solver(10.0, 2, 0, 1.0, deterministic=True)  # interleave_search: the child
    assert run_solver(solver, model) == cp_model.OPTIMAL
    assert len(forks) == 1
    # makespan 7 (docstring of _two_jobs); job 1 cannot start at 0, so job 0 runs first
    assert solver.objective_value == 7.0 and solver.best_objective_bound == 7.0
    assert solver.value(end) == 7 and solver.value(starts[0]) == 0 and solver.value(starts[1]) == 3
    assert solver.deterministic_time > 0  # the child's statistics came back too
    # one worker is deterministic by itself: no child
    assert run_solver(make_solver(10.0, 1, 0, 1.0, deterministic=True), model) == cp_model.OPTIMAL
    assert len(forks) == 1


def test_a_child_that_aborts_is_solved_again(monkeypatch, tmp_path):
    marker = tmp_path / "aborted-once"
    real_child = isolated._child

    def abort_first(*args):  # in the child: the first try dies as OR-Tools' CHECK does (SIGABRT)
        if not marker.exists():
            marker.write_text("x")
            _abort()
        real_child(*args)

    monkeypatch.setattr(isolated, "_child", abort_first)
    model, _, end = _two_jobs()
    solver = make_solver(10.0, 2, 0, 1.0, deterministic=True)
    assert run_solver(solver, model) == cp_model.OPTIMAL
    assert marker.exists() and solver.value(end) == 7  # the retry's answer: 7, as by hand


def test_a_child_that_always_aborts_is_one_line_not_a_lost_process(monkeypatch):
    monkeypatch.setattr(isolated, "_child", lambda *args: _abort())
    model, _, _ = _two_jobs()
    with pytest.raises(isolated.SolverCrashError) as err:
        run_solver(make_solver(10.0, 2, 0, 1.0, deterministic=True), model)
    text = str(err.value)
    assert "\n" not in text and "all 3 tries" in text and "SIGABRT" in text and "--workers 1" in text


def test_stop_all_stops_the_search_in_the_child():
    # 14 jobs of 1..14 ticks, pairwise exclusive, all wanting to end by 40: the one machine
    # needs 1 + ... + 14 = 105 ticks, so the model is infeasible but takes CP-SAT long to prove
    # with pure search; stop_all() must end it long before its 60 s (Ctrl-C's path)
    model = cp_model.CpModel()
    ivs = []
    for d in range(1, 15):
        s = model.new_int_var(0, 200, f"s{d}")
        ivs.append(model.new_fixed_size_interval_var(s, d, f"iv{d}"))
    model.add_no_overlap(ivs)
    end = model.new_int_var(0, 300, "end")
    model.add_max_equality(end, [iv.end_expr() for iv in ivs])
    model.minimize(end)
    solver = make_solver(60.0, 2, 0, 60.0, deterministic=True)
    solver.parameters.linearization_level = 0  # no LP: the bound 105 comes slowly
    solver.parameters.cp_model_presolve = False
    returned = threading.Event()

    def stop_once_under_way() -> None:
        # half a second in, and again until a solve was there to stop: a test process held up
        # before the solve began sent the one stop to nothing, and the search then ran its 60 s;
        # never after the solve returned (a stop left behind would cut the next test's solve)
        time.sleep(0.5)
        while not returned.is_set() and stop_all() == 0:
            time.sleep(0.05)

    stopper = threading.Thread(target=stop_once_under_way, daemon=True)
    stopper.start()
    t0 = time.monotonic()
    try:
        status = run_solver(solver, model)
    finally:
        returned.set()
        stopper.join()
    assert time.monotonic() - t0 < 30.0
    assert status in (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.UNKNOWN)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        assert solver.objective_value >= 105  # no schedule beats the one machine's 105 ticks
