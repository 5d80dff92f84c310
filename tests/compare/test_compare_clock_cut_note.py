"""A compare row whose optimum the wall clock cut says so under the text table: its value may
differ on a quieter machine, where a row stopped by the work count does not."""

from __future__ import annotations

import time

import ppverify.optimize as opt
from ppverify.cli import main
from ppverify.optimize.deadline import Deadline


def _started_long_ago() -> Deadline:
    # a 100 s deadline that started 60 s ago: the local search's half (50 s) has passed, the
    # search's 90 % has not, so the clock cuts the local search on any machine
    return Deadline(time.monotonic() + 40.0, 100.0)


ARGS = ["compare", "--schedules", "zbv", "-p", "2", "-m", "4", "--costs", "F=1,I=1,W=1", "--comm-delay", "1"]
ARGS += ["--memory-cap", "1.5", "--levels", "async,optimum", "--time-limit", "0.2", "--no-progress"]


def test_a_clock_cut_optimum_is_named_under_the_table(capsys, monkeypatch):
    real = opt.optimize

    def cut_optimize(problem, **kw):
        return real(problem, **kw, deadline=_started_long_ago())

    monkeypatch.setattr(opt, "optimize", cut_optimize)
    main(ARGS)
    out = capsys.readouterr().out
    assert "zbv: optimum wall-clock limit reached in: local search (a rerun may differ)" in out


def test_a_row_the_work_count_stopped_has_no_such_line(capsys):
    main(ARGS)
    assert "limit reached in" not in capsys.readouterr().out
