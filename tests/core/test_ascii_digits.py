"""Action digits are ASCII [0-9]: ``"\\u0660F0"`` (an Arabic-Indic zero) read as 0F0, since a str
pattern's ``\\d`` takes any script's decimal digits and ``int()`` converts them."""

from __future__ import annotations

import json

import pytest

from ppverify.cli import main
from ppverify.core.ops import ActionSyntaxError, Op, parse_action

# U+0660 Arabic-Indic zero, U+0967 Devanagari one, U+FF11 fullwidth one, U+1D7CE mathematical bold zero
_FOREIGN = [
    "\u0660F0",
    "0F\u0967",
    "\uff11B0",
    "(0F\U0001d7ce;1B0)OVERLAP_F_B",
    "0F1&1B\u0660",
    "\u0660SEND_F0",
    "\u0660UNSHARD",
]


@pytest.mark.parametrize("text", _FOREIGN)
def test_foreign_digits_refused(text):
    with pytest.raises(ActionSyntaxError, match="is not an action"):
        parse_action(text)


def test_ascii_digits_still_read():
    # by hand: stage 10, kind W, microbatch 7
    assert parse_action("10W7") == Op("W", 10, 7)


def _refused(capsys, path) -> str:
    capsys.readouterr()
    assert main(["show", str(path), "--no-table"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    return err


def test_json_csv_and_table_refuse_them(tmp_path, capsys):
    # the same 1F1B p=2 m=2 in three forms, its first action 0F0 written with an Arabic-Indic zero
    src = tmp_path / "s.json"
    assert main(["export", "1f1b", "-p", "2", "-m", "2", "--format", "json", "-o", str(src)]) == 0
    data = json.loads(src.read_text())
    data["programs"][0][0] = "\u0660F0"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    assert "programs[0][0]" in _refused(capsys, bad)

    csv = tmp_path / "bad.csv"
    csv.write_text("\u0660F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n", encoding="utf-8")
    assert "row 1" in _refused(capsys, csv)

    table = tmp_path / "bad.txt"
    table.write_text(
        "tick    0   1   2   3   4   5   6   7   8\n"
        "dev 0 \u0660F0 0F1   .   . 0B0 0B0   . 0B1 0B1\n"
        "dev 1   . 1F0 1B0 1B0 1F1 1B1 1B1   .   .\n",
        encoding="utf-8",
    )
    assert "line 2" in _refused(capsys, table)
