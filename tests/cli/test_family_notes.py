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


def test_megatron_note_fires_exactly_where_the_two_orders_build_the_same_schedule():
    # the note's claim checked by building both orders, over the sizes Megatron's order accepts
    from ppverify.schedules.interleaved import megatron_note

    for p in range(1, 6):
        for v in (1, 2, 3):
            for m in (p, 2 * p, 3 * p):
                same = (
                    build("interleaved-1f1b", p, m, v=v, order="megatron").programs
                    == build("interleaved-1f1b", p, m, v=v, order="pytorch").programs
                )
                assert bool(megatron_note(p, m, v, "megatron")) == same, (p, m, v)
                assert megatron_note(p, m, v, "pytorch") == ""


def test_megatron_note_on_the_command_line(capsys):
    main(["verify", "interleaved-1f1b", "-p", "4", "-m", "8", "--order", "megatron"])
    assert "ppverify: note: order=megatron gives the same schedule as order=pytorch" in capsys.readouterr().err
    main(["verify", "interleaved-1f1b", "-p", "4", "-m", "4", "--order", "megatron"])  # every forward first
    assert "note" not in capsys.readouterr().err
