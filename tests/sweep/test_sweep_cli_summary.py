"""``sweep``'s command line: the JSON summary carries the status counts its text line prints,
and ``--dry-run`` (which only reads the store) works beside a store in a read-only folder."""

from __future__ import annotations

import json

import yaml

from ppverify.cli import main

GRID = {
    "name": "tiny",
    "schedules": ["gpipe", "1f1b"],
    "p": [2],
    "m": [4],
    "costs": {"F": 1, "B": 2},
    "levels": ["slot", "async"],
}


def _config(folder):
    path = folder / "tiny.yaml"
    path.write_text(yaml.safe_dump(GRID))
    return path


def test_json_summary_has_the_status_counts(tmp_path, capsys):
    config = _config(tmp_path)
    assert main(["sweep", str(config), "--json", "--no-progress"]) == 0
    summary = json.loads(capsys.readouterr().out)
    # 2 schedules x 1 configuration x 2 levels = 4 rows, each an ok engine run
    assert summary["rows"] == 4 and sum(summary["status"].values()) == 4
    assert set(summary["status"]) == {"ok"}


def test_dry_run_reads_a_store_in_a_folder_that_takes_no_files(tmp_path, capsys, monkeypatch):
    # the folder's write check fails as a read-only folder's does (chmod does not stop root, who
    # runs CI here): --dry-run only reads the store, so it must not ask; a real run must refuse
    from ppverify.core import files
    from ppverify.core.errors import ParameterError

    config = _config(tmp_path)
    assert main(["sweep", str(config), "--no-progress"]) == 0
    capsys.readouterr()

    def read_only(folder, flag, text):
        raise ParameterError(flag, text, f"cannot write in its folder {folder}: Read-only file system")

    monkeypatch.setattr(files, "check_folder_takes_files", read_only)
    assert main(["sweep", str(config), "--dry-run"]) == 0
    assert "4 already in" in capsys.readouterr().out
    assert main(["sweep", str(config), "--no-progress"]) == 2
    assert "Read-only file system" in capsys.readouterr().err


def test_dry_run_still_refuses_a_missing_folder(tmp_path, capsys):
    config = _config(tmp_path)
    assert main(["sweep", str(config), "--dry-run", "--store", str(tmp_path / "nope" / "s.jsonl")]) == 2
    assert "folder" in capsys.readouterr().err
