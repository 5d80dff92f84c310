"""A float's integer part is not an integer of too many digits: ``optimize --save`` with the 175B
presets wrote ``weight_bytes`` 1401975668736.0 (13 digits before the point) and ``show`` refused
its own file. Integers keep the 12-digit rule; floats the 1e15 range check (docs/files.md)."""

from __future__ import annotations

import json

import pytest

from ppverify.cli import main
from ppverify.core.limits import LimitError, check_json_text


@pytest.mark.parametrize("text", ["1401975668736.0", "1401975668736e0", "1401975668736E-3", "-2793668149248.5"])
def test_float_with_long_integer_part_passes(text):
    check_json_text('{"weight_bytes": [%s]}' % text, "w.json")


@pytest.mark.parametrize("text", ["1401975668736", "-1401975668736"])
def test_long_integer_still_refused(text):
    # 13 digits, one more than the 12 allowed for an integer
    with pytest.raises(LimitError, match="a number of 13 digits; at most 12 are allowed"):
        check_json_text('{"m": %s}' % text, "w.json")


def test_huge_float_refused_by_range(tmp_path, capsys):
    # 2e16 > 1e15: refused by the range check, not by a digit count
    src = tmp_path / "s.json"
    assert main(["export", "1f1b", "-p", "2", "-m", "2", "--format", "json", "-o", str(src)]) == 0
    capsys.readouterr()
    saved = tmp_path / "w.json"
    assert main(["show", str(src), "--save", str(saved), "--no-table"]) == 0
    data = json.loads(saved.read_text())
    data["costs"]["weight_bytes"] = [20000000000000000.0, 0.0]
    saved.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["show", str(saved), "--no-table"]) != 0
    err = capsys.readouterr().err
    assert "weight_bytes" in err and "digits" not in err


@pytest.mark.parametrize("p", [1, 2, 4])
def test_175b_saves_read_back(tmp_path, capsys, p):
    # GPT-3 175B: about 175e9 parameters x 16 bytes (weights, grads, Adam) = 2.8e12 bytes on one
    # device (13 digits), half of that at p=2: both exceed 12 digits and stay below 1e15
    opt = tmp_path / "opt.json"
    argv = ["optimize", "--system", "dgx-h100", "--model", "gpt3-175b", "-p", str(p), "-m", "2"]
    assert main([*argv, "--work-limit", "1", "--save", str(opt)]) == 0
    weights = json.loads(opt.read_text())["costs"]["weight_bytes"]
    if p <= 2:
        assert max(weights) >= 1e12
    again = tmp_path / "again.json"
    assert main(["show", str(opt), "--save", str(again), "--no-table"]) == 0
    capsys.readouterr()
    assert main(["show", str(again), "--no-table"]) == 0
    assert json.loads(again.read_text())["costs"]["weight_bytes"] == weights
