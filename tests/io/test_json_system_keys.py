"""JSON validation names the key a rule is about: a bad ``comm.system.topology`` was reported as
``comm.system: expected switch or mesh``; ``placement.name`` is optional (docs/show-and-files.md)."""

from __future__ import annotations

import json

import pytest

from ppverify.cli import main
from ppverify.io import load_schedule


@pytest.fixture()
def saved(tmp_path, capsys):
    # a schedule saved with a system preset, so that the file holds comm.system
    path = tmp_path / "s.json"
    argv = ["optimize", "--system", "dgx-h100", "--model", "gpt3-175b", "-p", "2", "-m", "2", "--work-limit", "1"]
    assert main([*argv, "--save", str(path)]) == 0
    capsys.readouterr()
    return path


def _error(capsys, path) -> str:
    capsys.readouterr()
    assert main(["show", str(path), "--no-table"]) == 2
    return capsys.readouterr().err.strip()


def test_bad_topology_names_its_key(saved, capsys):
    data = json.loads(saved.read_text())
    data["comm"]["system"]["topology"] = "ring"
    saved.write_text(json.dumps(data))
    assert _error(capsys, saved).endswith("s.json: comm.system.topology: expected switch or mesh, got 'ring'")


def test_bad_ranks_per_node_names_its_key(saved, capsys):
    data = json.loads(saved.read_text())
    data["comm"]["system"]["ranks_per_node"] = 99  # a DGX H100 node has 8 GPUs
    saved.write_text(json.dumps(data))
    assert "comm.system.ranks_per_node: must be in 1..8" in _error(capsys, saved)


def test_placement_name_is_optional(tmp_path, capsys):
    path = tmp_path / "n.json"
    assert main(["export", "1f1b", "-p", "2", "-m", "2", "--format", "json", "-o", str(path)]) == 0
    data = json.loads(path.read_text())
    del data["placement"]["name"]
    path.write_text(json.dumps(data))
    sched = load_schedule(path)
    # documented default: a placement without a name reads as "custom", its maps as given
    assert sched.placement.name == "custom" and [list(mp) for mp in sched.placement.maps] == [[0, 1]]
