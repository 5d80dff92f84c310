"""``scripts/bench_design.py``: its limits are ``design``'s (``--work-limit`` per point,
``--time-limit`` a ceiling that alone also caps the work), its profiled rows are those of
ppverify/data/zb_settings.csv, and its figures on a size solved by hand."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_design.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_design", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_script(bench, monkeypatch, capsys, *args: str) -> str:
    monkeypatch.setattr(sys, "argv", ["bench_design.py", *args])
    bench.main()
    return capsys.readouterr().out


def test_zb_row_is_the_csv_row(bench):
    # the first profiled row of the zero-bubble paper's settings, read off the CSV by hand
    assert bench.zb_row(0) == {
        "p": 8,
        "m": 24,
        "f": 18522,
        "i": 18086,
        "w": 9337,
        "c": 601,
        "h": 2304,
        "a": 24,
        "zb1p_span": 1310405,
        "zb2p_span": 1152599,
    }


def test_small_frontier_by_hand(bench, monkeypatch, capsys):
    # p = 2, m = 4, F = I = W = 1 on V (0.5 per stage): at budget 2 the step is the busy time
    # m(F + I + W) = 12 plus the fill (p - 1) F / 2 = 0.5, so 12.5 and a bubble of 1 - 12/12.5 = 4 %
    out = run_script(
        bench,
        monkeypatch,
        capsys,
        *("--p", "2", "--m", "4", "--delays", "0", "--work-limit", "1", "--budgets", "1,2"),
        *("--placements", "linear,v"),
    )
    assert "work 1/point" in out
    assert "v budget 2: peak 2, step 12.5, bound 12.5, gap 0 %" in out
    assert "bubble 4.000%" in out
    assert "0 on searched placements" in out
    # two pipes fill each other's fill: Chimera and DualPipe (bidirectional, not searched) take the
    # busy time 12 itself at their peak of 3, where the frontier is 12.5; named, not hidden
    assert "2 on others (chimera on bidirectional, dualpipe on bidirectional)" in out


def test_time_limit_alone_caps_the_work(bench, monkeypatch, capsys):
    out = run_script(
        bench,
        monkeypatch,
        capsys,
        *("--p", "2", "--m", "2", "--delays", "0", "--time-limit", "60", "--budgets", "2"),
        *("--placements", "linear"),
    )
    assert "work 10/point" in out  # the default work, under a ceiling of 60 s
    out = run_script(
        bench,
        monkeypatch,
        capsys,
        *("--p", "2", "--m", "2", "--delays", "0", "--time-limit", "0.5", "--budgets", "2"),
        *("--placements", "linear"),
    )
    assert "work 0.5/point" in out
