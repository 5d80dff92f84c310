"""One convention for a parameter's name in the CLI's errors: an option given on the command line
is named as it is typed (``parameter --workers=0``, ``parameter -p=0``), applied where the CLI
prints the error; a library caller keeps the bare name, and a name that is no option of the
command keeps its own. Also: the text chart's time axis names the timeline's unit, and a search's
status names the signal that cut it only where the command's signal handling says which."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ppverify.cli import main
from ppverify.core.errors import ParameterError
from ppverify.core.timeline_text import gantt
from ppverify.engines import run
from ppverify.optimize.solver_setup import check_limits, cut_reason, stops_named
from ppverify.schedules import build

SWEEP = str(Path(__file__).resolve().parents[2] / "examples" / "sweep.yaml")


@pytest.mark.parametrize(
    "argv, line",
    [
        # the rules are those of the checks that refuse each value (expected texts written from
        # their source: check_limits, placement's p, a schedule's m, run_limits, the budgets'
        # parser, sweep's own checks); only the name changes, to the option string typed
        (
            ["optimize", "1f1b", "--workers", "0"],
            "ppverify optimize: error: parameter --workers=0: must be an integer >= 1",
        ),
        (["optimize", "1f1b", "-p", "0"], "ppverify optimize: error: parameter -p=0: must be an integer >= 1"),
        (
            ["optimize", "1f1b", "-p", "2", "-m", "0"],
            "ppverify optimize: error: parameter -m=0: must be an integer >= 1",
        ),
        (
            # argparse reads --time-limit as a float: 0 is shown as the 0.0 the check was given
            ["optimize", "1f1b", "-p", "2", "--time-limit", "0"],
            "ppverify optimize: error: parameter --time-limit=0.0: must be > 0 and at most 1e9 seconds",
        ),
        (
            ["gap", "1f1b", "-p", "2", "--workers", "0"],
            "ppverify gap: error: parameter --workers=0: must be an integer >= 1",
        ),
        (
            ["design", "-p", "4", "--budgets", "1,1"],
            "ppverify design: error: parameter --budgets=1,1: 1 is named twice (each budget is one point per placement)",
        ),
        (["sweep", SWEEP, "--batch", "0", "--dry-run"], "ppverify sweep: error: parameter --batch=0: must be >= 1"),
        (["sweep", SWEEP, "--workers", "0", "--dry-run"], "ppverify sweep: error: parameter --workers=0: must be >= 1"),
        # `--workers=0` typed in one word is still the option --workers
        (["sweep", SWEEP, "--workers=0", "--dry-run"], "ppverify sweep: error: parameter --workers=0: must be >= 1"),
    ],
)
def test_an_option_given_is_named_as_typed(argv, line, capsys) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err == line + "\n"


def test_a_name_that_is_no_option_keeps_its_name(capsys) -> None:
    # `show FAMILY`: the family is a positional argument, not an option: "family" stays
    assert main(["show", "nosuch"]) == 2
    assert capsys.readouterr().err.startswith("ppverify show: error: parameter family=nosuch: unknown schedule family")


def test_a_library_caller_keeps_the_bare_name() -> None:
    with pytest.raises(ParameterError) as caught:
        check_limits(1.0, 0)
    assert str(caught.value) == "parameter workers=0: must be an integer >= 1"


def test_the_chart_axis_names_the_timelines_unit() -> None:
    # gpipe p=2 m=1: device 0 runs F then B, device 1 F B between them
    torch = run(build("gpipe", p=2, m=1), semantics="torch")  # every action one step: F, send, F, B, send, B = 6
    assert gantt(torch, width=6).splitlines()[0] == "time    0 .. 6 steps, 1 per column"
    # async, a family's own unit costs (every op 1): F F B B in a chain over the two devices = 4 units
    units = run(build("gpipe", p=2, m=1))
    assert gantt(units, width=2).splitlines()[0] == "time    0 .. 4 units, 2 per column"
    # any other unit is named as it is (the timeline's time_unit, from its cost model)
    ticks = dataclasses.replace(units, costs=dataclasses.replace(units.costs, time_unit="ticks"))
    assert gantt(ticks, width=2).splitlines()[0] == "time    0 .. 4 ticks, 2 per column"
    # seconds carry their own unit in each number: no word after them
    secs = dataclasses.replace(units, costs=dataclasses.replace(units.costs, time_unit="s"))
    assert gantt(secs, width=2).splitlines()[0] == "time    0 .. 4.0000 s, 2.0000 s per column"


def test_the_status_names_the_signal_only_where_it_is_known() -> None:
    assert cut_reason(["search"], interrupted=True) == "interrupted in: search"
    with stops_named(lambda: "terminated (SIGHUP)"):
        assert cut_reason(["bounds", "search"], interrupted=True) == "terminated (SIGHUP) in: bounds, search"
        with stops_named(lambda: ""):  # no signal arrived yet (the event set by other code)
            assert cut_reason(["search"], interrupted=True) == "interrupted in: search"
        # the clock is the clock whatever the signal handling
        assert cut_reason(["search"]) == "wall-clock limit reached in: search"
    assert cut_reason(["search"], interrupted=True) == "interrupted in: search"
