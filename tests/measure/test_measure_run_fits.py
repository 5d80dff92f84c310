"""A sleeping run longer than ``--timeout`` is refused before it starts: the watchdog gives each
schedule's whole run ``--timeout`` seconds, and such a run was stopped and reported as a hang
(exit 1, a negative verdict) though the schedule only sleeps its costs."""

from __future__ import annotations

import pytest

from ppverify.core.errors import ParameterError
from ppverify.measure import check_run_fits


def test_a_run_longer_than_the_timeout_is_refused_with_its_predicted_length():
    # by hand, 1F1B p=2 m=2, F=0.5 B=1 per stage: device 0 runs F0 0-0.5, F1 0.5-1; device 1 F0
    # 0.5-1, B0 1-2, F1 2-2.5, B1 2.5-3.5; device 0 B0 2-3, B1 3.5-4.5: 4.5 s a step, 9 s for two
    with pytest.raises(ParameterError, match=r"timeout=5: .*2 steps \(1 warm-up\) sleep about 9 s"):
        check_run_fits("1f1b p=2 m=2", 4.5, 1, 1, 5.0)
    check_run_fits("1f1b p=2 m=2", 4.5, 1, 1, 9.5)
    check_run_fits("real compute", None, 3, 1, 1.0)  # no prediction: nothing to hold it to


def test_measure_refuses_it_in_one_line_and_writes_no_profile(tmp_path, capsys):
    pytest.importorskip("torch")
    from ppverify.cli import main

    prof = tmp_path / "prof"
    argv = ["measure", "1f1b", "-p", "2", "-m", "2", "--costs", "F=0.5,B=1", "--steps", "1"]
    assert main([*argv, "--timeout", "5", "--no-table", "--profile", str(prof)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "sleep about 9 s" in err and "raise --timeout" in err
    assert not prof.exists()
