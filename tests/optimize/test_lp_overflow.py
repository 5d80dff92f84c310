"""CP-SAT's level-2 LP aborted the whole process on a memory-capped model in bytes (OR-Tools 9.15,
``Check failed: threshold > 0`` in its LP constraint simplification, exit 134 with nothing
printed): ``gap dualpipe -p 2 -m 4`` with GPT-3 1.3B on dgx-h100 or ethernet-100g, every time.
:func:`run_solver` keeps the level-2 cuts out of a model whose magnitudes reach that far; these
tests run the commands that aborted, in a subprocess (an abort would take pytest with it)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from ortools.sat.python import cp_model

from ppverify.optimize.solver_setup import LEVEL2_SUBSOLVERS, LP_MAGNITUDE_LIMIT, lp_magnitude, make_solver, run_solver


@pytest.mark.parametrize("system", ["dgx-h100", "ethernet-100g"])
def test_gap_of_dualpipe_in_bytes_no_longer_aborts(system):
    argv = ["gap", "dualpipe", "-p", "2", "-m", "4", "--system", system, "--model", "gpt3-1.3b"]
    run = subprocess.run([sys.executable, "-m", "ppverify", *argv], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-500:]
    lines = {ln.split()[0]: ln for ln in run.stdout.splitlines() if ln.strip()}
    bound = float(lines["bound"].split()[1])
    # CP-SAT's optimum is on durations rounded down to 0.1 us ticks: the schedule's own time is
    # printed, at or above the bound, and not called proven
    best = float(lines["best"].split()[2])
    assert bound <= best and "rounded down to ticks of 1e-07 s" in lines["best"]
    assert "optimum" not in lines


def _capped_model(cap: int, horizon: int) -> cp_model.CpModel:
    model = cp_model.CpModel()
    start = model.new_int_var(0, horizon, "start")
    hold = model.new_fixed_size_interval_var(start, 1, "hold")
    model.add_cumulative([hold], [1], cap)
    model.minimize(start)
    return model


def test_the_level2_subsolvers_are_capped_only_on_large_magnitudes():
    # cap x horizon: 7 x 100 by hand for the small model, 2**30 x 2**20 = 2**50 for the large one
    small, large = _capped_model(7, 100), _capped_model(2**30, 2**20)
    assert lp_magnitude(small) == 700 and lp_magnitude(large) == 2**50 >= LP_MAGNITUDE_LIMIT
    plain, guarded = make_solver(5.0, 1, 0), make_solver(5.0, 1, 0)
    assert run_solver(plain, small) == cp_model.OPTIMAL and "subsolver_params" not in str(plain.parameters)
    assert run_solver(guarded, large) == cp_model.OPTIMAL
    text = str(guarded.parameters)  # the wrapper's repeated field cannot be iterated
    assert text.count("subsolver_params {") == len(LEVEL2_SUBSOLVERS)
    assert all(f'name: "{name}"' in text for name in LEVEL2_SUBSOLVERS)
    assert text.count("linearization_level: 1") >= len(LEVEL2_SUBSOLVERS)
    assert guarded.parameters.linearization_level <= 1


def test_gap_json_leaves_a_rounded_grid_optimum_unproven(capsys):
    import json

    from ppverify.cli import main

    argv = ["gap", "dualpipe", "-p", "2", "-m", "4", "--system", "pcie-gen4", "--model", "gpt3-1.3b", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    # CP-SAT's optimum is on 0.1 us ticks rounded down: a bound there, not a schedule's time
    assert out["optimum"] is None and out["bound"] <= out["best_found"] <= out["family_value"]
