"""A folder given where a schedule file is expected is named a folder, not "file not found"."""

from __future__ import annotations

import pytest

from ppverify.cli import main


@pytest.mark.parametrize("command", ["show", "verify", "simulate"])
def test_a_folder_is_said_to_be_a_folder(command, tmp_path, capsys):
    # tmp_path exists and is a folder: "file not found" would send the user looking for a typo
    assert main([command, str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path}: a folder, not a schedule file" in err and "not found" not in err


def test_a_missing_path_is_still_not_found(tmp_path, capsys):
    assert main(["show", str(tmp_path / "nothing")]) == 2
    assert "file not found" in capsys.readouterr().err
