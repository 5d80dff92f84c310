"""``optimize --json`` and ``gap --json`` give the memory cap as a number in ``memory_unit`` (null
for none), ``memory_cap`` and ``memory_cap_value`` alike: ``optimize`` gave the text ``"2"``, and
``gap`` with its default cap (the family's own peak) ``memory_cap_value`` null beside 2.0."""

from __future__ import annotations

import json

from ppverify.cli import main


def _json(capsys, argv: list[str]) -> dict:
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_optimize_gives_its_cap_as_a_number(capsys):
    base = ["optimize", "--placement", "linear", "-p", "2", "-m", "3", "--costs", "F=1,I=1,W=1", "--work-limit", "1"]
    out = _json(capsys, [*base, "--memory-cap", "2"])
    assert out["memory_cap"] == out["memory_cap_value"] == 2 and out["memory_unit"] == "activations"
    out = _json(capsys, [*base, "--memory-cap", "none"])
    assert out["memory_cap"] is None and out["memory_cap_value"] is None


def test_gap_gives_its_default_cap_as_a_number(capsys):
    # the default cap is the family's own peak: 1F1B holds p - d activations on device d, 2 on device 0
    out = _json(capsys, ["gap", "1f1b", "-p", "2", "-m", "4", "--costs", "F=1,B=2", "--work-limit", "1"])
    assert out["memory_cap"] == out["memory_cap_value"] == 2
    out = _json(
        capsys, ["gap", "1f1b", "-p", "2", "-m", "4", "--costs", "F=1,B=2", "--work-limit", "1", "--memory-cap", "3"]
    )
    assert out["memory_cap"] == out["memory_cap_value"] == 3
