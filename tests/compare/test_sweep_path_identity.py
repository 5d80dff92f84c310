"""A sweep's rows are keyed by what its points read, not by how the config's path was typed: the
same config run from two working folders, or a findings map whose store moved, resumes
(docs/files.md: rows keyed by "the content (SHA-256) of every file it reads"); and the map's
Markdown does not change from run to run."""

from __future__ import annotations

import re
import shutil

import yaml

from ppverify.cli import main
from ppverify.findings_map import MapGrid
from ppverify.findings_map.grid import kept_rows, run_map
from ppverify.findings_map.text import map_markdown
from ppverify.systems.presets import shipped_presets


def _summary(text: str) -> tuple[int, int]:
    # "mv: 2 rows (0 resumed from STORE, 2 computed with local in 0.07 s); ..."
    found = re.search(r"\((\d+) resumed from .*?, (\d+) computed", text)
    assert found, text
    return int(found.group(1)), int(found.group(2))


def test_the_same_config_from_two_working_folders_resumes(tmp_path, monkeypatch, capsys):
    grid = tmp_path / "grid"
    grid.mkdir()
    (grid / "sys.yaml").write_bytes(shipped_presets().joinpath("systems", "dgx-h100.yaml").read_bytes())
    config = {"name": "mv", "schedules": ["gpipe", "1f1b"], "p": [2], "m": [4], "systems": ["sys.yaml"],
              "models": ["gpt3-1.3b"], "levels": ["async"]}  # fmt: skip
    (grid / "g.yaml").write_text(yaml.safe_dump(config))
    argv = ["sweep", "--workers", "1", "--no-progress"]
    monkeypatch.chdir(grid)  # the config's folder: the file is "sys.yaml" there
    assert main([*argv, "g.yaml"]) == 0
    captured = capsys.readouterr()
    assert _summary(captured.err + captured.out) == (0, 2)  # 2 schedules x 1 point
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # the same config by a relative path, then an absolute one
    for given in ("../grid/g.yaml", str(grid / "g.yaml")):
        assert main([*argv, given, "--out", str(tmp_path / "t.csv")]) == 0
        captured = capsys.readouterr()
        assert _summary(captured.err + captured.out) == (2, 0)  # nothing computed again
    lines = (grid / "g.results.jsonl").read_text().splitlines()
    assert len(lines) == 2  # no row dropped, none added
    # the table names the file as this run reached it: one configuration, one label
    table = (tmp_path / "t.csv").read_text().splitlines()
    assert len({row.split(",")[0] for row in table[1:]}) == 1 and str(grid / "sys.yaml") in table[1]


def test_a_moved_findings_map_store_keeps_its_rows(tmp_path):
    g = MapGrid(ps=(4,), m_factors=(1,), bandwidths_GBps=(25, 900), latencies_us=(1,), models=("gpt3-1.3b",))
    first = tmp_path / "a"
    first.mkdir()
    res = run_map(g, first / "fm.jsonl", workers=1)
    rows = len(res.results)
    assert rows == kept_rows(g, first / "fm.jsonl") > 0
    moved = tmp_path / "b"
    shutil.move(str(first), str(moved))
    assert kept_rows(g, moved / "fm.jsonl") == rows  # every row found where the store now is
    again = run_map(g, moved / "fm.jsonl", workers=1)
    assert len((moved / "fm.jsonl").read_text().splitlines()) == rows  # none computed again
    # the rows name the presets where they now are, so each finding is judged at every point
    assert set(again.results["system"]) <= {str(p.resolve()) for p in (moved / "fm.systems").iterdir()}
    assert [f.total for f in again.findings] == [f.total for f in res.findings]
    # and the Markdown is the same however long a run took
    assert map_markdown(res, seconds=3.0) == map_markdown(again, seconds=0.2)
    assert " s." not in map_markdown(res, seconds=3.0).splitlines()[0]


def test_the_map_markdown_holds_no_wall_time(tmp_path, capsys):
    store, md = tmp_path / "fm.jsonl", tmp_path / "fm.md"
    argv = ["compare", "--findings", "--map", "--quick", "--no-progress", "--store", str(store), "--markdown", str(md)]
    assert main(argv) == 0
    first = md.read_text()
    assert re.search(r"configurations\)\.$", first.splitlines()[0])  # no "in N s."
    assert main(argv) == 0  # resumed: the same map, written again
    assert md.read_text() == first
