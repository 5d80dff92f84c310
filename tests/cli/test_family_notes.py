"""A family parameter given where it changes nothing is said on stderr, once, by every command
that builds the family (here chimera's --units at m = p: one basic unit of p microbatches is the
whole step, so concatenating units and running them continuously build the same schedule)."""

from __future__ import annotations

import pytest

from ppverify.cli import main
from ppverify.schedules import build

NOTE = "ppverify: note: units=concat has no effect at m = p = 4"


@pytest.mark.parametrize("command", ["verify", "show", "simulate"])
def test_units_at_m_equal_p_is_noted_once(capsys, command):
    main([command, "chimera", "-p", "4", "-m", "4", "--units", "concat"])
    err = capsys.readouterr().err
    assert err.count(NOTE) == 1


def test_the_note_is_true_the_two_schedules_are_equal():
    a = build("chimera", 4, 4, units="concat")
    b = build("chimera", 4, 4, units="continuous")
    assert a.programs == b.programs and a.pipe_of_mb == b.pipe_of_mb


@pytest.mark.parametrize("args", [["-m", "8", "--units", "concat"], ["-m", "4"]])
def test_no_note_where_units_matter_or_are_not_given(capsys, args):
    main(["verify", "chimera", "-p", "4", *args])
    assert "no effect" not in capsys.readouterr().err
