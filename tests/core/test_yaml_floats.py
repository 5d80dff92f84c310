"""YAML 1.2 floats in presets and sweep configs: ``1e-3`` is the number 0.001 (YAML 1.2's core
schema and JSON), not the string YAML 1.1 makes of it (docs/files.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ppverify.cli import main
from ppverify.core.text_formats import load_yaml


@pytest.mark.parametrize(
    "text,value",
    [
        ("1e-3", 0.001),  # 1 x 10^-3
        ("5e-1", 0.5),
        ("1e15", 1e15),
        ("1.0e15", 1e15),  # YAML 1.1 needs a sign in the exponent
        ("-2E+2", -200.0),
        (".5e1", 5.0),
        ("0.5", 0.5),  # YAML 1.1's own forms unchanged
        ("3", 3),
        ("'1e-3'", "1e-3"),  # quoted: a string
        ("1e", "1e"),
    ],
)
def test_exponent_forms_are_numbers(text, value):
    got = load_yaml(f"x: {text}", "c.yaml")["x"]
    assert got == value and type(got) is type(value)


def test_a_sweep_config_with_exponent_costs_runs(tmp_path, capsys):
    cfg = tmp_path / "grid.yaml"
    cfg.write_text("schedules: [gpipe, 1f1b]\np: 2\nm: 4\ncosts: {F: 1e-3, B: 2e-3}\nlevels: [formula]\n")
    store = tmp_path / "grid.results.jsonl"
    assert main(["sweep", str(cfg), "--store", str(store), "--no-progress"]) == 0
    # docs/limits.md: numbers in sweep configs are finite, at most 1e15: 1e15 itself is accepted
    cfg.write_text("schedules: [gpipe]\np: 2\nm: 4\ncosts: {F: 1e15}\nlevels: [formula]\n")
    assert main(["sweep", str(cfg), "--store", str(tmp_path / "b.jsonl"), "--no-progress"]) == 0


def test_a_preset_latency_with_an_exponent_is_the_same_as_its_decimal(tmp_path, capsys):
    # dgx-h100 with its intra-node latency_us (5) set to half a microsecond, written 5e-1 and 0.5
    src = Path("models/systems/dgx-h100.yaml").read_text()
    assert src.count("latency_us: 5\n") == 1
    outs = []
    for text in ("5e-1", "0.5"):
        preset = tmp_path / "sys.yaml"
        preset.write_text(src.replace("latency_us: 5\n", f"latency_us: {text}\n"))
        capsys.readouterr()
        code = main(["simulate", "1f1b", "-p", "4", "-m", "8", "--system", str(preset), "--model", "gpt3-1.3b"])
        outs.append((code, capsys.readouterr().out))
    assert outs[0][0] == 0
    assert outs[0] == outs[1]
