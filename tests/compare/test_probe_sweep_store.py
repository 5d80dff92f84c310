"""A file that is not a sweep store, given as ``--store`` by mistake, is refused and left as it
was: the torn-line repair used to take a file with no final newline (a one-line config, notes) for
one torn row and rewrite it empty before appending rows to it."""

from __future__ import annotations

import json

import pytest
import yaml

from ppverify.cli import main
from ppverify.core.errors import ScheduleFileError
from ppverify.sweep.store import read_store

CONFIG = {"schedules": ["gpipe"], "p": 2, "costs": {"F": 1}, "levels": ["slot"]}


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("{schedules: [gpipe], p: 2, costs: {F: 1}, levels: [slot]}", "not JSON"),  # YAML flow, no newline
        (json.dumps(CONFIG), "a row without its point"),  # whole JSON, no newline
        ("my notes", "not JSON"),
        ("my notes\n", "not JSON"),
    ],
)
def test_not_a_store_is_refused_and_kept(tmp_path, capsys, text, why):
    cfg = tmp_path / "s.yaml"
    cfg.write_text(yaml.safe_dump(CONFIG))
    other = tmp_path / "notes.txt"
    other.write_text(text)
    for extra in (["--dry-run"], ["--no-progress", "--workers", "1"]):
        assert main(["sweep", str(cfg), "--store", str(other), *extra]) == 2
        assert f"{other}:1: not a sweep store (line 1 is {why}" in capsys.readouterr().err
    assert other.read_text() == text  # untouched


def test_config_as_its_own_store_is_kept(tmp_path):
    cfg = tmp_path / "one.yaml"
    text = "{schedules: [gpipe], p: 2, costs: {F: 1}, levels: [slot]}"  # one line, no final newline
    cfg.write_text(text)
    assert main(["sweep", str(cfg), "--store", str(cfg), "--no-progress", "--workers", "1"]) == 2
    assert cfg.read_text() == text


def test_torn_rows_still_repaired(tmp_path):
    f = tmp_path / "s.jsonl"
    row = json.dumps({"point": "a", "sweep": "s"})
    for tail in ("{", '{"poi', row):  # cut after 1 byte, mid-row, or just before its newline
        f.write_text(row.replace('"a"', '"z"') + "\n" + tail)
        assert [r["point"] for r in read_store(f)] == ["z"]
        assert f.read_text() == row.replace('"a"', '"z"') + "\n"  # rewritten without the cut row


def test_damaged_later_line_still_named(tmp_path):
    f = tmp_path / "s.jsonl"
    f.write_text('{"point": "a"}\n5\n')
    with pytest.raises(ScheduleFileError, match=r"s.jsonl:2: damaged store line \(a JSON number"):
        read_store(f)


def test_out_naming_the_store_refused(tmp_path, capsys):
    cfg = tmp_path / "s.yaml"
    cfg.write_text(yaml.safe_dump(CONFIG))
    same = tmp_path / "r.csv"
    # the table written at the end would replace the store, and the next run could not resume
    assert main(["sweep", str(cfg), "--store", str(same), "--out", str(same), "--dry-run"]) == 2
    assert "names the --store file" in capsys.readouterr().err
    assert not same.exists()
