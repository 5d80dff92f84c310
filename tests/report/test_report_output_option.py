"""``ppverify report`` names its output as it was typed (``-o``, or ``--output``) in every refusal,
as ``export`` and the written page do (it said ``parameter output=...``), whether it runs a comparison or reads a results or design
file; ``compare --report`` names ``--report``."""

from __future__ import annotations

import json

import pytest

from ppverify.cli import main

RUN = ["--schedules", "1f1b", "-p", "2", "-m", "2", "--no-progress"]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["report", *RUN, "-o", "study.pdf"], "parameter -o=study.pdf: expected a file ending in .html (or .htm)"),
        (["report", *RUN, "--output", "study.pdf"], "parameter --output=study.pdf: expected a file ending in .html"),
        (["report", *RUN, "-o", "nodir/s.html"], "parameter -o=nodir/s.html: folder nodir does not exist"),
        (["report", "--from", "d.json", "-o", "study.pdf"], "parameter -o=study.pdf: expected a file ending in .html"),
        (["compare", *RUN, "--report", "study.pdf"], "parameter --report=study.pdf: expected a file ending in .html"),
    ],
)
def test_the_output_is_named_as_the_command_spells_it(tmp_path, monkeypatch, capsys, argv, says):
    monkeypatch.chdir(tmp_path)
    # a design result (what `design --save-dir` writes) is checked as a results file is: before it is read
    (tmp_path / "d.json").write_text(json.dumps({"design": {}, "frontier": []}))
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.json"]  # nothing written
