"""A file that still names a family in its header but whose programs are no longer that family's
is not headed as the family (hunt K2c): ``verify`` of chimera p=2 m=4 exported to JSON, with two
ops of one device swapped (still valid), said "VALID: chimera p=2 m=4"."""

from __future__ import annotations

import json

from ppverify.cli import main


def _verify(capsys, path) -> tuple[str, dict]:
    assert main(["verify", str(path)]) == 0
    heading = capsys.readouterr().out.splitlines()[0]
    assert main(["verify", str(path), "--json"]) == 0
    return heading, json.loads(capsys.readouterr().out)


def test_an_edited_family_file_is_marked_edited(capsys, tmp_path):
    path = tmp_path / "chimera.json"
    assert main(["export", "chimera", "-p", "2", "-m", "4", "-o", str(path)]) == 0
    capsys.readouterr()
    heading, _ = _verify(capsys, path)
    assert heading == "VALID: chimera p=2 m=4"  # as exported: chimera's own programs
    data = json.loads(path.read_text())
    # device 0 ends "... 1F3 1B3 0B2"; run 0B2 before 1B3. Still valid, by hand: 0B2 (pipe 0,
    # stage 0) needs 1B2, which device 1 runs after 1B0, 0B1 and 1F2 (its needs: 1B1, 0F2 of
    # device 0, both earlier), so no wait on device 0's last two ops; 1B3 (pipe 1's last stage,
    # device 0) needs only 1F3, just before it; device 1's last op 0B3 waits for 1B3 as before
    program = data["programs"][0]
    assert program[-2:] == ["1B3", "0B2"]
    program[-2:] = ["0B2", "1B3"]
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(data))
    heading, out = _verify(capsys, edited)
    assert heading == "VALID: chimera p=2 m=4 (edited)"  # docs/show-and-files.md, the family row
    assert out["schedule"] == "chimera p=2 m=4 (edited)"


def test_simulate_and_show_head_the_edited_file_as_verify_does(capsys, tmp_path):
    # docs/show-and-files.md, the family row: `simulate` and `show` head it
    # "schedule      chimera p=2 m=4 (edited)", as `verify` does; the file as exported is unmarked
    path = tmp_path / "chimera.json"
    assert main(["export", "chimera", "-p", "2", "-m", "4", "-o", str(path)]) == 0
    data = json.loads(path.read_text())
    data["programs"][0][-2:] = ["0B2", "1B3"]  # the swap above, still valid
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(data))
    for cmd in ("simulate", "show"):
        for file, mark in ((path, ""), (edited, " (edited)")):
            capsys.readouterr()
            assert main([cmd, str(file)]) == 0
            lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("schedule ")]
            assert lines == [f"schedule      chimera p=2 m=4{mark}"], (cmd, file, lines)
