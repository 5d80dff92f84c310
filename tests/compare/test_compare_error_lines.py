"""docs/comparison.md: "each reason a level gave `error` is one line there" under the table, with
``--no-verify`` too. A schedule file whose every level failed once showed only its formula's
"unavailable" under the table: no line said why slot..optimum gave ``error``."""

from __future__ import annotations

import json
from pathlib import Path

from ppverify.cli import main

# p = 2, m = 2: device 0 runs 0B1 before 0F1, the forward that backward needs: a deadlock at every
# timed level (slot, async, contention, optimum), for one reason
DEADLOCK = {
    "format": "ppverify-schedule",
    "version": 1,
    "family": "file",
    "params": {"p": 2, "m": 2},
    "p": 2,
    "m": 2,
    "placement": {"name": "linear", "maps": [[0, 1]]},
    "pipe_of_mb": [0, 0],
    "programs": [["0F0", "0B1", "0F1", "0B0"], ["1F0", "1B0", "1F1", "1B1"]],
}


def test_each_error_reason_is_a_line_without_the_verifier(tmp_path: Path, capsys) -> None:
    path = tmp_path / "deadlock.json"
    path.write_text(json.dumps(DEADLOCK))
    argv = ["compare", "--schedules", f"1f1b,{path}", "-p", "2", "-m", "2", "--costs", "F=1,B=2"]
    main([*argv, "--no-verify", "--no-progress"])
    out = capsys.readouterr().out
    lines = [x.strip() for x in out.splitlines() if " error for deadlock: " in x]
    # one reason, four levels: one line naming them all, saying device 0 waits in 0B1 for 0F1
    assert len(lines) == 1
    assert lines[0].startswith("slot, async, contention, optimum error for deadlock: deadlock: ")
    assert "device 0 waits in 0B1 for 0F1" in lines[0]
