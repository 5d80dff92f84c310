"""``design --measure-scale`` is checked before the search: without ``--measure`` (or with
presets, whose ops sleep their own seconds) it was read by nobody, and ``nan`` or ``inf`` with
``--measure`` passed (``inf > 0``) or failed only after every point had been searched."""

from __future__ import annotations

import math

import pytest

from ppverify.cli import main
from ppverify.core.errors import ParameterError
from ppverify.design.measured import measure_scale


def test_the_scale_is_read_only_where_it_is_used():
    assert measure_scale(True, None, False) == 0.01  # the documented default
    assert measure_scale(False, None, True) == 0.01
    assert measure_scale(True, 0.002, False) == 0.002
    with pytest.raises(ParameterError, match="give --measure, or leave it out"):
        measure_scale(False, 0.05, False)
    with pytest.raises(ParameterError, match="sleep their own costs in seconds"):
        measure_scale(True, 0.05, True)
    for bad in (0.0, -1.0, math.nan, math.inf, 61.0):
        with pytest.raises(ParameterError, match=r"in \(0, 60\]"):
            measure_scale(True, bad, False)


@pytest.mark.parametrize("extra", [["--measure-scale", "0.05"], ["--measure", "--measure-scale", "inf"]])
def test_design_refuses_before_any_search(monkeypatch, capsys, extra):
    import ppverify.design.run as run_mod

    def no_search(*a, **k):
        raise AssertionError("searched")

    monkeypatch.setattr(run_mod, "design", no_search)
    argv = ["design", "-p", "2", "-m", "2", "--placements", "linear", "--budgets", "2", "--no-progress", *extra]
    assert main(argv) == 2
    assert "measure-scale" in capsys.readouterr().err
