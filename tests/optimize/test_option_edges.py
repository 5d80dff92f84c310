"""Options ``optimize`` would have read wrongly or not at all: ``--v`` and ``--waves`` beside a
``--placement`` that ignores them (``--placement v --v 3`` ran the V's two stages per device), ``--v
0`` taking the default, and a ``--memory-model`` setting given twice (the last one won)."""

from __future__ import annotations

import json

import pytest

from ppverify.cli import main
from ppverify.core.errors import ParameterError
from ppverify.optimize.memory import parse_memory_model


@pytest.mark.parametrize(
    "extra, says",
    [
        (["--placement", "v", "--v", "3"], "parameter --v=3: --v shapes --placement loop"),
        (["--v", "2"], "--placement linear does not read it"),
        (["--placement", "loop", "--waves", "2"], "parameter --waves=2: --waves shapes --placement wave"),
        (["--placement", "loop", "--v", "0"], "parameter --v=0: must be an integer >= 1"),
        (["--placement", "wave", "--waves", "0"], "parameter --waves=0: must be an integer >= 1"),
    ],
)
def test_placement_options_it_would_ignore_are_refused(capsys, extra, says):
    assert main(["optimize", "-p", "2", "-m", "2", "--work-limit", "1", "--no-chart", *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err, err


def test_the_placement_that_reads_them_still_does(capsys):
    # loop with 3 chunks on 2 devices: 6 stages; wave with 2 waves: 2 * 2 * 2 = 8 stages
    for extra, stages in ((["--placement", "loop", "--v", "3"], 6), (["--placement", "wave", "--waves", "2"], 8)):
        assert main(["optimize", "-p", "2", "-m", "2", "--work-limit", "1", "--json", *extra]) == 0
        assert json.loads(capsys.readouterr().out)["stages"] == stages


def test_a_memory_model_setting_given_twice_is_refused():
    with pytest.raises(ParameterError, match="h is given twice"):
        parse_memory_model("zero-bubble:h=1,h=2")
    # once each still reads: F allocates 34h + 5as = 34 + 5*1*1 = 39, I frees 2h + 5as = 7
    zb = parse_memory_model("zero-bubble:h=1,a=1,s=1")
    assert (zb.alloc_per_row, zb.freed_by_I_per_row) == (39, 7)


@pytest.mark.parametrize("extra", [["--units", "concat"], ["--offset", "2"], ["--down", "1"], ["--order", "megatron"]])
def test_family_parameters_without_a_family_are_refused(capsys, extra):
    # no family: the linear placement's ops, and nothing reads --units/--offset/--down/--order
    # (they were accepted and ignored)
    assert main(["optimize", "-p", "2", "-m", "2", "--work-limit", "0.5", "--no-chart", *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"ppverify optimize: error: parameter {extra[0]}={extra[1]}: --{extra[0][2:]} is a family")
