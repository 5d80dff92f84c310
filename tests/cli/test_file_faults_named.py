"""``show`` and ``simulate`` of a schedule file the engines cannot run (an op missing, a deadlock)
fail in one line naming the file, as the README says bad input does ("one line naming the file,
the location and the rule broken", exit code 2); a family keeps its own wording.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# 1F1B p=2 m=2 as a family saves it, with rank 1's programs edited by hand
HEAD = {"format": "ppverify-schedule", "version": 1, "family": "1f1b", "params": {"p": 2, "m": 2}, "p": 2, "m": 2}
PLACE = {"placement": {"name": "linear", "maps": [[0, 1]]}, "pipe_of_mb": [0, 0]}
# rank 0: 0F0 0B0 ...: 0B0 needs 1B0, which rank 1 runs after 1F1, which needs 0F1, which rank 0
# runs after 0B0: a cycle of waits
DEADLOCK = [["0F0", "0B0", "0F1", "0B1"], ["1F0", "1F1", "1B1", "1B0"]]
# rank 0 never runs 0B0: the op is missing
MISSING = [["0F0", "0F1", "0B1"], ["1F0", "1F1", "1B1", "1B0"]]


def _write(folder: Path, name: str, programs: list[list[str]]) -> None:
    (folder / name).write_text(json.dumps({**HEAD, **PLACE, "programs": programs}))


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ppverify", *args], cwd=cwd, capture_output=True, text=True)


@pytest.mark.parametrize(
    "command,extra",
    [("show", ()), ("simulate", ()), ("plot", ("-o", "x.svg")), ("gap", ("--work-limit", "0.5"))],
)
def test_a_missing_op_names_the_file(tmp_path: Path, command: str, extra: tuple[str, ...]):
    _write(tmp_path, "g4.json", MISSING)
    out = _run(command, "g4.json", *extra, cwd=tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.splitlines() == [
        f"ppverify {command}: error: g4.json: programs: op 0B0 is missing (should run on device 0)"
    ]


@pytest.mark.parametrize("command", ["show", "simulate"])
def test_a_deadlock_names_the_file(tmp_path: Path, command: str):
    _write(tmp_path, "g3.json", DEADLOCK)
    out = _run(command, "g3.json", cwd=tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    lines = out.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"ppverify {command}: error: g3.json: programs: deadlock: ")
    assert "device 0 waits in 0B0 for 1B0" in lines[0]


def test_a_csv_is_named_by_its_path_too(tmp_path: Path):
    (tmp_path / "c1.csv").write_text("0F0,0F1,0B0,0B1\n1B0,1F0,1F1,1B1\n")
    out = _run("simulate", "c1.csv", cwd=tmp_path)
    # rank 1 runs 1B0 before 1F0, which it needs: it waits in 1B0 forever
    assert out.returncode == 2
    assert out.stderr.startswith("ppverify simulate: error: c1.csv: programs: deadlock: ")
    assert "device 1 waits in 1B0 for 1F0" in out.stderr
