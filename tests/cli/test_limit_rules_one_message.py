"""Each option refused by one rule with one message whatever the bad value: the findings map's
own options given without ``--map`` (``--workers 0`` and ``--batch 0`` too, where ``0 == False``
once let them through unread), and ``ppverify --max-ops`` below 1 (``-1`` was "invalid int value",
``0`` "must be an integer >= 1")."""

from __future__ import annotations

import pytest

from ppverify.cli import main

# a compare run that makes no findings map; refused before any work, so nothing runs
COMPARE = [
    "compare", "--schedules", "1f1b", "--systems", "ideal", "--models", "gpt3-1.3b",
    "-p", "2", "-m", "2", "--levels", "optimum", "--no-progress", "--no-verify",
]  # fmt: skip


def _refused(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1  # one line (docs/limits.md: exit 2, one line on stderr)
    return err.strip()


@pytest.mark.parametrize("flag", ["--workers", "--batch"])
@pytest.mark.parametrize("value", ["0", "3", "-1"])  # 3 and -1 were refused, 0 ran
def test_map_options_without_the_map_are_refused_whatever_their_value(capsys, flag, value):
    # findings_map_cli.check_map_options' rule, for every value given: the option is read by the
    # map only, so without --map it would be ignored (0 is a value given, not "not given")
    err = _refused(capsys, [*COMPARE, f"{flag}={value}"])
    assert err == (
        f"ppverify compare: error: parameter {flag}={value}: {flag} belongs to the findings map, "
        "which this run does not make: give --findings --map, or leave it out"
    )


@pytest.mark.parametrize("value", ["0", "-1", "-7", "-0"])
def test_max_ops_below_one_gets_the_rule_of_zero(capsys, value):
    # core.limits.op_limit's rule, "--max-ops N: must be an integer >= 1", stated for each value
    # (int("-0") is 0); the command is named, as for 0
    err = _refused(capsys, ["--max-ops", value, "list"])
    assert err == f"ppverify list: error: --max-ops {int(value)}: must be an integer >= 1"


@pytest.mark.parametrize("value", ["abc", "1.5", "1e3", "--1"])
def test_max_ops_that_is_no_integer_is_still_an_invalid_int(capsys, value):
    err = _refused(capsys, [f"--max-ops={value}", "list"])
    assert err == f"ppverify: error: argument --max-ops: invalid int value: '{value}' (see ppverify --help)"


def test_max_ops_with_a_plus_sign_is_that_integer(capsys):
    # +48 is 48: 1F1B p=4 m=4 implies up to 3 x 4 x 4 = 48 ops (docs/limits.md: 3 per stage and
    # microbatch), within the limit, while 47 is not
    assert main(["--max-ops", "+48", "show", "1f1b", "--no-table"]) == 0
    capsys.readouterr()
    assert "implies up to 48 ops, over the limit of 47" in _refused(capsys, ["--max-ops", "+47", "show", "1f1b"])
