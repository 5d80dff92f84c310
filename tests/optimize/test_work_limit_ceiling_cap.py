"""Every ``--work-limit`` the rule allows (> 0, at most 1e9) runs: the wall-clock ceiling it implies
by default, 4 x the work + 30 s (docs/optimization.md), is capped at the longest ``--time-limit``,
1e9 s (docs/limits.md). ``optimize --work-limit 1e9`` was refused for its own default ceiling,
4e9 + 30 s."""

from __future__ import annotations

import json

import pytest

from ppverify.cli import main
from ppverify.cli.optimize_args import wall_flag
from ppverify.optimize.solver_run import run_limits, wall_ceiling


@pytest.mark.parametrize(
    "work, wall",
    [
        (60.0, 270.0),  # 4 x 60 + 30, far below the cap
        (1e8, 400_000_030.0),  # 4 x 1e8 + 30
        (249_999_992.5, 1e9),  # (1e9 - 30) / 4: 4 x it + 30 is 1e9 exactly, the cap itself
        (249_999_993.0, 1e9),  # 4 x it + 30 = 1e9 + 2: capped
        (1e9, 1e9),  # 4e9 + 30: capped
    ],
)
def test_the_default_ceiling_is_four_times_the_work_plus_30_at_most_1e9(work, wall):
    assert wall_ceiling(work) == wall
    assert run_limits(None, work) == (work, wall)


def test_a_capped_ceiling_is_named_with_its_cap():
    # the formula, then the cap; the factor is not read back from the capped wall ((1e9 - 30) / 1e9)
    assert wall_flag(None, 1e9, 1e9, 1e9) == "--time-limit (default 4 x --work-limit 1e+09 + 30 s, at most 1e+09)"
    assert wall_flag(None, 1e8, 1e8, 4e8 + 30) == "--time-limit (default 4 x --work-limit 1e+08 + 30 s)"


@pytest.mark.parametrize("command", ["optimize", "gap"])
def test_the_largest_work_limit_runs(capsys, command):
    # 1F1B p=2 m=2 with the default costs is proven optimal at once: the work limit is never used up
    argv = [command, "1f1b", "-p", "2", "-m", "2", "--work-limit", "1e9"]
    if command == "optimize":
        assert main([*argv, "--json"]) == 0
        solver = json.loads(capsys.readouterr().out)["solver"]
        assert (solver["work_limit_s"], solver["time_limit_s"]) == (1e9, 1e9)
    else:
        assert main(argv) == 0
        assert "gap        0.00%" in capsys.readouterr().out
