"""Sweep results are never stale (issue 22, item 3): a point's identity covers the content of every
file it reads (its system and model presets, shipped or given as paths, and its schedule file), so
editing one of them between a sweep and its resume computes the rows that read it again, and only
those; the rows they replace leave the store.

The grid: two schedules (a family and a schedule file) x two systems (a preset file and a shipped
preset) x two models (a preset file and a shipped preset) x two levels, 16 rows. Which rows read
which file is enumerated here from the grid, not asked of ppverify.
"""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import pytest

from ppverify.cli import main
from ppverify.schedules import build
from ppverify.systems.presets import shipped_presets

LEVELS = ("formula", "slot")
ENTRIES = ("gpipe", "mine")  # mine: the schedule file s.json
SYSTEMS = ("sys.yaml", "dgx-h100")
MODELS = ("llm.yaml", "gpt3-1.3b")
#: the file each edit touches, and the grid value that reads it
EDITS = {"system": ("sys.yaml", "sys.yaml"), "model": ("llm.yaml", "llm.yaml"), "schedule": ("s.json", "mine")}


def _shipped(kind: str, name: str) -> str:
    return shipped_presets().joinpath(kind, f"{name}.yaml").read_text(encoding="utf-8")


def _setup(folder: Path) -> Path:
    from ppverify.io.json_format import dumps

    (folder / "sys.yaml").write_text(_shipped("systems", "dgx-h100"))
    (folder / "llm.yaml").write_text(_shipped("llms", "gpt3-1.3b"))
    (folder / "s.json").write_text(dumps(build("1f1b", p=2, m=2)))
    cfg = folder / "cfg.yaml"
    cfg.write_text(
        "schedules: [gpipe, {file: s.json, label: mine}]\np: 2\nm: 2\n"
        "systems: [sys.yaml, dgx-h100]\nmodels: [llm.yaml, gpt3-1.3b]\n"  # relative to the working folder
        f"levels: [{', '.join(LEVELS)}]\n"
    )
    return Path("cfg.yaml")  # run from the folder: the same names in every copy of it


def _sweep(capsys, cfg: Path, store: Path, *extra: str) -> dict:
    code = main(["sweep", str(cfg), "--store", str(store), "--json", "--no-progress", "--workers", "1", *extra])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def _rows(store: Path) -> list[dict]:
    return [json.loads(line) for line in store.read_text().splitlines()]


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """A finished sweep: its folder (config, files) and its store, kept as the originals."""
    folder = tmp_path_factory.mktemp("swept")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        cfg = _setup(folder)
        assert main(["sweep", str(cfg), "--store", "store.jsonl", "--no-progress", "--workers", "1"]) == 0
    return folder


def _copy(swept: Path, tmp_path: Path, monkeypatch) -> Path:
    """The same files (same content) and the finished sweep's store, in a folder of the test's own."""
    monkeypatch.chdir(tmp_path)
    cfg = _setup(tmp_path)
    shutil.copy(swept / "store.jsonl", tmp_path / "store.jsonl")
    return cfg


@pytest.mark.parametrize("edited", [c for n in range(4) for c in itertools.combinations(EDITS, n)], ids=str)
def test_editing_files_reruns_exactly_the_rows_that_read_them(swept, tmp_path, capsys, monkeypatch, edited):
    cfg = _copy(swept, tmp_path, monkeypatch)
    for role in edited:  # an edit that changes the bytes only (a comment or a blank): identity is content
        path = tmp_path / EDITS[role][0]
        path.write_text(path.read_text() + ("\n" if role == "schedule" else "# edited\n"))
    readers = {EDITS[role][1] for role in edited}
    expected = sum(
        len(LEVELS) for e in ENTRIES for s in SYSTEMS for m in MODELS if readers & {e, s, m}
    )  # rows whose entry, system or model reads an edited file
    summary = _sweep(capsys, cfg, tmp_path / "store.jsonl", "--dry-run")
    assert summary["points"] == 16
    assert (summary["to_run"], summary["already_done"]) == (expected, 16 - expected)


def test_a_preset_edited_between_a_sweep_and_its_resume_is_recomputed(swept, tmp_path, capsys, monkeypatch):
    cfg = _copy(swept, tmp_path, monkeypatch)
    store = tmp_path / "store.jsonl"
    before = {(r["schedule"], r["system"], r["model"], r["level"]): r for r in _rows(store)}
    llm = tmp_path / "llm.yaml"
    llm.write_text(llm.read_text().replace("layers: 24", "layers: 96"))  # the edit
    summary = _sweep(capsys, cfg, store)
    assert (summary["already_done"], summary["rows"]) == (8, 16)  # the rows of gpt3-1.3b resume
    fresh = _sweep(capsys, cfg, tmp_path / "fresh.jsonl")  # nothing stored: every row computed anew
    assert fresh["already_done"] == 0

    def table(path):
        return {(r["schedule"], r["system"], r["model"], r["level"]): r for r in _rows(path)}

    resumed, new = table(store), table(tmp_path / "fresh.jsonl")
    for key, row in new.items():
        assert resumed[key]["makespan"] == row["makespan"], key  # resumed = computed from scratch
    edited = [k for k in new if k[2].endswith("llm.yaml") and new[k]["makespan"] is not None]
    assert edited
    for key in edited:
        # four times the transformer layers: each stage's compute, hence the makespan, at least 3x
        old = before[key]["makespan"]
        assert new[key]["makespan"] > 3 * old, (key, old, new[key]["makespan"])
    assert len(_rows(store)) == 16  # the stale rows of the old content are gone from the store
    kept = [k for k in before if k[2] == "gpt3-1.3b"]
    assert kept and all(resumed[k]["seconds"] == before[k]["seconds"] for k in kept)  # not recomputed
