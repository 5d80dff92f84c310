"""Sweep config values of the wrong type are refused at load time, naming the file and the key
(they used to run: as 'not applicable' at every point, as a silent true, or as an internal error),
and a store in a folder that does not exist is refused instead of created."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ppverify.cli import main
from ppverify.core.errors import ParameterError, ScheduleFileError
from ppverify.sweep import parse_sweep
from ppverify.sweep.store import Store

PRESET = {"schedules": ["gpipe"], "p": [2, 4], "systems": ["ideal"], "models": ["gpt3-1.3b"], "levels": ["slot"]}


@pytest.mark.parametrize(
    ("entry", "key", "rule"),
    [
        # interleaved-1f1b's v is an int parameter: the quoted "2" failed at every point
        ({"family": "interleaved-1f1b", "v": "2"}, "schedules[0].v", "expected an integer, got '2'"),
        ({"family": "interleaved-1f1b", "v": 2.0}, "schedules[0].v", "expected an integer, got 2.0"),
        ({"family": "interleaved-1f1b", "v": True}, "schedules[0].v", "expected an integer, got True"),
        ({"family": "interleaved-1f1b", "order": 3}, "schedules[0].order", "expected a name, got 3"),
        # bool("no") is True: the entry was restricted to m = p without a word
        ({"family": "gpipe", "only_m_eq_p": "no"}, "schedules[0].only_m_eq_p", "expected true or false, got 'no'"),
        ({"family": "gpipe", "label": ["a"]}, "schedules[0].label", "expected a name, got ['a']"),
    ],
)
def test_schedule_entry_types(entry, key, rule):
    with pytest.raises(ScheduleFileError) as exc:
        parse_sweep({"schedules": [entry], "p": 2, "costs": {"F": 1}}, "s.yaml")
    assert str(exc.value) == f"s.yaml: {key}: {rule}"


def test_schedule_entry_types_accepted():
    spec = parse_sweep(
        {
            "schedules": [
                {"family": "interleaved-1f1b", "v": 2, "order": "megatron"},
                {"family": "chimera-asym", "down": None},  # down defaults to None (p/2): null is its default
                {"family": "hanayo", "waves": 1, "only_m_eq_p": True},
            ],
            "p": 2,
            "costs": {"F": 1},
            "levels": ["slot"],
        }
    )
    assert [e.only_m_eq_p for e in spec.entries] == [False, False, True]


@pytest.mark.parametrize(
    ("options", "rule"),
    [
        # a string mfu reached `0 < "abc"` inside every point: an internal error (exit 3)
        ({"mfu": "abc"}, "options.mfu: expected a number, got 'abc'"),
        ({"recompute": "no"}, "options.recompute: expected true or false, got 'no'"),
        ({"flash_attention": 1}, "options.flash_attention: expected true or false, got 1"),
        ({"tp": True}, "options.tp: expected an integer, got True"),
        ({"microbatch_size": 2.5}, "options.microbatch_size: expected an integer, got 2.5"),
        (
            {"layers_per_stage": ["a"]},
            "options.layers_per_stage: expected a list of layer counts or '3,3,2', got ['a']",
        ),
        # valid types, but no point of the grid accepts them: every row was 'not applicable'
        ({"mfu": 2}, "options.mfu: 2: must be a fraction in (0, 1]"),
        ({"seq_len": 0}, "options.seq_len: 0: must be an integer >= 1"),
    ],
)
def test_option_values_refused(options, rule):
    with pytest.raises(ScheduleFileError) as exc:
        parse_sweep({**PRESET, "options": options}, "s.yaml")
    assert str(exc.value) == f"s.yaml: {rule}"


def test_option_fitting_some_points_is_kept():
    # gpt3-1.3b has 24 layers: 12,12 fits p = 2 and not p = 4, whose rows say why in their note
    spec = parse_sweep({**PRESET, "options": {"layers_per_stage": [12, 12], "recompute": True, "mfu": None}})
    assert [c.p for c in spec.configs] == [2, 4]


def test_option_type_error_exits_2(tmp_path, capsys):
    cfg = tmp_path / "s.yaml"
    cfg.write_text(yaml.safe_dump({**PRESET, "options": {"mfu": "abc"}}))
    assert main(["sweep", str(cfg), "--dry-run"]) == 2
    assert "options.mfu: expected a number, got 'abc'" in capsys.readouterr().err


def test_store_in_missing_folder_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # short relative paths: a long value is elided in the message
    Path("s.yaml").write_text(yaml.safe_dump({"schedules": ["gpipe"], "p": 2, "costs": {"F": 1}, "levels": ["slot"]}))
    for extra in (["--dry-run"], ["--no-progress", "--workers", "1"]):
        assert main(["sweep", "s.yaml", "--store", "reslts/s.jsonl", *extra]) == 2
        assert "parameter --store=reslts/s.jsonl: folder reslts does not exist" in capsys.readouterr().err
    assert not Path("reslts").exists()  # never created
    with pytest.raises(ParameterError, match="folder reslts does not exist"):
        Store("reslts/s.jsonl")  # the findings map's --store goes through here too


def test_preset_files_read_relative_to_the_config(tmp_path, monkeypatch):
    # a system preset next to the config was looked up in the working directory: run from
    # elsewhere, every point was 'not applicable' (file not found); now it is found as a schedule
    # file is, and a missing one is refused naming the key
    from ppverify.systems.presets import shipped_presets

    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "mysys.yaml").write_text((shipped_presets() / "systems" / "dgx-h100.yaml").read_text())
    data = {**PRESET, "p": 2, "systems": ["mysys.yaml"]}
    monkeypatch.chdir(tmp_path)
    spec = parse_sweep(data, "sub/s.yaml")
    assert [c.system for c in spec.configs] == ["sub/mysys.yaml"]
    with pytest.raises(ScheduleFileError) as exc:
        parse_sweep({**data, "systems": ["nosys.yaml"]}, "sub/s.yaml")
    assert str(exc.value) == "sub/s.yaml: systems: preset file sub/nosys.yaml: file not found"
    Path("sub/s.yaml").write_text(yaml.safe_dump(data))
    assert main(["sweep", "sub/s.yaml", "--out", "s.csv", "--workers", "1", "--no-progress"]) == 0
    import pandas as pd

    assert pd.read_csv("s.csv")["status"].tolist() == ["ok"]


def test_memory_cap_without_the_optimum_refused():
    # the cap only shapes the optimum: without that level it was accepted and ignored
    # (compare --memory-cap refuses the same)
    with pytest.raises(ScheduleFileError) as exc:
        parse_sweep({"schedules": ["gpipe"], "p": 2, "costs": {"F": 1}, "levels": ["slot"], "memory_cap": 1}, "s.yaml")
    assert str(exc.value) == (
        "s.yaml: memory_cap: caps the CP-SAT optimum, a level this sweep leaves out: add optimum to levels, "
        "or leave it out"
    )
    spec = parse_sweep({"schedules": ["gpipe"], "p": 2, "costs": {"F": 1}, "levels": ["optimum"], "memory_cap": 1})
    assert spec.memory_cap is not None
