"""A --costs error quotes the costs as typed, not a dict of every kind."""

from __future__ import annotations

from ppverify.cli import main


def test_a_costs_error_quotes_what_was_typed(capsys):
    # I without W (nor B) cannot be completed: the error names F=1,I=1 as given
    assert main(["simulate", "1f1b", "-p", "2", "--costs", "F=1,I=1"]) == 2
    err = capsys.readouterr().err
    assert "parameter --costs=F=1,I=1: give both I and W, or B" in err and "None" not in err


def test_b_other_than_i_plus_w_is_quoted_as_typed(capsys):
    # 1 + 1 != 3
    assert main(["simulate", "1f1b", "-p", "2", "--costs", "F=1,B=3,I=1,W=1"]) == 2
    assert "parameter --costs=F=1,B=3,I=1,W=1: B must equal I + W" in capsys.readouterr().err
