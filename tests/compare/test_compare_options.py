"""``ppverify compare``'s options as library data (:mod:`ppverify.compare.options`): the command
module only adds them and hands ``vars(args)`` to :func:`request_from_options`."""

from __future__ import annotations

import argparse

import pytest

from ppverify.cli import build_parser
from ppverify.cli.commands.compare import add_arguments
from ppverify.compare.options import request_from_options
from ppverify.core.errors import ParameterError


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


def test_parsed_options_become_the_typed_request():
    req = request_from_options(
        vars(_args("--schedules", "gpipe,1f1b", "-p", "2,4", "-m", "4", "--costs", "F=1,B=2", "--levels", "slot"))
    )
    # the text as typed: two schedules, p 2 and 4, m 4, F=1 B=2 as pairs, slot alone
    assert [e.label for e in req.schedules or ()] == ["gpipe", "1f1b"]
    assert (req.ps, req.ms, req.costs, req.levels) == ((2, 4), (4,), (("F", 1.0), ("B", 2.0)), ("slot",))
    assert req.comm_delays == (0.0,)  # --comm-delay left out: one delay, zero
    assert (req.verify, req.progress, req.keep_points) == (True, True, False)


def test_flags_and_preset_options_reach_the_request():
    args = _args("--systems", "dgx-h100", "--models", "gpt3-1.3b", "-p", "2", "-m", "4", "--tp", "2")
    args.no_verify, args.no_progress, args.report = True, True, "page.html"
    req = request_from_options(vars(args))
    assert (req.systems, req.models, req.options) == (("dgx-h100",), ("gpt3-1.3b",), (("tp", 2),))
    # --no-verify and --no-progress switch both off; a report page keeps every point's timelines
    assert (req.verify, req.progress, req.keep_points) == (False, False, True)


def test_the_map_drops_the_selections_it_sweeps_itself():
    args = _args("--findings", "-p", "3")
    # without the map the findings run on the p given; the map sweeps p (and the schedules) itself,
    # so the request falls back to the findings' own p = 4, 8 and their own schedule set
    assert request_from_options(vars(args)).ps == (3,)
    mapped = request_from_options(vars(_args("--findings", "-p", "3", "--schedules", "gpipe")), mapped=True)
    assert (mapped.ps, mapped.schedules) == ((4, 8), None)


def test_the_findings_refuse_schedules_as_they_refuse_m():
    # docs/comparison.md: the findings are checked on the seed paper's seven schedules, so a
    # --schedules would be silently ignored (as -m would): refused, naming the option
    args = _args("--findings", "-p", "4", "--costs", "F=1,B=2", "--schedules", "gpipe,1f1b,zb-h1")
    with pytest.raises(ParameterError, match=r"parameter schedules=gpipe,1f1b,zb-h1: --findings checks the seed"):
        request_from_options(vars(args))


def test_a_bad_option_fails_before_anything_runs():
    with pytest.raises(ParameterError, match="parameter max-opt-ops=5: budgets the CP-SAT optimum"):
        request_from_options(vars(_args("--levels", "slot", "--max-opt-ops", "5")))


def test_help_lists_every_option_in_the_commands_order():
    text = build_parser().parse_args(["compare"])  # the command is registered with its options
    assert text.levels is None and text.report is None
    helped = argparse.ArgumentParser()
    add_arguments(helped)
    flags = [a.option_strings[0] for a in helped._actions if a.option_strings]
    # selections first, then the presets, the run's options, the map's, and the page last
    order = ["--schedules", "-p", "--levels", "--mfu", "--measured", "--no-progress", "--map", "--report"]
    assert [f for f in flags if f in order] == order
