"""The fuzz generators of issue 22 items 5 and 9 (``scripts/fuzz.py``): ``verify`` with a
``--time-limit`` near the run's length, and signals sent to ``measure``. A few cases here; the
script runs any number (``python scripts/fuzz.py --alarm-cases 1000 --signal-cases 40``)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "ppverify_fuzz_limits", Path(__file__).parents[2] / "scripts" / "fuzz.py"
)
fuzz = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = fuzz
_SPEC.loader.exec_module(fuzz)


def test_alarm_cases_draw_limits_near_the_runs_length():
    cases = fuzz.make_alarm_cases(200, 1)
    limits = [float(c.argv[c.argv.index("--time-limit") + 1]) for c in cases]
    assert all(0.02 <= x <= 3.0 for x in limits)
    assert min(limits) < 0.2 and max(limits) > 2.5  # from the first piece of work to past the run
    assert fuzz.make_alarm_cases(5, 7) == fuzz.make_alarm_cases(5, 7)  # reproducible from the seed


def test_alarm_cases_are_a_verdict_or_one_line(tmp_path):
    # in process (the cooperative limit) and every third in a subprocess (with the hard stop)
    outcomes = fuzz.run_cases(fuzz.make_alarm_cases(9, 2), tmp_path, 3)
    assert [fuzz.describe(o) for o in outcomes if fuzz.check(o)] == []
    assert {o.code for o in outcomes} <= {0, 1, 2}


def test_signal_cases_cover_every_signal_and_target():
    kinds = {tuple(c.kind.split()[1:3]) for c in fuzz.make_signal_cases(200, 1)}
    assert kinds == {(n, t) for n, t, _ in fuzz.SIGNALS_TO_MEASURE}


@pytest.mark.slow
def test_signal_cases_leave_one_line_and_no_process(tmp_path):
    outcomes = [fuzz.run_signal_case(c, tmp_path) for c in fuzz.make_signal_cases(4, 3)]
    assert [fuzz.describe(o) for o in outcomes if o.problem] == []
