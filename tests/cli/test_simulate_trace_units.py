"""``simulate --measured-trace``: the prediction in seconds, as the traced step is (defect A1 of
the option hunt: without ``--costs`` the default F=1,B=2 was read as seconds, 9 s beside a 97 ms
step, +9210.9 %), and the device table's headers naming a unit only where the cells do not (C7)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ppverify.cli import main

TRACES = str(Path(__file__).parents[1] / "data/traces/measure-1f1b-p2-m4")
BASE = ["simulate", "1f1b", "-p", "2", "-m", "4", "--measured-trace", TRACES]


def _json(capsys, *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_default_costs_count_10_ms_a_unit(capsys):
    # 1F1B, p=2, m=4, F=1, B=2: makespan (m + p - 1)(F + B) = 5 * 3 = 15 units; at 10 ms a unit
    # (compare --measured-trace's count, and measure's default F=0.01,B=0.02) 150 ms, not 15 s
    rep = _json(capsys, *BASE)
    assert rep["makespan"] == pytest.approx(0.150)
    assert rep["costs"] == "F=0.01,B=0.02,I=0.01,W=0.01"
    meas = rep["measured"]
    assert meas["errors"]["step"] == pytest.approx((0.150 - meas["makespan"]) / meas["makespan"])
    # the measured step took 0.163 s (its doctest in compare/trace_check.py): about -8 %, not +9000 %
    assert -0.2 < meas["errors"]["step"] < 0


def test_default_costs_predict_what_measures_default_does(capsys):
    # docs/traces.md: "--costs F=0.01,B=0.02" is measure's default; the same prediction either way
    without = _json(capsys, *BASE)
    given = _json(capsys, *BASE, "--costs", "F=0.01,B=0.02")
    assert without["makespan"] == pytest.approx(given["makespan"])
    assert without["measured"]["errors"]["step"] == pytest.approx(given["measured"]["errors"]["step"])


def test_text_says_seconds(capsys):
    assert main([*BASE, "--no-table"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "costs         F=0.01,B=0.02,I=0.01,W=0.01 (s)" in lines
    assert "makespan      150.000 ms" in lines
    # given --costs are seconds (the option's help): labelled so, not "(units)"
    assert main([*BASE, "--no-table", "--costs", "F=0.02,B=0.04"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "costs         F=0.02,B=0.04,I=0.02,W=0.02 (s)" in lines
    assert "makespan      300.000 ms" in lines  # 5 * (20 + 40) ms


def test_default_comm_delay_scales_with_the_costs(capsys):
    # compare: "--comm-delay, scaled as the costs are": 0.5 units at 10 ms = 5 ms per transfer
    assert main([*BASE, "--no-table", "--comm-delay", "0.5"]) == 0
    assert "comm          5.000 ms per cross-device transfer" in capsys.readouterr().out.splitlines()


def test_unit_steps_refused_beside_a_trace(capsys):
    # torch counts steps: no time to set beside a measured step (was: 10 steps read as 10 s)
    assert main([*BASE, "--semantics", "torch"]) == 2
    err = capsys.readouterr().err
    assert "--measured-trace" in err and "torch semantics counts unit steps" in err and "Traceback" not in err


def test_seconds_header_names_no_unit_its_cells_carry(capsys):
    # a calibrated-preset mode (--system with --costs): seconds beside activations; each cell says
    # "ms", so "busy (s)" over "60.000 ms" named the unit twice, and wrongly
    assert main(["simulate", "1f1b", "-p", "2", "-m", "2", "--system", "dgx-h100", "--costs", "F=0.01,B=0.02"]) == 0
    out = capsys.readouterr().out
    header = next(x for x in out.splitlines() if x.lstrip().startswith("device"))
    assert "busy (s)" not in header and "busy" in header and "(activations)" in header
    # abstract units keep theirs: the cells are bare numbers
    assert main(["simulate", "1f1b", "-p", "2", "-m", "2"]) == 0
    header = next(x for x in capsys.readouterr().out.splitlines() if x.lstrip().startswith("device"))
    assert "busy (units)" in header
