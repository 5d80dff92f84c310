"""``report``'s solver budget is checked as ``compare`` checks it, with ``--from`` too: there each
optimum chart is solved again under ``--time-limit`` and ``--max-opt-ops``, and a budget no solve
can take (``-1``, ``0``, ``nan``, ``-5`` ops) once exited 0 with every optimum chart dropped while
the table kept the optimum's numbers. A budget that is not finite (``inf``, ``1e300``: a solve
that may never end) is refused too, with or without ``--from``."""

from __future__ import annotations

import pytest

from ppverify.cli import main


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    out = tmp_path_factory.mktemp("rows") / "c.csv"
    argv = ["compare", "--schedules", "1f1b", "-p", "2", "-m", "2", "--costs", "F=1,B=2", "--levels", "slot,optimum"]
    assert main([*argv, "--no-verify", "--no-progress", "--out", str(out)]) == 0
    return out


BAD = [
    (["--time-limit", "-1"], "parameter --time-limit=-1.0: must be > 0 seconds"),
    (["--time-limit", "0"], "parameter --time-limit=0.0: must be > 0 seconds"),
    (["--time-limit", "nan"], "parameter --time-limit=nan: must be > 0 seconds"),
    (["--time-limit", "inf"], "parameter --time-limit=inf: must be > 0 seconds and at most 1e+15 (a finite budget)"),
    (["--time-limit", "1e300"], "parameter --time-limit=1e+300: must be > 0 seconds and at most 1e+15"),
    (["--max-opt-ops", "-5"], "parameter --max-opt-ops=-5: must be an integer >= 0 (0: no optimum is solved)"),
]


@pytest.mark.parametrize("option,said", BAD)
def test_from_refuses_a_budget_no_solve_can_take(rows, tmp_path, capsys, option, said):
    page = tmp_path / "o.html"
    assert main(["report", "--from", str(rows), "-o", str(page), *option]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and said in err and err.startswith("ppverify report: error:")
    assert not page.exists()  # nothing written: no page with its optimum charts silently missing


@pytest.mark.parametrize("option,said", BAD)
def test_a_run_refuses_the_same_budgets(tmp_path, capsys, option, said):
    page = tmp_path / "o.html"
    argv = ["report", "--schedules", "1f1b", "-p", "2", "-m", "2", "--costs", "F=1,B=2", "--levels", "slot,optimum"]
    assert main([*argv, "--no-progress", "-o", str(page), *option]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and said in err
    assert not page.exists()


def test_a_good_budget_keeps_the_optimum_charts(rows, tmp_path, capsys):
    # 1F1B p=2 m=2 (F, B each): 2 devices x 2 microbatches x 2 kinds = 8 ops, charted at slot and
    # at optimum: 16 ops drawn
    page = tmp_path / "o.html"
    assert main(["report", "--from", str(rows), "-o", str(page), "--time-limit", "5", "--max-opt-ops", "64"]) == 0
    assert "1 charted points, 16 ops" in capsys.readouterr().out
