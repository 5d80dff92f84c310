"""Two words of --memory-cap's refusals: a value typed with a space is still named under the
option typed, and an unknown unit lists every unit the cap reads, MF included."""

from __future__ import annotations

import pytest

from ppverify.cli import main


def test_a_value_typed_with_a_space_keeps_its_option(capsys: pytest.CaptureFixture[str]) -> None:
    # 0.5 of 1F1B's activation at p = 2 is half a stage: refused, and named as typed (--memory-cap)
    assert main(["verify", "1f1b", "-p", "2", "-m", "2", "--memory-cap", "0.5 "]) == 2
    err = capsys.readouterr().err
    assert "parameter --memory-cap=0.5" in err and "parameter memory-cap=" not in err


def test_an_unknown_unit_lists_mf(capsys: pytest.CaptureFixture[str]) -> None:
    # 8MF is a cap the option reads (stage activations): the list of units it offers names it
    assert main(["verify", "1f1b", "-p", "2", "-m", "2", "--memory-cap", "3XB"]) == 2
    err = capsys.readouterr().err
    assert "unknown unit 'XB'" in err and "MF (stage activations)" in err


def test_gap_and_optimize_json_name_their_memory_unit(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    # abstract costs count activations; with presets the cap is bytes: 2 activations of GPT-3
    # 1.3B's device share at p = 2 is more than a GiB, so a reader needs the unit to read 1.2e10
    assert main(["gap", "1f1b", "-p", "2", "-m", "2", "--memory-cap", "2", "--work-limit", "1", "--json"]) == 0
    gap = json.loads(capsys.readouterr().out)
    assert gap["memory_unit"] == "activations" and gap["memory_cap"] == 2
    preset = ["--system", "dgx-h100", "--model", "gpt3-1.3b", "--memory-cap", "2", "--work-limit", "1", "--json"]
    assert main(["optimize", "1f1b", "-p", "2", "-m", "2", *preset]) == 0
    opt = json.loads(capsys.readouterr().out)
    assert opt["memory_unit"] == "bytes" and opt["memory_cap_value"] > 2**30
