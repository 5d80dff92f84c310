"""A family's word options (``--units``, ``--order``) are read in any case and echoed in lower
case (docs/cli-notes.md), as family names are; the notes name the normalised word."""

from __future__ import annotations

import pytest

from ppverify.cli import main
from ppverify.core.errors import ParameterError
from ppverify.schedules import build


def test_units_and_order_in_any_case_build_the_lower_case_schedule():
    assert build("chimera", p=4, m=8, units="CONCAT").programs == build("chimera", p=4, m=8, units="concat").programs
    assert build("chimera", p=4, m=8, units=" Concat ").describe() == "chimera p=4 m=8 units=concat"
    # Megatron's order differs from PyTorch's at m = p = 4, v = 2 (every forward first)
    mega = build("interleaved-1f1b", p=4, m=4, v=2, order="Megatron")
    assert mega.programs == build("interleaved-1f1b", p=4, m=4, v=2, order="megatron").programs
    assert mega.programs != build("interleaved-1f1b", p=4, m=4, v=2).programs
    assert mega.describe() == "interleaved-1f1b p=4 m=4 v=2 order=megatron"
    with pytest.raises(ParameterError, match="warm-up rule must be one of pytorch, megatron"):
        build("interleaved-1f1b", p=4, m=4, v=2, order="nvidia")


def test_cli_echoes_the_normalised_word(capsys):
    assert main(["show", "chimera", "-p", "4", "-m", "4", "--units", "CONCAT", "--no-table"]) == 0
    out, err = capsys.readouterr()
    assert "units=concat has no effect at m = p = 4" in err and "CONCAT" not in err
    assert "chimera p=4 m=4 units=concat" in out
    assert (
        main(["show", "interleaved-1f1b", "-p", "4", "-m", "8", "--v", "2", "--order", "Megatron", "--no-table"]) == 0
    )
    out, err = capsys.readouterr()
    assert "order=megatron gives the same schedule as order=pytorch at p=4, m=8, v=2" in err
    assert "order=megatron" in out


def test_the_order_note_says_m_equals_p_of_at_least_two(capsys):
    # at p = m = 1 the two orders are one schedule (one device, one microbatch): the note must not
    # claim they differ at m = p
    assert (
        main(["show", "interleaved-1f1b", "-p", "1", "-m", "1", "--v", "2", "--order", "megatron", "--no-table"]) == 0
    )
    err = capsys.readouterr().err
    assert "the two differ only at m = p >= 2 with v > 1" in err
