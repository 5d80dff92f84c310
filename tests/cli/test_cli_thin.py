"""The CLI's shared plumbing after the thin-commands refactor: one schedule-from-arguments path,
one mechanism for the global options, the crossover axis, and command modules that stay thin."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest

import ppverify.cli.commands as commands_pkg
from ppverify.cli import build_parser, main
from ppverify.cli.common import add_schedule_arguments, document_from_args, schedule_from_args
from ppverify.compare import Config
from ppverify.compare.crossover_axis import axis_values, crossover_title, parse_range
from ppverify.core.errors import ParameterError
from ppverify.core.limits import DEFAULT_MAX_OPS

#: the command modules this refactor made thin (the others have their own owners and checks)
THIN = (
    "show",
    "simulate",
    "import_cmd",
    "optimize",
    "plot",
    "export",
    "gap",
    "list_cmd",
    "report",
    "compare",
    "calibrate",
    "measure",
)


def _code_lines(source: str) -> int:
    """Lines of a module that are not docstrings, comments or blank: thinness is about logic, and
    the docstrings' examples (which the doctests run) should not count against it."""
    tree = ast.parse(source)
    docstring_lines: set[int] = set()
    documented = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    for node in ast.walk(tree):
        if isinstance(node, documented) and ast.get_docstring(node):
            first = node.body[0]
            docstring_lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return sum(
        1
        for number, line in enumerate(source.splitlines(), start=1)
        if number not in docstring_lines and line.strip() and not line.strip().startswith("#")
    )


def test_code_lines_skip_docstrings_comments_and_blanks():
    source = '"""Module."""\n\n# why\ndef f():\n    """Doc.\n\n    >>> f()\n    """\n    return 1\n'
    assert _code_lines(source) == 2  # the def line and the return


@pytest.mark.parametrize("name", THIN)
def test_command_modules_stay_under_120_lines_of_code(name):
    path = Path(commands_pkg.__file__).parent / f"{name}.py"
    assert _code_lines(path.read_text()) < 120


def _ns(*argv: str, optional: bool = False) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_schedule_arguments(parser, optional=optional)
    parser.add_argument("--placement", default=None)
    return parser.parse_args(list(argv))


def test_schedule_from_args_builds_families_with_their_parameters():
    s = schedule_from_args(_ns("interleaved-1f1b", "-p", "2", "--v", "3"))
    assert (s.p, s.m, s.num_stages) == (2, 2, 6)  # m defaults to p; v chunks of p devices
    assert _ns("-p", "3", optional=True).schedule is None


def test_a_text_table_is_read_with_its_placement(tmp_path):
    # the V placement on 2 devices: stages 0 1 on devices 0 1, stages 2 3 back on 1 0
    table = tmp_path / "v.txt"
    table.write_text("tick   0   1   2   3\ndev 0 0F0   .   .  3F0\ndev 1   . 1F0 2F0   .\n")
    doc = document_from_args(_ns(str(table), "--placement", "v", "-m", "1"))
    assert doc.schedule.placement.maps == ((0, 1, 1, 0),)
    assert doc.table is not None and doc.table.cells[1][2] == "2F0"
    with pytest.raises(ParameterError, match="only a text table"):
        document_from_args(_ns("gpipe", "--placement", "v"))


@pytest.mark.parametrize(
    "argv,max_ops,debug",
    [
        (["list"], DEFAULT_MAX_OPS, False),
        (["--max-ops", "7", "list"], 7, False),
        (["list", "--max-ops", "7", "--debug"], 7, True),
        (["--max-ops", "5", "list", "--max-ops=9"], 9, False),  # the last one given wins
        (["--debug", "list"], DEFAULT_MAX_OPS, True),
    ],
)
def test_global_options_before_or_after_the_command(argv, max_ops, debug):
    args = build_parser().parse_args(argv)
    assert (args.max_ops, args.debug) == (max_ops, debug)


def test_global_options_do_not_clutter_command_help(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["show", "--help"])
    assert "--max-ops" not in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["show", "1f1b", "--max-ops", "-5"], "--max-ops -5: must be an integer >= 1"),  # op_limit's rule, as for 0
        (["--max-ops", "9999999999999999", "list"], "a number of 16 digits; at most 15 are allowed"),
        (["show", "1f1b", "--max-ops", "10"], "implies up to 48 ops, over the limit of 10"),  # 1F1B p=4 m=4: 3 ops x 16
    ],
)
def test_bad_global_options_are_one_line_errors(capsys, argv, needle):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


def test_crossover_axis():
    assert parse_range("1,1000", (1.0, 10.0, 13)) == (1.0, 1000.0, 13)
    lat = axis_values("latency", "1,100,3", preset=True)
    assert lat[0] == pytest.approx(1e-6) and lat[1] == pytest.approx(1e-5) and lat[2] == pytest.approx(1e-4)
    bw = axis_values("bandwidth", "10,1000,3", preset=True)
    assert bw.tolist() == pytest.approx([1e10, 1e11, 1e12])  # GB/s in bytes/s, log-spaced
    assert axis_values("latency", "0,1,5", preset=False).tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    for bad, needle in (("0,10", "LO > 0"), ("1,x", "expected LO,HI"), ("5,1", "LO < HI"), ("1,2,1", "2 <= N")):
        with pytest.raises(ParameterError, match=needle):
            axis_values("latency", bad, preset=True)
    with pytest.raises(ParameterError, match="only have a latency"):
        axis_values("bandwidth", None, preset=False)
    title = crossover_title(Config(2, 4, "dgx-h100", "gpt3-1.3b"), "bandwidth", "contention")
    assert (
        title.startswith("p=2 m=4 ")
        and "bandwidth varied" in title
        and title.endswith("under contention (x = order swaps)")
    )
