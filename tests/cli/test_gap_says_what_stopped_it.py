"""``gap`` says what ended a search: ``--json`` carries ``reason`` and ``solver`` (as ``optimize
--json`` does), so a wall-clock cut, whose value may differ on another run, is told apart from a
search that CP-SAT's deterministic work ended; the text names the wall clock or the work limit,
not "within 60 s" of a --time-limit that did not stop it. And the family's distance to a proven
optimum it equals is 0, not a float residue (interleaved-zb p = 3, m = 2, v = 3 with F = I = W = 1:
both are 23 ticks of 1/3, 7.66667, summed in two orders)."""

from __future__ import annotations

import dataclasses
import json

import ppverify.optimize as optimize_pkg
from ppverify.cli import main

ARGV = ["gap", "1f1b", "-p", "2", "-m", "4", "--costs", "F=1,B=2", "--work-limit", "1"]


def _cut(monkeypatch):
    real = optimize_pkg.optimize

    def cut_by_the_clock(*args, **kwargs):
        res = real(*args, **kwargs)
        solver = {**res.solver, "wall_limited": "search", "deterministic": False}
        return dataclasses.replace(res, status="FEASIBLE", solver=solver, reason="wall-clock limit reached in: search")

    monkeypatch.setattr(optimize_pkg, "optimize", cut_by_the_clock)


def test_json_has_reason_and_solver(capsys):
    capsys.readouterr()
    assert main([*ARGV, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "OPTIMAL" and out["reason"] == ""  # 1F1B p = 2 is proven optimal: nothing cut it
    assert out["solver"]["work_limit_s"] == 1 and "wall_limited" not in out["solver"]


def test_a_wall_clock_cut_is_named_in_json_and_text(monkeypatch, capsys):
    _cut(monkeypatch)
    capsys.readouterr()
    assert main([*ARGV, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["reason"] == "wall-clock limit reached in: search" and out["solver"]["wall_limited"] == "search"
    assert main(ARGV) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("best found"))
    assert "when the wall clock stopped it" in line and "wall-clock limit reached in: search" in line


def test_a_search_the_work_limit_ended_names_the_work_limit(monkeypatch, capsys):
    real = optimize_pkg.optimize
    monkeypatch.setattr(
        optimize_pkg, "optimize", lambda *a, **k: dataclasses.replace(real(*a, **k), status="FEASIBLE", reason="")
    )
    capsys.readouterr()
    assert main(ARGV) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("best found"))
    assert "within the work limit of 1 deterministic s" in line and "within 60 s" not in line


def test_a_family_equal_to_the_optimum_is_0_above_it(capsys):
    capsys.readouterr()
    assert (
        main(["gap", "interleaved-zb", "-p", "3", "-m", "2", "--v", "3", "--work-limit", "1", "--costs", "F=1,I=1,W=1"])
        == 0
    )
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("optimum"))
    assert line.endswith("the family is 0 above it)")
