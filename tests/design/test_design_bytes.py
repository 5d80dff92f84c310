"""Design with presets: a budget is the same bytes on every placement, so the frontier compares
placements like for like (each placement's own largest stage differs: the last one holds the
logits whatever its share, which made one "activation" of V 12 % larger than one of linear)."""

from __future__ import annotations

import json

import pytest

from ppverify.cli import main

PRESETS = ["-p", "4", "-m", "8", "--system", "dgx-h100", "--model", "gpt3-1.3b"]
GiB = 2**30


def _simulated(family: str, capsys) -> dict:
    capsys.readouterr()
    assert main(["simulate", family, *PRESETS, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_byte_budget_is_the_same_bytes_on_every_placement(capsys) -> None:
    argv = ["design", *PRESETS, "--placements", "linear,v", "--budgets", "8GiB", "--json"]
    assert main([*argv, "--work-limit", "1", "--search-work", "0", "--bound-work", "0", "--no-progress"]) == 0
    d = json.loads(capsys.readouterr().out)
    unit = d["design"]["activation_bytes"]
    # the unit by hand: 1F1B's last device holds one microbatch of the last stage at a time
    one_f_one_b = _simulated("1f1b", capsys)["peak_activations"]
    assert unit == pytest.approx(one_f_one_b[-1], rel=1e-12)
    assert "3.06 GiB" in d["design"]["memory_unit"]
    # both placements searched at the same 8 GiB, and each point's schedule fits it in bytes
    assert {q["placement"] for q in d["points"]} == {"linear", "v"}
    for q in d["points"]:
        assert q["budget"] * unit == pytest.approx(8 * GiB, rel=1e-12)
        assert q["peak"] * unit <= 8 * GiB * (1 + 1e-9)
    # family peaks in the same unit: ZB-V's (placement v) and 1F1B's (linear) as simulate counts bytes
    fams = {f["family"]: f for f in d["families"]}
    assert fams["zbv"]["peak"] * unit == pytest.approx(max(_simulated("zbv", capsys)["peak_activations"]), rel=1e-9)
    assert fams["1f1b"]["peak"] * unit == pytest.approx(max(one_f_one_b), rel=1e-9)


def test_a_size_needs_presets_and_one_reading(capsys) -> None:
    base = ["design", "-p", "4", "-m", "8", "--costs", "F=1,I=1,W=1", "--no-progress"]
    assert main([*base, "--placements", "v", "--budgets", "4GiB"]) == 2
    assert "a size needs presets" in capsys.readouterr().err
    # 4 stage activations are 4 activations on linear and 2 on V: no one budget
    assert main([*base, "--placements", "linear,v", "--budgets", "4MF"]) == 2
    assert "4MF is a different number of activations on each placement (linear 4, v 2)" in capsys.readouterr().err
